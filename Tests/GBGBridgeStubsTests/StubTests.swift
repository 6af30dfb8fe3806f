import Foundation
import GBGBridge
import ImageCodecs
import Testing
@testable import GBGBridgeStubs

@Suite("Stub cameras and CameraDetector")
@MainActor
struct StubTests {
    func host() -> (BridgeHost, InMemoryBridgeTransport) {
        let host = BridgeHost(hostVersion: "1.0")
        let transport = InMemoryBridgeTransport()
        host.attach(transport: transport)
        return (host, transport)
    }

    /// The response to `id`, once the slot's handler task has answered.
    func response(_ transport: InMemoryBridgeTransport, _ id: String) async throws -> BridgeMessage {
        for _ in 0..<500 where !transport.sentMessages.contains(where: { $0.correlationId == id }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        return try #require(transport.sentMessages.first { $0.correlationId == id })
    }

    @Test func documentCaptureEndToEnd() async throws {
        let (host, transport) = host()
        StubDocumentCamera().install(on: host)
        #expect(host.documentCapture.isSupported)
        transport.post(#"{"version":"1.0","correlationId":"d","type":"request","timestamp":1,"payload":{"action":"camera.document.capture"}}"#)
        let response = try await response(transport, "d")
        #expect(response.payload.status == .success)
        let data = try #require(response.payload.data)
        #expect(data["mimeType"] == "image/png")
        #expect(data["imageWidth"] == 1000 && data["imageHeight"] == 700)
        let png = try #require(Data(base64Encoded: data["imageBase64"]?.stringValue ?? ""))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        // IHDR carries the real size.
        let bytes = Array(png)
        let ihdrWidth = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        #expect(ihdrWidth == 1000)
        #expect(host.documentCapture.activeRequest == nil)
    }

    @Test func selfieCaptureEndToEnd() async throws {
        let (host, transport) = host()
        StubSelfieCamera().install(on: host)
        transport.post(#"{"version":"1.0","correlationId":"s","type":"request","timestamp":1,"payload":{"action":"camera.selfie.capture"}}"#)
        let data = try #require(try await response(transport, "s").payload.data)
        #expect(data["mimeType"] == "image/jpeg")
        let jpeg = Array(try #require(Data(base64Encoded: data["imageBase64"]?.stringValue ?? "")))
        let decoded = try ImageCodecs.decodeJPEG(jpeg)
        #expect(decoded.width == 720 && decoded.height == 960)
        #expect(data["imageWidth"] == 720 && data["imageHeight"] == 960)
        #expect(data["encryptedBlobBase64"]?.stringValue == StubSelfieCamera.encryptedBlobPlaceholder.base64EncodedString())
        #expect(data["unencryptedBlobBase64"] != nil)
        // Drawn, not blank: many distinct colours.
        #expect(Set(stride(from: 0, to: decoded.pixels.count, by: 997).map { decoded.pixels[$0] }).count > 20)
    }

    @Test func queryReportsTheStubsAsSupported() throws {
        let (host, _) = host()
        StubDocumentCamera().install(on: host)
        StubSelfieCamera().install(on: host)
        #expect(host.capabilities["camera.document"] == true)
        #expect(host.capabilities["camera.selfie"] == true)
        #expect(host.capabilityQueryData()["capabilities"]?["camera.selfie"] ==
                ["supported": true, "version": "1.0", "permissionState": "notApplicable"])
    }

    @Test("CameraDetector.check() -> CameraDetector.Result feeds the slots' permission state, as the reference shows")
    func cameraDetectorAsInTheReference() {
        let host = BridgeHost(hostVersion: "1.0.0")
        let camera: CameraDetector.Result = CameraDetector.check()
        host.documentCapture.permissionState = camera.permissionState
        host.selfieCapture.permissionState = camera.permissionState
        #expect(host.documentCapture.permissionState == camera.permissionState)
        #expect(camera.hardwareAvailable == !camera.devices.isEmpty)
        if !camera.hardwareAvailable { #expect(camera.permissionState == .notDetermined) }
    }

    @Test func cameraDetectorOnAnEmptyDirectoryAndOnThisMachine() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("gbg-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let none = CameraDetector.check(devDirectory: empty.path)
        #expect(!none.hardwareAvailable && none.permissionState == .notDetermined && none.devices.isEmpty)
        // A /dev/video0 that is not a device is not a camera.
        _ = FileManager.default.createFile(atPath: empty.appendingPathComponent("video0").path, contents: Data())
        #expect(!CameraDetector.check(devDirectory: empty.path).hardwareAvailable)
        let real = CameraDetector.check()
        #expect(real.hardwareAvailable == !real.devices.isEmpty)
    }
}

/// The demo passport's DG2 portrait (Fixtures/faces/face-drawn.jpg) is the stub drawing, made by
/// `StubSelfieCamera.portraitJPEG()`. `GBG_WRITE_PORTRAIT=path swift test --filter portrait` writes it again.
@Suite("Drawn portrait for test documents")
struct PortraitTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fixtures/faces/face-drawn.jpg").standardizedFileURL

    @Test("the portrait is a 3:4 face drawing, and the fixture is that drawing")
    func portrait() throws {
        let jpeg = try StubSelfieCamera.portraitJPEG()
        if let path = ProcessInfo.processInfo.environment["GBG_WRITE_PORTRAIT"] {
            try Data(jpeg).write(to: URL(fileURLWithPath: path))
        }
        let drawn = try ImageCodecs.decodeJPEG(jpeg)
        #expect(drawn.width == 360 && drawn.height == 480)
        let committed = try ImageCodecs.decodeJPEG(Array(try Data(contentsOf: Self.fixture)))
        #expect(committed.width == drawn.width && committed.height == drawn.height)
        // Same drawing: every pixel within JPEG noise of the fresh one.
        let differences = zip(committed.pixels, drawn.pixels).map { abs(Int($0) - Int($1)) }
        #expect(Double(differences.reduce(0, +)) / Double(differences.count) < 2)
        // A face: skin colour at the centre of the face, background at the top corner.
        let centre = (drawn.width / 2 + (drawn.height * 440 / 960 + 40) * drawn.width) * 3
        #expect(abs(Int(drawn.pixels[centre]) - 236) < 12 && abs(Int(drawn.pixels[centre + 1]) - 196) < 12)
    }
}
