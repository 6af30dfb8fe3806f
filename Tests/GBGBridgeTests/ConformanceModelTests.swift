import Foundation
import Observation
import Synchronization
import Testing
import GBGBridge

// Conformance with the iOS API reference, sections "Capabilities", "Configuration" and "Message
// models": every initializer with its labels and defaults, every property, and the documented
// encodings.

@Suite("Reference: CaptureCapability")
@MainActor
struct CaptureCapabilityConformance {
    @Test("init(id:actionId:version:) with version defaulting to nil; documented defaults")
    func initializerAndDefaults() {
        let slot = CaptureCapability(id: "camera.document", actionId: "camera.document.capture")
        #expect(slot.id == "camera.document")
        #expect(slot.actionId == "camera.document.capture")
        #expect(slot.version == nil)
        #expect(slot.handler == nil)
        #expect(slot.isEnabled)
        #expect(!slot.isSupported)
        #expect(slot.activeRequest == nil)
        #expect(slot.permissionState == .notDetermined)
        #expect(CaptureCapability(id: "a", actionId: "a.b", version: "2.1").version == "2.1")
    }

    @Test("setting the handler declares support; isSupported == handler != nil && isEnabled")
    func handlerAsDeclaration() {
        let host = BridgeHost(hostVersion: "1.0.0")
        #expect(!host.documentCapture.isSupported)
        host.documentCapture.handler = { _ in await host.documentCapture.awaitCompletion() }
        #expect(host.documentCapture.isSupported)
        host.documentCapture.isEnabled = false
        #expect(!host.documentCapture.isSupported)
        host.documentCapture.isEnabled = true
        host.documentCapture.handler = nil
        #expect(!host.documentCapture.isSupported)
    }

    @Test("buildCapabilityInfo() reflects the slot: version 1.0 when supported, an override, permission state")
    func buildCapabilityInfo() {
        let slot = CaptureCapability(id: "camera.selfie", actionId: "camera.selfie.capture")
        #expect(slot.buildCapabilityInfo() == BridgeCapabilityInfo(supported: false, version: nil))
        slot.handler = { _ in .cancelled(reason: "x") }
        slot.permissionState = .denied
        #expect(slot.buildCapabilityInfo() == BridgeCapabilityInfo(supported: true, version: "1.0", permissionState: "denied"))
        slot.version = "2.0"
        #expect(slot.buildCapabilityInfo().version == "2.0")
        slot.isEnabled = false
        #expect(slot.buildCapabilityInfo().supported == false)
    }

    @Test("a handler that returns a result answers the page; activeRequest is set while it runs")
    func handlerReturnsResult() async throws {
        let h = Harness()
        let host = h.host
        let seenActive = Mutex<String?>(nil)
        host.documentCapture.handler = { request in
            let active = await host.documentCapture.activeRequest?.correlationId
            seenActive.withLock { $0 = active }
            return .document(DocumentCaptureResult(imageData: Data(base64Encoded: "iVBORw0KGgo=")!, width: 1280, height: 800))
        }
        h.post("camera.document.capture", id: "capture-001")
        #expect(host.documentCapture.activeRequest?.correlationId == "capture-001")
        let response = try parse(try await h.response(to: "capture-001").jsonString())
        #expect(without(["timestamp"], response) == without(["timestamp"], try fixtureJSON("document-capture-response.json")))
        #expect(seenActive.withLock { $0 } == "capture-001")
        #expect(host.documentCapture.activeRequest == nil)
    }

    @Test("awaitCompletion() suspends the handler until complete(_:) and the result is sent")
    func awaitAndComplete() async throws {
        let h = Harness()
        weak var weakHost = h.host
        h.host.documentCapture.handler = { [weak weakHost] _ in
            guard let host = weakHost else { return .cancelled(reason: "Host deallocated") }
            return await host.documentCapture.awaitCompletion()
        }
        h.post("camera.document.capture", id: "c1")
        await settle()
        #expect(h.responses(to: "c1").isEmpty)
        #expect(h.host.documentCapture.activeRequest?.correlationId == "c1")
        h.host.documentCapture.complete(.document(DocumentCaptureResult(imageData: Data([1, 2, 3]), width: 1920, height: 1080)))
        let response = try await h.response(to: "c1")
        #expect(response.payload.data == ["imageBase64": "AQID", "imageWidth": 1920, "imageHeight": 1080, "mimeType": "image/png"])
        #expect(h.host.documentCapture.activeRequest == nil)
    }

