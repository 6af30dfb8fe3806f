import Cameras
import Foundation
import GBGBridge
import ImageCodecs
import MRTD

/// `gbgbridge camera list` and `gbgbridge camera capture`: what the operator sees of the kiosk's
/// cameras, and one frame to a file, with the same capture the slots use.
package enum CameraTool {
    /// Every V4L2 capture device, as JSON (`camera list --json`).
    package static func listJSON(_ cameras: [CameraDevice]) -> [[String: Any]] {
        cameras.map { camera in
            var entry: [String: Any] = ["device": camera.path, "name": camera.name, "accessible": camera.accessible, "links": camera.links]
            if !camera.accessible { entry["error"] = CameraError(errno: camera.openError, device: camera.path, stage: "").message }
            entry["formats"] = formats(camera).map { format -> [String: Any] in
                ["format": format.format.description, "description": format.name, "supported": format.format.isSupported,
                 "sizes": format.sizes]
            }
            if let chosen = camera.choose(target: CaptureRequest.document.target) {
                entry["documentMode"] = ["format": chosen.format.description, "resolution": "\(chosen.width)x\(chosen.height)"]
            }
            if let chosen = camera.choose(target: CaptureRequest.selfie.target) {
                entry["selfieMode"] = ["format": chosen.format.description, "resolution": "\(chosen.width)x\(chosen.height)"]
            }
            return entry
        }
    }

    /// The same as lines for a terminal.
    package static func listLines(_ cameras: [CameraDevice]) -> [String] {
        guard !cameras.isEmpty else { return ["No V4L2 capture device (document and selfie capture draw their placeholders)."] }
        var lines: [String] = []
        for camera in cameras {
            lines.append("\(camera.path)  \(camera.name)\(camera.accessible ? "" : "  — \(CameraError(errno: camera.openError, device: camera.path, stage: "").message)")")
            for link in camera.links { lines.append("  \(link)") }
            for format in formats(camera) {
                let sizes = format.sizes.joined(separator: " ")
                lines.append("  \(format.format) (\(format.name))\(format.format.isSupported ? "" : " — not converted by this host"): \(sizes)")
            }
            if let chosen = camera.choose(target: CaptureRequest.document.target) {
                lines.append("  document capture: \(chosen.format) \(chosen.width)x\(chosen.height)")
            }
        }
        return lines
    }

    private static func formats(_ camera: CameraDevice) -> [(format: PixelFormat, name: String, sizes: [String])] {
        var order: [PixelFormat] = []
        var grouped: [PixelFormat: (String, [String])] = [:]
        for mode in camera.modes {
            if grouped[mode.format] == nil { order.append(mode.format) }
            grouped[mode.format, default: (mode.formatName, [])].1.append(mode.sizeText)
        }
        return order.map { ($0, grouped[$0]?.0 ?? "", grouped[$0]?.1 ?? []) }
    }

    /// Why `camera capture` gave no file, and its exit status.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package let exitCode: Int32
    }

    /// The exit statuses of `camera capture` (its --help lists them).
    package static func exitCode(for error: CameraError) -> Int32 {
        switch error.kind {
        case .unplugged, .unsupported: return 3
        case .busy: return 4
        case .denied: return 5
        case .timeout, .corruptFrame, .failed: return 6
        }
    }

    /// One frame from `device` (or the first camera that works) to `out`: PNG or JPEG by its
    /// extension, written 0600 without following a link planted there. Returns a line saying what.
    package static func capture(device: String?, out: String, request: CaptureRequest) async throws(Failure) -> String {
        let lowered = out.lowercased()
        let png = lowered.hasSuffix(".png")
        guard png || lowered.hasSuffix(".jpg") || lowered.hasSuffix(".jpeg") else {
            throw Failure(description: "--out must end in .png, .jpg or .jpeg (the format is taken from it)", exitCode: 2)
        }
        let path: String
        if let device {
            path = device
        } else {
            let cameras = await onThread { CameraDevice.list() }
            guard let usable = cameras.first(where: { $0.accessible && $0.choose(target: request.target) != nil }) ?? cameras.first else {
                throw Failure(description: "no V4L2 capture device on this machine (camera list shows what there is)", exitCode: 3)
            }
            path = usable.path
        }
        let frame: CapturedFrame
        do {
            frame = try await V4L2Capture.capture(path, request)
        } catch {
            throw Failure(description: error.description, exitCode: exitCode(for: error))
        }
        let image = frame.image
        let bytes: [UInt8]
        do {
            bytes = try await DecodeQueue.shared.run { png ? try ImageCodecs.encodePNG(image) : try ImageCodecs.encodeJPEG(image, quality: 92) }
        } catch {
            throw Failure(description: "the frame could not be encoded: \(error)", exitCode: 6)
        }
        do {
            try PrivateFile.write(bytes, to: out)
        } catch {
            throw Failure(description: error.description, exitCode: 1)
        }
        let milliseconds = frame.duration.components.seconds * 1000 + frame.duration.components.attoseconds / 1_000_000_000_000_000
        let broken = frame.brokenFrames == 0 ? "" : ", \(frame.brokenFrames) broken frame\(frame.brokenFrames == 1 ? "" : "s") skipped"
        return "\(out): \(image.width)x\(image.height) from \(frame.device) (\(frame.format), \(frame.framesTaken) frames\(broken), \(milliseconds) ms)"
    }

    /// The capture devices, looked at on a Dispatch thread.
    package static func list() async -> [CameraDevice] { await onThread { CameraDevice.list() } }

    /// The camera to read a document or a code with: the one named, else the first accessible
    /// one that offers a frame for a document; nil when there is none.
    package static func documentCamera(_ named: String?) async -> String? {
        if let named { return named }
        return await list().first(where: { $0.accessible && $0.choose(target: CaptureRequest.document.target) != nil })?.path
    }

    /// The frames of one document capture from `path`, oldest first (4 warm-up frames on the
    /// first capture of a search, none after).
    package static func documentFrames(_ path: String, first: Bool) async throws -> [ImageCodecs.RGBImage] {
        var request = CaptureRequest.document
        request.warmupFrames = first ? 4 : 0
        request.keep = 2
        let captured = try await V4L2Capture.capture(path, request)
        return captured.earlierFrames + [captured.image]
    }

    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: body()) }
        }
    }
}
