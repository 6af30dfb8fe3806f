import Foundation
import GBGBridge
import GBGBridgeStubs
import Testing
@testable import Cameras

/// The camera slots without a camera (CI machines have none; the vivid VM tests have one): the
/// drawing, a configured camera that is not there, settings that are refused, and device nodes
/// that are not cameras.
@Suite("Camera slots, sources and devices")
struct CameraServiceTests {
    @MainActor
    static func query(_ host: BridgeHost, _ id: String) throws -> [String: JSONValue] {
        guard case .object(let capabilities)? = host.capabilityQueryData()["capabilities"],
              case .object(let entry)? = capabilities[id] else { throw Missing() }
        return entry
    }

    struct Missing: Error {}

    @Test("stub: capability.query says so, and a capture answers the drawn page as PNG")
    @MainActor
    func stubSlot() async throws {
        let host = BridgeHost(hostVersion: "test")
        let service = CameraService(role: .document, settings: CameraSettings(source: .stub, request: .document))
        service.install(on: host)
        await service.refresh()
        let entry = try Self.query(host, "camera.document")
        #expect(entry["supported"] == .bool(true))
        #expect(entry["permissionState"] == .string("notApplicable"))
        guard case .object(let constraints)? = entry["constraints"] else { throw Missing() }
        #expect(constraints["state"] == .string("stub") && constraints["device"] == .string("stub"))
        let result = await service.capture()
        guard case .document(let document) = result else { Issue.record("not a document: \(result)"); return }
        #expect(document.mimeType == "image/png" && document.width == StubDocumentCamera.width)
        #expect(Array(document.imageData.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
        #expect(service.status.lastCapture?.outcome == "stub")
    }

    @Test("the capture's MRZ is its own page's, taken once, forgotten after its lifetime or a capture without one")
    @MainActor
    func capturedMRZ() async throws {
        let page = BridgeHost(hostVersion: "test"), other = BridgeHost(hostVersion: "test")
        let service = CameraService(role: .document, settings: CameraSettings(source: .stub, request: .document))
        service.install(on: page)
        service.install(on: other)
        // Nothing captured yet: a reason, not an MRZ.
        guard case .failure(let none) = service.takeMRZ(for: page) else { Issue.record("an MRZ before any capture"); return }
        #expect(none.description.contains("capture the data page first"))
        // The drawn page carries ICAO's TD3 specimen.
        guard case .document(let document) = await service.capture(for: page) else { Issue.record("not a document"); return }
        let mrz = try #require(document.mrz, "no data.mrz on the drawn page")
        #expect(mrz["accessKeyValid"] == .bool(true) && mrz["documentNumber"] == .string("L898902C3"))
        // Another page gets nothing of it; this page gets it once.
        guard case .failure = service.takeMRZ(for: other) else { Issue.record("another page took this page's MRZ"); return }
        guard case .success(let keys) = service.takeMRZ(for: page) else { Issue.record("the page's MRZ was not there"); return }
        #expect(keys.first == ["L898902C3", "740812", "120415"], "the read key first: \(keys)")
        #expect(keys.count <= 3)
        // The capture says what it is: read from a photo, unverified, and the keys for the chip.
        #expect(mrz["source"] == .string("photo"))
        let candidates = try #require(mrz["accessKeyCandidates"]?.arrayValue)
        #expect(candidates.first?.objectValue?["documentNumber"] == .string("L898902C3"))
        guard case .failure = service.takeMRZ(for: page) else { Issue.record("the MRZ was taken twice"); return }
        // Past its lifetime it is forgotten, with the reason.
        service.mrzLifetimeHere = .milliseconds(1)
        _ = await service.capture(for: page)
        try await Task.sleep(for: .milliseconds(20))
        guard case .failure(let old) = service.takeMRZ(for: page) else { Issue.record("an expired MRZ was handed out"); return }
        #expect(old.description.contains("older than"))
        // A page that goes away takes its MRZ with it.
        service.mrzLifetimeHere = CameraService.mrzLifetime
        _ = await service.capture(for: page)
        service.detach(from: page)
        guard case .failure = service.takeMRZ(for: page) else { Issue.record("a detached page's MRZ stayed"); return }
    }

    @Test("a configured camera that is not there: CAMERA_ERROR (recoverable), state unplugged, and the slot stays")
    @MainActor
    func missingCamera() async throws {
        let host = BridgeHost(hostVersion: "test")
        let path = "/dev/video-gbgbridge-test-\(UUID().uuidString.prefix(8))"
        let service = CameraService(role: .selfie, settings: CameraSettings(source: .device(path), request: .selfie))
        service.install(on: host)
        await service.refresh()
        let entry = try Self.query(host, "camera.selfie")
        #expect(entry["supported"] == .bool(true))
        #expect(entry["permissionState"] == .string("notDetermined"))
        guard case .object(let constraints)? = entry["constraints"] else { throw Missing() }
        #expect(constraints["state"] == .string("unplugged") && constraints["device"] == .string(.init(path)))
        let result = await service.capture()
        guard case .failed(let code, let message, let recoverable) = result else { Issue.record("not a failure: \(result)"); return }
        #expect(code == "CAMERA_ERROR" && recoverable && message.contains(path))
        #expect(service.status.lastCapture?.outcome == "CAMERA_ERROR")
        #expect(service.status.captures == 1)
    }