    @Test("complete(_:) before the handler waits is kept for it; a later dismissal does not override it")
    func completeBeforeWaiting() async throws {
        let h = Harness()
        let host = h.host
        host.selfieCapture.handler = { _ in
            try? await Task.sleep(for: .milliseconds(30))  // the view completes first
            return await host.selfieCapture.awaitCompletion()
        }
        h.post("camera.selfie.capture", id: "s1")
        let selfie = SelfieCaptureResult(previewImageData: Data([0xFF, 0xD8]), width: 640, height: 480,
                                         encryptedBlob: Data([1]), unencryptedBlob: Data([2]))
        host.selfieCapture.complete(.selfie(selfie))
        // An onDismiss that sees the request still active completes it again; the first result wins.
        if host.selfieCapture.activeRequest != nil { host.selfieCapture.complete(.cancelled(reason: "Dismissed")) }
        let response = try await h.response(to: "s1")
        #expect(response.payload.status == .success)
        #expect(response.payload.data?["mimeType"] == "image/jpeg")
    }

    @Test("complete(_:) with no request in flight is ignored")
    func completeWhenIdle() async {
        let h = Harness()
        h.host.documentCapture.complete(.cancelled(reason: "nothing to cancel"))
        await settle()
        #expect(h.sent.isEmpty)
    }

    @Test("a second request while one is active is answered BUSY, recoverable")
    func busy() async throws {
        let h = Harness()
        h.host.documentCapture.handler = { _ in await h.host.documentCapture.awaitCompletion() }
        h.post("camera.document.capture", id: "capture-001")
        h.post("camera.document.capture", id: "capture-002")
        let busy = try parse(try await h.response(to: "capture-002").jsonString())
        #expect(without(["timestamp"], busy) == without(["timestamp"], try fixtureJSON("busy-response.json")))
        #expect(h.host.documentCapture.activeRequest?.correlationId == "capture-001")
        // The other slot is independent.
        h.host.selfieCapture.handler = { _ in await h.host.selfieCapture.awaitCompletion() }
        h.post("camera.selfie.capture", id: "selfie-001")
        await settle()
        #expect(h.responses(to: "selfie-001").isEmpty)
        #expect(h.host.selfieCapture.activeRequest?.correlationId == "selfie-001")
        // Once the first completes the slot takes requests again.
        h.host.documentCapture.complete(.cancelled(reason: "User dismissed"))
        _ = try await h.response(to: "capture-001")
        h.post("camera.document.capture", id: "capture-003")
        await settle()
        #expect(h.responses(to: "capture-003").isEmpty)
        #expect(h.host.documentCapture.activeRequest?.correlationId == "capture-003")
    }

    @Test("a slot with no handler, or disabled, answers unsupported")
    func unsupported() async throws {
        let h = Harness()
        h.post("camera.selfie.capture", id: "s")
        let response = try await h.response(to: "s")
        #expect(response.payload.status == .unsupported)
        #expect(response.payload.action == "camera.selfie.capture")
        #expect(h.host.pendingRequests.isEmpty)
        let calls = Counter()
        h.host.selfieCapture.handler = { _ in calls.increment(); return .cancelled(reason: "x") }
        h.host.selfieCapture.isEnabled = false
        h.post("camera.selfie.capture", id: "s2")
        #expect(try await h.response(to: "s2").payload.status == .unsupported)
        #expect(calls.count == 0)
    }

