import ArgumentParser
import BoundedFiles
import Cameras
import Foundation
import GBGBridgeHost
import GBGBridgeRead

/// `gbgbridge camera list|capture`.
struct CameraCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "camera",
        abstract: "The kiosk's cameras (V4L2): list them, or take one frame to a file.",
        subcommands: [CameraListCommand.self, CameraCaptureCommand.self]
    )
}

struct CameraListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the V4L2 capture devices: names, /dev/v4l/by-id links, formats and frame sizes, access.",
        discussion: """
            Name a camera by its /dev/v4l/by-id link in serve's --document-camera and \
            --selfie-camera: it keeps its role across reboots and replugging. A device this user \
            may not open is listed with the reason (add the user to the group 'video'). \
            --json prints [{"device", "name", "accessible", "error"?, "links", "formats": \
            [{"format", "description", "supported", "sizes"}], "documentMode"?, "selfieMode"?}].
            """
    )

    @Flag(name: .long, help: "Print the list as JSON.")
    var json = false

    func run() async throws {
        let cameras = await CameraTool.list()
        if json {
            printJSON(CameraTool.listJSON(cameras))
        } else {
            CameraTool.listLines(cameras).forEach { print($0) }
        }
    }
}

struct CameraCaptureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Take one frame from a camera and write it as PNG or JPEG (by the file's extension).",
        discussion: """
            The same capture the document slot makes: the camera's preferred format (MJPEG, then \
            YUYV and the other raw formats), the largest frame size within --width × --height, a \
            few warm-up frames so that exposure settles, one frame kept. The file is written \
            0600 and never through a link planted in its place. Exit status: 0 written; \
            1 the file could not be written; 2 bad arguments; 3 no such camera, or none of its \
            formats can be converted; 4 the camera is busy (another program streams); \
            5 permission denied (not in the group 'video'); 6 no frame in time, a corrupt \
            frame, or another driver failure.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The camera: /dev/videoN or a /dev/v4l/by-id/… link (default: the first that works).", valueName: "DEVICE"))
    var device: String?

    @Option(name: .long, help: ArgumentHelp("Where to write the frame: FILE.png or FILE.jpg.", valueName: "FILE"))
    var out: String

    @Option(name: .long, help: "The widest frame wanted (default 1920).")
    var width = 1920

    @Option(name: .long, help: "The tallest frame wanted (default 1080).")
    var height = 1080

    @Option(name: .long, help: ArgumentHelp("Use this pixel format instead of the preferred one, e.g. YUYV, MJPG, NV12.", valueName: "FOURCC"))
    var format: String?

    @Option(name: .long, help: "Frames taken and dropped before the one kept (0–120, default 4).")
    var warmup = 4

    @Option(name: .long, help: "Seconds to wait for any one frame (1–60, default 3).")
    var frameTimeout = 3

    func validate() throws {
        if let device, CameraSource(device).map({ if case .device = $0 { return true } else { return false } }) != true {
            throw ValidationError("--device must be a device path under /dev, e.g. /dev/video0 or /dev/v4l/by-id/…")
        }
        guard Resolution.allowedWidths.contains(width), Resolution.allowedHeights.contains(height) else {
            throw ValidationError("--width must be \(Resolution.allowedWidths.lowerBound)…\(Resolution.allowedWidths.upperBound) and --height \(Resolution.allowedHeights.lowerBound)…\(Resolution.allowedHeights.upperBound)")
        }
        if let format, PixelFormat(format) == nil { throw ValidationError("--format must be four characters, e.g. YUYV or MJPG") }
        guard (0...120).contains(warmup) else { throw ValidationError("--warmup must be 0…120") }
        guard (1...60).contains(frameTimeout) else { throw ValidationError("--frame-timeout must be 1…60") }
        let lowered = out.lowercased()
        guard lowered.hasSuffix(".png") || lowered.hasSuffix(".jpg") || lowered.hasSuffix(".jpeg") else {
            throw ValidationError("--out must end in .png, .jpg or .jpeg (the format is taken from it)")
        }
        if let problem = BoundedFile.outputProblem(out, option: "--out") { throw ValidationError(problem) }
    }

    func run() async throws {
        let request = CaptureRequest(target: Resolution(width: width, height: height), format: format.flatMap(PixelFormat.init),
                                     warmupFrames: warmup, frameTimeout: .seconds(frameTimeout),
                                     timeLimit: .seconds(frameTimeout * (warmup + 1) + 10))
        let failure: CameraTool.Failure
        do throws(CameraTool.Failure) {
            print(try await CameraTool.capture(device: device, out: out, request: request))
            return
        } catch {
            failure = error
        }
        printError("gbgbridge camera capture: \(failure.description)")
        throw ExitCode(failure.exitCode)
    }
}
