import Foundation
import Testing
@testable import GBGBridge

@Suite("Capture slots")
@MainActor
struct CaptureCapabilityTests {
    @Test func slotIdentity() {
        let host = BridgeHost()
        #expect(host.documentCapture.id == "camera.document")
        #expect(host.documentCapture.actionId == "camera.document.capture")
        #expect(host.selfieCapture.id == "camera.selfie")
        #expect(host.selfieCapture.actionId == "camera.selfie.capture")
    }

    @Test func supportedIffHandlerAndEnabled() {
        let slot = BridgeHost().documentCapture
        #expect(!slot.isSupported)
        slot.handler = { _ in }
        #expect(slot.isSupported)
        slot.isEnabled = false
        #expect(!slot.isSupported)
        #expect(slot.buildCapabilityInfo() == BridgeCapabilityInfo(supported: false, version: "1.0",
                                                                   permissionState: .notDetermined))
    }

    @Test func noHandlerIsAnsweredUnsupported() throws {
        let h = Harness()
        h.post("camera.selfie.capture", id: "s")
        let response = try h.onlyResponse(to: "s")
        #expect(response.payload.status == .unsupported)
        #expect(response.payload.action == "camera.selfie.capture")
        h.host.selfieCapture.handler = { _ in }
        h.host.selfieCapture.isEnabled = false
        h.post("camera.selfie.capture", id: "s2")
        #expect(try h.onlyResponse(to: "s2").payload.status == .unsupported)
    }

    @Test func activeRequestIsSetWhileInFlightAndClearedAfter() throws {
        let h = Harness()
        var seenActive: String?
        h.host.documentCapture.handler = { request in seenActive = h.host.documentCapture.activeRequest?.correlationId }
        h.post("camera.document.capture", id: "capture-001")
        #expect(seenActive == "capture-001")
        #expect(h.host.documentCapture.activeRequest?.correlationId == "capture-001")
        #expect(h.sent.isEmpty)
        h.host.documentCapture.complete(.document(DocumentCaptureResult(imageBase64: "iVBORw0KGgo=", imageWidth: 1280,
                                                                        imageHeight: 800, mimeType: "image/png")))
        #expect(h.host.documentCapture.activeRequest == nil)
        let response = try parse(try h.onlyResponse(to: "capture-001").jsonString())
        #expect(without(["timestamp"], response) == without(["timestamp"], try fixtureJSON("document-capture-response.json")))
    }

    @Test func secondRequestWhileBusyIsAnsweredBusyRecoverable() throws {
        let h = Harness()
        h.host.documentCapture.handler = { _ in }
        h.post("camera.document.capture", id: "capture-001")
        h.post("camera.document.capture", id: "capture-002")
        let busy = try parse(try h.onlyResponse(to: "capture-002").jsonString())
        #expect(without(["timestamp"], busy) == without(["timestamp"], try fixtureJSON("busy-response.json")))
        #expect(h.host.documentCapture.activeRequest?.correlationId == "capture-001")
        // The other slot is independent.
        h.host.selfieCapture.handler = { _ in }
        h.post("camera.selfie.capture", id: "selfie-001")
        #expect(h.responses(to: "selfie-001").isEmpty)
    }

    @Test func selfieResultCarriesBlobs() throws {
        let h = Harness()
        h.host.selfieCapture.handler = { _ in
            h.host.selfieCapture.complete(.selfie(SelfieCaptureResult(
                imageData: Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]), width: 720, height: 960, mimeType: "image/jpeg",
                encryptedBlob: Data("encrypted".utf8), unencryptedBlob: Data("unencrypted".utf8))))
        }
        h.post("camera.selfie.capture", id: "selfie-001")
        let response = try parse(try h.onlyResponse(to: "selfie-001").jsonString())
        #expect(without(["timestamp"], response) == without(["timestamp"], try fixtureJSON("selfie-capture-response.json")))
        #expect(h.host.selfieCapture.activeRequest == nil)
    }

    @Test func cancelledAndFailedResults() throws {
        let h = Harness()
        h.host.documentCapture.handler = { _ in h.host.documentCapture.complete(.cancelled) }
        h.post("camera.document.capture", id: "capture-003")
        let cancelled = try parse(try h.onlyResponse(to: "capture-003").jsonString())
        #expect(without(["timestamp"], cancelled) == without(["timestamp"], try fixtureJSON("capture-cancelled-response.json")))

        h.host.selfieCapture.handler = { _ in
            h.host.selfieCapture.complete(.failed(code: "CAMERA_ERROR", message: "The camera could not be opened",
                                                  recoverable: true))
        }
        h.post("camera.selfie.capture", id: "capture-004")
        let failed = try parse(try h.onlyResponse(to: "capture-004").jsonString())
        #expect(without(["timestamp"], failed) == without(["timestamp"], try fixtureJSON("capture-failed-response.json")))
    }

    @Test func completeTwiceOrWhenIdleIsIgnored() throws {
        let h = Harness()
        h.host.documentCapture.complete(.cancelled)
        #expect(h.sent.isEmpty)
        h.host.documentCapture.handler = { _ in }
        h.post("camera.document.capture", id: "c")
        h.host.documentCapture.complete(.cancelled)
        h.host.documentCapture.complete(.failed(code: "X", message: "x", recoverable: false))
        #expect(h.responses(to: "c").count == 1)
        #expect(try h.onlyResponse(to: "c").payload.status == .cancelled)
    }

    @Test func awaitCompletionReturnsTheResult() async throws {
        let h = Harness()
        h.host.documentCapture.handler = { _ in }
        h.post("camera.document.capture", id: "c")
        let slot = h.host.documentCapture
        let waiter = Task { @MainActor in await slot.awaitCompletion() }
        await Task.yield()
        _ = await eventually { true }
        let result = CaptureResult.document(DocumentCaptureResult(imageBase64: "AA==", imageWidth: 1, imageHeight: 1,
                                                                  mimeType: "image/png"))
        slot.complete(result)
        #expect(await waiter.value == result)
        #expect(h.responses(to: "c").count == 1)
    }

    @Test func awaitCompletionReturnsCancelledWhenItsTaskIsCancelled() async {
        let slot = BridgeHost().documentCapture
        let waiter = Task { @MainActor in await slot.awaitCompletion() }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        #expect(await waiter.value == .cancelled)
    }

    @Test func captureResultEncodings() {
        let document = DocumentCaptureResult(imageData: Data([1, 2, 3]), width: 10, height: 20, mimeType: "image/png")
        #expect(CaptureResult.document(document).data ==
                ["imageBase64": "AQID", "imageWidth": 10, "imageHeight": 20, "mimeType": "image/png"])
        #expect(CaptureResult.document(document).status == .success)
        let selfie = SelfieCaptureResult(imageBase64: "x", imageWidth: 1, imageHeight: 2, mimeType: "image/jpeg")
        #expect(CaptureResult.selfie(selfie).data ==
                ["imageBase64": "x", "imageWidth": 1, "imageHeight": 2, "mimeType": "image/jpeg"])
        #expect(CaptureResult.cancelled.data == nil && CaptureResult.cancelled.error == nil)
        #expect(CaptureResult.failed(code: "E", message: "m", recoverable: false).error ==
                BridgeErrorPayload(code: "E", message: "m", recoverable: false))
    }
}