    @Test("the result encodings: selfie, cancelled(reason:), failed")
    func resultEncodings() async throws {
        let h = Harness()
        h.host.selfieCapture.handler = { _ in
            .selfie(SelfieCaptureResult(previewImageData: Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]), width: 720, height: 960,
                                        encryptedBlob: Data("encrypted".utf8), unencryptedBlob: Data("unencrypted".utf8)))
        }
        h.post("camera.selfie.capture", id: "selfie-001")
        let selfie = try parse(try await h.response(to: "selfie-001").jsonString())
        #expect(without(["timestamp"], selfie) == without(["timestamp"], try fixtureJSON("selfie-capture-response.json")))

        h.host.documentCapture.handler = { _ in .cancelled(reason: "User dismissed camera") }
        h.post("camera.document.capture", id: "capture-003")
        let cancelled = try parse(try await h.response(to: "capture-003").jsonString())
        #expect(without(["timestamp"], cancelled) == without(["timestamp"], try fixtureJSON("capture-cancelled-response.json")))

        h.host.selfieCapture.handler = { _ in
            .failed(code: "CAMERA_ERROR", message: "The camera could not be opened", recoverable: true)
        }
        h.post("camera.selfie.capture", id: "capture-004")
        let failed = try parse(try await h.response(to: "capture-004").jsonString())
        #expect(without(["timestamp"], failed) == without(["timestamp"], try fixtureJSON("capture-failed-response.json")))
    }

    @Test("activeRequest is observable, so a view can present a camera when it changes")
    func activeRequestIsObservable() async throws {
        let h = Harness()
        h.host.documentCapture.handler = { _ in await h.host.documentCapture.awaitCompletion() }
        let changed = Mutex(false)
        withObservationTracking {
            _ = h.host.documentCapture.activeRequest
        } onChange: {
            changed.withLock { $0 = true }
        }
        h.post("camera.document.capture", id: "o")
        #expect(changed.withLock { $0 })
        h.host.documentCapture.complete(.cancelled(reason: "done"))
        _ = try await h.response(to: "o")
    }

    @Test("a cancelled handler task gets .cancelled from awaitCompletion()")
    func cancelledWaiter() async {
        let slot = CaptureCapability(id: "camera.document", actionId: "camera.document.capture")
        let waiter = Task { @MainActor in await slot.awaitCompletion() }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        guard case .cancelled = await waiter.value else {
            Issue.record("expected .cancelled")
            return
        }
    }
}

@Suite("Reference: results, permission state, camera detection types")
struct ResultConformance {
    @Test("DocumentCaptureResult(imageData:width:height:mimeType: = image/png)")
    func documentResult() {
        let result = DocumentCaptureResult(imageData: Data([1, 2, 3]), width: 10, height: 20)
        #expect(result.mimeType == "image/png")
        #expect(result.imageData == Data([1, 2, 3]) && result.width == 10 && result.height == 20)
        #expect(CaptureResult.document(result).status == .success)
        #expect(CaptureResult.document(result).data ==
                ["imageBase64": "AQID", "imageWidth": 10, "imageHeight": 20, "mimeType": "image/png"])
        #expect(DocumentCaptureResult(imageData: Data(), width: 1, height: 1, mimeType: "image/jpeg").mimeType == "image/jpeg")
    }

    @Test("SelfieCaptureResult(previewImageData:width:height:mimeType: = image/jpeg, encryptedBlob:unencryptedBlob:)")
    func selfieResult() {
        let result = SelfieCaptureResult(previewImageData: Data([9]), width: 640, height: 480,
                                         encryptedBlob: Data([1]), unencryptedBlob: Data([2]))
        #expect(result.mimeType == "image/jpeg")
        #expect(CaptureResult.selfie(result).data == [
            "imageBase64": "CQ==", "imageWidth": 640, "imageHeight": 480, "mimeType": "image/jpeg",
            "encryptedBlobBase64": "AQ==", "unencryptedBlobBase64": "Ag==",
        ])
    }

    @Test("CaptureResult: cancelled(reason:) sends cancelled, failed(code:message:recoverable:) sends an error")
    func captureResultCases() {
        let cancelled = CaptureResult.cancelled(reason: "User dismissed")
        #expect(cancelled.status == .cancelled)
        #expect(cancelled.error == nil)
        let failed = CaptureResult.failed(code: "CAMERA_DENIED", message: "Camera permission was denied", recoverable: true)
        #expect(failed.status == .error)
        #expect(failed.data == nil)
        #expect(failed.error == BridgeErrorPayload(code: "CAMERA_DENIED", message: "Camera permission was denied", recoverable: true))
    }

    @Test("PermissionState raw values")
    func permissionState() throws {
        #expect(PermissionState.granted.rawValue == "granted")
        #expect(PermissionState.denied.rawValue == "denied")
        #expect(PermissionState.notDetermined.rawValue == "notDetermined")
        #expect(PermissionState.restricted.rawValue == "restricted")
        #expect(PermissionState.notApplicable.rawValue == "notApplicable")
        #expect(try JSONDecoder().decode(PermissionState.self, from: Data(#""denied""#.utf8)) == .denied)
    }
}

