import Foundation
import Synchronization
import Testing
@testable import GBGBridge

@Suite("BridgeHost routing")
@MainActor
struct BridgeHostRoutingTests {
    @Test func slotTakesPrecedenceOverCustomCapabilityAndHandler() throws {
        let h = Harness()
        var customCalls = 0
        h.host.registerCustomCapability("camera.document.capture") { _, responder in
            customCalls += 1
            responder.succeed()
        }
        let registered = EchoHandler(action: "camera.document.capture")
        h.host.register(handler: registered)
        var slotRequests: [BridgeMessage] = []
        h.host.documentCapture.handler = { slotRequests.append($0) }
        h.post("camera.document.capture", id: "d1")
        #expect(slotRequests.map(\.correlationId) == ["d1"])
        #expect(customCalls == 0)
        #expect(registered.handled.isEmpty)
    }

    @Test func customCapabilityTakesPrecedenceOverRegisteredHandler() throws {
        let h = Harness()
        let registered = EchoHandler(action: "nfc.read")
        h.host.register(handler: registered)
        h.host.registerCustomCapability("nfc.read", version: "2.0") { request, responder in
            responder.succeed(["handledBy": "custom", "echo": request.payload.data ?? .null])
        }
        h.post("nfc.read", id: "n1", data: #"{"can":"123456"}"#)
        let response = try h.onlyResponse(to: "n1")
        #expect(response.payload.status == .success)
        #expect(response.payload.action == "nfc.read")
        #expect(response.payload.data == ["handledBy": "custom", "echo": ["can": "123456"]])
        #expect(registered.handled.isEmpty)
    }

    @Test func registeredHandlerAnswersAndUnregisterRemovesIt() throws {
        let h = Harness()
        h.host.register(handler: EchoHandler(action: "device.info"))
        h.post("device.info", id: "i1")
        #expect(try h.onlyResponse(to: "i1").payload.data?["handledBy"] == "registered")
        h.host.unregister(action: "device.info")
        h.post("device.info", id: "i2")
        #expect(h.responses(to: "i2").isEmpty)
        #expect(h.host.pendingRequests["i2"] != nil)
    }

    @Test func unhandledRequestsWaitInPendingAndReachTheDelegate() throws {
        let h = Harness()
        let delegate = RecordingDelegate()
        h.host.delegate = delegate
        h.post("kiosk.print", id: "p1", data: #"{"copies":2}"#)
        #expect(h.host.pendingRequests.keys.sorted() == ["p1"])
        #expect(delegate.unhandled.map(\.correlationId) == ["p1"])
        #expect(h.sent.isEmpty)

        h.host.respond(to: "p1", status: .success, data: ["printed": true])
        let response = try h.onlyResponse(to: "p1")
        #expect(response.payload.action == "kiosk.print")
        #expect(response.payload.data == ["printed": true])
        #expect(h.host.pendingRequests.isEmpty)
    }

    @Test func respondingToAnUnknownIdSetsLastErrorAndSendsNothing() {
        let h = Harness()
        h.host.respond(to: "nope", status: .success)
        #expect(h.sent.isEmpty)
        #expect(h.host.lastError?.contains("nope") == true)
        h.host.clearError()
        #expect(h.host.lastError == nil)
    }

    @Test func directRespondSendsWithTheGivenActionAndClearsPending() throws {
        let h = Harness()
        h.post("kiosk.print", id: "p2")
        h.host.respond(to: "p2", action: "kiosk.print", status: .error,
                       error: BridgeErrorPayload(code: "PAPER_OUT", message: "No paper", recoverable: true))
        #expect(try h.onlyResponse(to: "p2").payload.error?.code == "PAPER_OUT")
        #expect(h.host.pendingRequests.isEmpty)
        h.host.respond(to: "free-form", action: "custom.thing", status: .acknowledged)
        #expect(try h.onlyResponse(to: "free-form").payload.status == .acknowledged)
    }

    @Test func responsesAndEventsFromThePageAreRecordedButNeverRouted() throws {
        let h = Harness()
        let delegate = RecordingDelegate()
        h.host.delegate = delegate
        let registered = EchoHandler(action: "journey.step")
        h.host.register(handler: registered)
        h.transport.post(#"{"version":"1.0","correlationId":"e1","type":"event","timestamp":1,"payload":{"action":"journey.step","data":{"step":3}}}"#)
        h.transport.post(#"{"version":"1.0","correlationId":"r1","type":"response","timestamp":2,"payload":{"action":"journey.step","status":"success"}}"#)
        #expect(registered.handled.isEmpty)
        #expect(h.sent.isEmpty)
        #expect(h.host.pendingRequests.isEmpty)
        #expect(h.host.receivedMessages.map(\.correlationId) == ["e1", "r1"])
        #expect(delegate.received.map(\.correlationId) == ["e1", "r1"])
    }

    @Test func sendEventUsesAFreshIdAndAMillisecondTimestamp() throws {
        let h = Harness()
        let before = BridgeMessage.now()
        h.host.send(event: "capabilities.changed", data: ["reason": "reader"])
        h.host.send(event: "capabilities.changed")
        let events = h.sent
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.type == .event && $0.payload.action == "capabilities.changed" })
        #expect(events[0].correlationId != events[1].correlationId)
        #expect(events[0].timestamp >= before && events[0].timestamp <= BridgeMessage.now())
        #expect(events[0].timestamp > 1_000_000_000_000)  // milliseconds, not seconds
        #expect(events[0].payload.data == ["reason": "reader"])
        #expect(events[1].payload.data == nil)
    }

    @Test func delegateSeesSentMessages() {
        let h = Harness()
        let delegate = RecordingDelegate()
        h.host.delegate = delegate
        h.host.send(event: "x")
        #expect(delegate.sent.map(\.payload.action) == ["x"])
    }
}

@Suite("BridgeHost transport and errors")
@MainActor
struct BridgeHostTransportTests {
    @Test func sendingWithoutTransportSetsWebViewNotAttached() {
        let host = BridgeHost()
        let delegate = RecordingDelegate()
        host.delegate = delegate
        host.send(event: "hello")
        #expect(host.lastError?.contains("WebView not attached") == true)
        #expect(delegate.errors.count == 1)
    }

    @Test func transportIsHeldWeakly() {
        let host = BridgeHost()
        var transport: InMemoryBridgeTransport? = InMemoryBridgeTransport()
        host.attach(transport: transport!)
        #expect(host.isAttached)
        weak let weakTransport = transport
        transport = nil
        #expect(weakTransport == nil)
        #expect(!host.isAttached)
        host.send(event: "after")
        #expect(host.lastError?.contains("WebView not attached") == true)
    }

    @Test("undecodable input sets lastError and changes nothing else",
          arguments: [
            "", "{", "[]", "42", "null", #"{"version":"1.0"}"#,
            #"{"version":"1.0","correlationId":"c","type":"request","timestamp":1,"payload":{}}"#,
            #"{"version":"1.0","correlationId":"c","type":"command","timestamp":1,"payload":{"action":"capability.query"}}"#,
            #"{"version":1,"correlationId":"c","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#,
          ])
    func undecodableInput(json: String) {
        let h = Harness()
        let delegate = RecordingDelegate()
        h.host.delegate = delegate
        h.transport.post(json)
        #expect(h.host.lastError?.hasPrefix("Failed to decode message: ") == true)
        #expect(h.host.receivedMessages.isEmpty)
        #expect(h.host.pendingRequests.isEmpty)
        #expect(h.transport.sent.isEmpty)
        #expect(delegate.received.isEmpty && delegate.unhandled.isEmpty && delegate.sent.isEmpty)
    }

    @Test func receivedMessagesAreBoundedByDefaultAt1000() {
        let h = Harness()
        #expect(h.host.receivedMessagesLimit == 1_000)
        for i in 0..<1_050 {
            h.transport.post(#"{"version":"1.0","correlationId":"e\#(i)","type":"event","timestamp":1,"payload":{"action":"tick"}}"#)
        }
        #expect(h.host.receivedMessages.count == 1_000)
        #expect(h.host.receivedMessages.first?.correlationId == "e50")
        #expect(h.host.receivedMessages.last?.correlationId == "e1049")
    }

    @Test func receivedMessagesLimitIsConfigurable() {
        let h = Harness(BridgeHost(configuration: BridgeConfiguration(receivedMessagesLimit: 3)))
        for i in 0..<5 {
            h.transport.post(#"{"version":"1.0","correlationId":"e\#(i)","type":"event","timestamp":1,"payload":{"action":"tick"}}"#)
        }
        #expect(h.host.receivedMessages.map(\.correlationId) == ["e2", "e3", "e4"])
        h.host.receivedMessagesLimit = 1
        #expect(h.host.receivedMessages.map(\.correlationId) == ["e4"])
    }

    @Test func logRedactorMasksWhatIsLoggedButNotWhatIsRouted() throws {
        let h = Harness()
        h.host.logRedactor = { message in
            var copy = message
            if case .object(var data) = copy.payload.data, data["accessKey"] != nil {
                data["accessKey"] = "***"
                copy.payload.data = .object(data)
            }
            return copy
        }
        var seen: JSONValue?
        h.host.registerCustomCapability("nfc.read") { request, responder in
            seen = request.payload.data?["accessKey"]
            responder.succeed()
        }
        h.post("nfc.read", id: "n", data: #"{"accessKey":{"can":"123456"}}"#)
        #expect(seen == ["can": "123456"])
        #expect(h.host.receivedMessages.last?.payload.data == ["accessKey": "***"])
    }

    @Test func streamsFollowTrafficAndErrors() async throws {
        let h = Harness()
        let messages = h.host.messages
        let errors = h.host.errors
        h.post("capability.query", id: "q")
        h.transport.post("garbage")
        var iterator = messages.makeAsyncIterator()
        let first = await iterator.next()
        let second = await iterator.next()
        #expect(first?.direction == .received && first?.message.correlationId == "q")
        #expect(second?.direction == .sent && second?.message.payload.action == "capability.query")
        var errorIterator = errors.makeAsyncIterator()
        #expect(await errorIterator.next()?.hasPrefix("Failed to decode message") == true)
    }

    @Test func detachCancelsWorkInFlight() throws {
        let h = Harness()
        let cancelled = Mutex(false)
        h.host.registerCustomCapability("nfc.read") { _, responder in
            responder.onCancel { cancelled.withLock { $0 = true } }
        }
        h.host.documentCapture.handler = { _ in }
        h.post("nfc.read", id: "n")
        h.post("camera.document.capture", id: "d")
        h.post("kiosk.unknown", id: "u")
        h.host.cancelInFlightRequests(reason: "navigated away")
        #expect(cancelled.withLock { $0 })
        #expect(try h.onlyResponse(to: "n").payload.status == .cancelled)
        #expect(try h.onlyResponse(to: "n").payload.error?.code == "CANCELLED")
        #expect(try h.onlyResponse(to: "d").payload.error?.code == "CANCELLED")
        #expect(try h.onlyResponse(to: "u").payload.status == .cancelled)
        #expect(h.host.documentCapture.activeRequest == nil)
        #expect(h.host.pendingRequests.isEmpty)
    }
}