    @Test("a node that is no camera (/dev/null, a regular file, a FIFO) is refused without a hang")
    func notCameras() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fakedev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("not a camera".utf8).write(to: directory.appendingPathComponent("video0"))
        #expect(mkfifo(directory.appendingPathComponent("video1").path, 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("video2").path, withDestinationPath: "video2")
        #expect(CameraDevice.list(devDirectory: directory.path).isEmpty)
        #expect(CameraDevice.describe("/dev/null") == nil)
        do throws(CameraError) {
            _ = try await V4L2Capture.capture("/dev/null", .document)
            Issue.record("/dev/null gave a frame")
        } catch {
            #expect(error.kind == .unplugged && error.code == .cameraError)
        }
    }

    @Test("camera settings: auto, stub and /dev paths only; sizes within range", arguments: [
        ("auto", true), ("stub", true), ("/dev/video0", true), ("/dev/v4l/by-id/usb-Cam-video-index0", true),
        ("video0", false), ("/etc/passwd", false), ("/dev/../etc/passwd", false), ("", false), ("/dev/video0\n", false),
        ("AUTO", false), ("/dev/\u{202E}video", true),
    ])
    func sources(text: String, accepted: Bool) {
        #expect((CameraSource(text) != nil) == accepted, "\(text.debugDescription)")
    }

    @Test("resolutions", arguments: [
        ("1920x1080", true), ("1280X720", true), ("640×480", true), ("0x0", false), ("99999x1", false), ("1920", false),
        ("1920x1080x3", false), ("-1x5", false), ("１９２０x1080", false), ("1920 x 1080", false),
    ])
    func resolutions(text: String, accepted: Bool) {
        #expect((Resolution(text) != nil) == accepted, "\(text)")
    }

    @Test("the mode chosen: MJPEG first, the largest size within the target, else the smallest above it")
    func modeChoice() throws {
        func mode(_ code: String, _ w: Int, _ h: Int) throws -> CameraDevice.Mode {
            CameraDevice.Mode(format: try #require(PixelFormat(code)), width: w, height: h, formatName: code)
        }
        let modes = [try mode("YUYV", 640, 480), try mode("YUYV", 1920, 1080), try mode("MJPG", 1280, 720), try mode("MJPG", 1920, 1080),
                     try mode("MJPG", 3840, 2160)]
        let chosen = try #require(CameraDevice.choose(from: modes, target: Resolution(width: 1920, height: 1080)))
        #expect(chosen.format == .mjpeg && chosen.width == 1920)
        let small = try #require(CameraDevice.choose(from: modes, target: Resolution(width: 320, height: 240)))
        #expect(small.format == .mjpeg && small.width == 1280)
        #expect(CameraDevice.choose(from: [try mode("BA81", 640, 480)], target: Resolution(width: 640, height: 480)) == nil)
    }

    // An HDMI or TV input (vivid's, a capture card's) offers a continuous or stepwise range: the
    // capture asked for 16×16, its smallest, until a VM test looped a rendered page through one.
    @Test("a range of sizes: the target clamped into it and snapped to its steps, never its smallest by default")
    func rangedModes() throws {
        let yuyv = try #require(PixelFormat("YUYV"))
        let continuous = CameraDevice.Mode(format: yuyv, width: 16, height: 16, formatName: "YUYV",
                                           range: .init(maxWidth: 4096, maxHeight: 2304, stepWidth: 1, stepHeight: 1))
        let chosen = try #require(CameraDevice.choose(from: [continuous], target: Resolution(width: 1920, height: 1080)))
        #expect(chosen.width == 1920 && chosen.height == 1080 && chosen.range == nil)
        let small = try #require(CameraDevice.choose(from: [continuous], target: Resolution(width: 8, height: 8)))
        #expect(small.width == 16 && small.height == 16)
        let stepwise = CameraDevice.Mode(format: yuyv, width: 48, height: 32, formatName: "YUYV",
                                         range: .init(maxWidth: 1280, maxHeight: 720, stepWidth: 16, stepHeight: 8))
        let snapped = try #require(CameraDevice.choose(from: [stepwise], target: Resolution(width: 1000, height: 700)))
        #expect(snapped.width == 48 + 59 * 16 && snapped.height == 32 + 83 * 8)
        let capped = try #require(CameraDevice.choose(from: [stepwise], target: Resolution(width: 3840, height: 2160)))
        #expect(capped.width == 1280 && capped.height == 720)
        #expect(continuous.sizeText == "16x16-4096x2304" && chosen.sizeText == "1920x1080")
    }
}