@Suite("Reference: configuration types")
struct ConfigurationConformance {
    @Test("BridgeConfiguration(hostVersion:capabilities:bootstrapScript: = nil)")
    func configuration() {
        let configuration = BridgeConfiguration(hostVersion: "1.0.0", capabilities: [:])
        #expect(configuration.hostVersion == "1.0.0")
        #expect(configuration.capabilities.isEmpty)
        #expect(configuration.bootstrapScript == nil)
        #expect(configuration.effectiveBootstrapScript.contains("window.GBGBridge = window.GBGBridge || {};"))
        #expect(configuration.effectiveBootstrapScript.contains("window.GBGBridge.receive = window.GBGBridge.receive || function(){};"))
        let custom = BridgeConfiguration(hostVersion: "2", capabilities: ["x": BridgeCapabilityInfo(supported: true)],
                                         bootstrapScript: "window.extra = true;")
        #expect(custom.effectiveBootstrapScript == "window.extra = true;")
    }

    @Test("BridgeCapabilityInfo(supported:version:constraints:permissionState:) with nil defaults; Codable")
    func capabilityInfo() throws {
        let bare = BridgeCapabilityInfo(supported: true)
        #expect(bare.version == nil && bare.constraints == nil && bare.permissionState == nil)
        let full = BridgeCapabilityInfo(supported: true, version: "1.0",
                                        constraints: ["maxResolution": .number(4096), "formats": .array([.string("jpeg"), .string("png")])],
                                        permissionState: "granted")
        let decoded = try JSONDecoder().decode(BridgeCapabilityInfo.self, from: try JSONEncoder().encode(full))
        #expect(decoded == full)
        #expect(full.queryEntry == ["supported": true, "version": "1.0", "permissionState": "granted",
                                    "constraints": ["maxResolution": 4096, "formats": ["jpeg", "png"]]])
    }
}

@Suite("Reference: message models")
struct MessageModelConformance {
    @Test("BridgeMessage(version:correlationId:type:timestamp:payload:) encodes the documented envelope")
    func envelope() throws {
        let message = BridgeMessage(version: "1.0", correlationId: "abc", type: .response, timestamp: 1_700_000_000_123,
                                    payload: BridgePayload(action: "camera.document.capture", data: ["k": .number(1)],
                                                           status: .error,
                                                           error: BridgeErrorPayload(code: "BUSY", message: "m", recoverable: true)))
        #expect(try parse(try message.jsonString()) == [
            "version": "1.0", "correlationId": "abc", "type": "response", "timestamp": 1_700_000_000_123,
            "payload": ["action": "camera.document.capture", "data": ["k": 1], "status": "error",
                        "error": ["code": "BUSY", "message": "m", "recoverable": true]],
        ])
        let roundTrip = try JSONDecoder().decode(BridgeMessage.self, from: try JSONEncoder().encode(message))
        #expect(roundTrip == message)
    }

    @Test("id is {correlationId}-{timestamp}-{type}")
    func identifier() {
        let timestamp: TimeInterval = 1_700_000_000_000
        let request = BridgeMessage(version: "1.0", correlationId: "req-1", type: .request, timestamp: timestamp,
                                    payload: BridgePayload(action: "a", data: nil, status: nil, error: nil))
        var response = request
        response.type = .response
        #expect(request.id == "req-1-\(timestamp)-request")
        #expect(response.id == "req-1-\(timestamp)-response")
        #expect(request.id != response.id)
    }

    @Test("timestamp is a TimeInterval of milliseconds, integral or not")
    func timestamp() throws {
        let fractional = try BridgeMessage.decode(json: #"{"version":"1.0","correlationId":"c","type":"event","timestamp":1700000000000.5,"payload":{"action":"a"}}"#)
        #expect(fractional.timestamp == 1_700_000_000_000.5)
        let now = BridgeMessage.now()
        #expect(now > 1_600_000_000_000 && now == now.rounded())
    }

    @Test("BridgePayload(action:data:status:error:) omits absent fields; data is an object")
    func payload() throws {
        let payload = BridgePayload(action: "capability.query", data: nil, status: nil, error: nil)
        #expect(try parse(String(decoding: try JSONEncoder().encode(payload), as: UTF8.self)) == ["action": "capability.query"])
        let explicitNull = try BridgeMessage.decode(json: #"{"version":"1.0","correlationId":"c","type":"event","timestamp":5,"payload":{"action":"a","data":null}}"#)
        #expect(explicitNull.payload.data == nil)
        let withData = try BridgeMessage.decode(json: requestJSON("a", id: "c", data: #"{"side":"front"}"#))
        #expect(withData.payload.data?["side"] == .string("front"))
    }

    @Test("BridgeErrorPayload(code:message:recoverable:)")
    func errorPayload() throws {
        let error = BridgeErrorPayload(code: "NFC_UNAVAILABLE", message: "No reader", recoverable: false)
        #expect(try parse(String(decoding: try JSONEncoder().encode(error), as: UTF8.self)) ==
                ["code": "NFC_UNAVAILABLE", "message": "No reader", "recoverable": false])
    }

    @Test("BridgeMessageType and BridgeResponseStatus raw values")
    func enums() throws {
        #expect(BridgeMessageType.allCases.map(\.rawValue) == ["request", "response", "event"])
        #expect(BridgeResponseStatus.allCases.map(\.rawValue) == ["success", "error", "cancelled", "unsupported", "acknowledged"])
        for type in BridgeMessageType.allCases {
            for status in BridgeResponseStatus.allCases {
                let text = #"{"version":"1.0","correlationId":"c","type":"\#(type.rawValue)","timestamp":5,"payload":{"action":"a","status":"\#(status.rawValue)"}}"#
                let message = try BridgeMessage.decode(json: text)
                #expect(message.type == type && message.payload.status == status)
            }
        }
    }

    @Test("undecodable messages name what is wrong",
          arguments: [
            ("not json", "not valid JSON"),
            (#"{"correlationId":"c","type":"request","timestamp":1,"payload":{"action":"a"}}"#, "missing field 'version'"),
            (#"{"version":"1.0","type":"request","timestamp":1,"payload":{"action":"a"}}"#, "missing field 'correlationId'"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":1,"payload":{}}"#, "missing field 'payload.action'"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":1}"#, "missing field 'payload'"),
            (#"{"version":"1.0","correlationId":"c","type":"shout","timestamp":1,"payload":{"action":"a"}}"#, "'type': expected request, response or event"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":"soon","payload":{"action":"a"}}"#, "'timestamp': expected a number"),
            (#"{"version":"1.0","correlationId":"c","type":"response","timestamp":1,"payload":{"action":"a","status":"maybe"}}"#, "'payload.status'"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":1,"payload":{"action":"a","data":"x"}}"#, "'payload.data': expected an object"),
          ])
    func decodingErrors(json: String, expectedReason: String) {
        #expect {
            _ = try BridgeMessage.decode(json: json)
        } throws: { error in
            guard let error = error as? BridgeDecodingError else { return false }
            return error.reason.contains(expectedReason) && error.description.hasPrefix("Failed to decode message: ")
        }
    }
}

@Suite("Reference: JSONValue")
struct JSONValueConformance {
    @Test("decoding order null → bool → number → string → object → array")
    func decodeOrder() throws {
        let value = try parse(#"{"n":null,"b":true,"f":false,"i":1,"d":2.5,"s":"1","o":{"k":"v"},"a":[1,"x",null]}"#)
        #expect(value == .object([
            "n": .null, "b": .bool(true), "f": .bool(false), "i": .number(1), "d": .number(2.5), "s": .string("1"),
            "o": .object(["k": .string("v")]), "a": .array([.number(1), .string("x"), .null]),
        ]))
    }

    @Test("anyValue converts to Foundation values")
    func anyValue() throws {
        let value: JSONValue = .object([
            "name": .string("John Doe"), "age": .number(30), "verified": .bool(true),
            "documents": .array([.object(["type": .string("passport")])]), "metadata": .null,
        ])
        let any = try #require(value.anyValue as? [String: Any])
        #expect(any["name"] as? String == "John Doe")
        #expect(any["age"] as? Double == 30)
        #expect(any["verified"] as? Bool == true)
        #expect(any["metadata"] is NSNull)
        let documents = try #require(any["documents"] as? [Any])
        #expect((documents.first as? [String: Any])?["type"] as? String == "passport")
        #expect(JSONSerialization.isValidJSONObject(any))
    }

    @Test("encodes back to standard JSON")
    func encodes() throws {
        let data: [String: JSONValue] = ["name": .string("x"), "list": .array([.number(1), .bool(false), .null])]
        let text = String(decoding: try JSONEncoder().encode(data), as: UTF8.self)
        #expect(try parse(text) == .object(data))
    }
}
