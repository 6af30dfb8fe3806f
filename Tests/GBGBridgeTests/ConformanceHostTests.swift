import Foundation
import Synchronization
import Testing
import GBGBridge

// Conformance with the iOS API reference (`../shared/seeds/003_…`), section "Primary entry
// points", "Protocols" and "Built-in handlers": one test per documented entry, using the API the
// way the reference shows it and asserting what it documents. WKWebView is replaced by a
// `BridgeTransport` (`attach(transport:)`, `receive(_:)`), as design.md §3 allows.

@Suite("Reference: BridgeHost initializers")
@MainActor
struct HostInitializerConformance {
    @Test("init(hostVersion:) wires typed slots into a rich capability.query")
    func initHostVersion() async throws {
        let host = BridgeHost(hostVersion: "1.0.0")
        let h = Harness(host)
        host.documentCapture.handler = { _ in await host.documentCapture.awaitCompletion() }
        host.documentCapture.permissionState = .granted
        let data = try await h.query()
        #expect(data["environment"] == "linux")
        #expect(data["hostVersion"] == "1.0.0")
        #expect(data["capabilities"] == [
            "camera.document": ["supported": true, "version": "1.0", "permissionState": "granted"],
            "camera.selfie": ["supported": false, "version": .null],
        ])
    }

    @Test("init(configuration:) answers capability.query from the configuration; slots are not in it")
    func initConfiguration() async throws {
        let host = BridgeHost(configuration: BridgeConfiguration(
            hostVersion: "1.0.0",
            capabilities: ["camera.capture": BridgeCapabilityInfo(supported: true, version: "1.0")]))
        let h = Harness(host)
        host.selfieCapture.handler = { _ in .cancelled(reason: "not used") }
        let data = try await h.query()
        #expect(data["hostVersion"] == "1.0.0")
        #expect(data["capabilities"] == ["camera.capture": ["supported": true, "version": "1.0"]])
        #expect(host.capabilities == ["camera.capture": true])
        #expect(host.configuration.hostVersion == "1.0.0")
    }

    @Test("a configured capability keeps its constraints and permission state in the query")
    func configuredMetadata() async throws {
        let configuration = BridgeConfiguration(hostVersion: "1.4.2", capabilities: [
            "camera.document": BridgeCapabilityInfo(supported: true, version: "1.0",
                                                    constraints: ["maxResolution": "1920x1080",
                                                                  "formats": ["image/jpeg", "image/png"]],
                                                    permissionState: "granted"),
            "nfc.read": BridgeCapabilityInfo(supported: false, version: "1.0", permissionState: "denied"),
        ])
        let h = Harness(BridgeHost(configuration: configuration))
        h.post("capability.query", id: "query-001")
        let response = try parse(try await h.response(to: "query-001").jsonString())
        #expect(without(["timestamp"], response) == without(["timestamp"], try fixtureJSON("query-response-configured.json")))
    }

    @Test("capabilities of a configured host drive its query (the simple provider reads them on each query)")
    func configuredCapabilitiesAreLive() async throws {
        let host = BridgeHost(configuration: BridgeConfiguration(hostVersion: "1", capabilities: [
            "kiosk.print": BridgeCapabilityInfo(supported: true, version: "2.0"),
        ]))
        let h = Harness(host)
        host.capabilities["kiosk.print"] = false
        host.capabilities["kiosk.scan"] = true
        let capabilities = try #require(try await h.query()["capabilities"])
        #expect(capabilities["kiosk.print"] == ["supported": false, "version": "2.0"])
        #expect(capabilities["kiosk.scan"] == ["supported": true, "version": "1.0"])
    }
}

/// `BridgeHost` is `open`: an integrator may subclass it and keep both initializers.
final class KioskHost: BridgeHost {
    var readyEvents = 0
    func announceReady() {
        readyEvents += 1
        send(event: "host.ready", data: ["count": .number(Double(readyEvents))])
    }
}

@Suite("Reference: BridgeHost is open")
@MainActor
struct HostSubclassConformance {
    @Test("a subclass inherits init(hostVersion:) and init(configuration:) and routes as the base does")
    func subclass() async throws {
        let host = KioskHost(hostVersion: "5.0")
        let h = Harness(host)
        host.announceReady()
        #expect(h.sent.first?.payload.data == ["count": 1])
        #expect(try await h.query()["hostVersion"] == "5.0")
        let configured = KioskHost(configuration: BridgeConfiguration(hostVersion: "6.0", capabilities: [:]))
        #expect(configured.configuration.hostVersion == "6.0")
        #expect((host as NSObject).isEqual(host))
    }
}

@Suite("Reference: BridgeHost published properties")
@MainActor
struct HostPropertyConformance {
    @Test("receivedMessages lists every decoded message in arrival order, of every type")
    func receivedMessages() async throws {
        let h = Harness()
        h.transport.post(eventJSON("journey.step", id: "e1"))
        h.post("capability.query", id: "q1")
        h.transport.post(#"{"version":"1.0","correlationId":"r1","type":"response","timestamp":3,"payload":{"action":"x","status":"success"}}"#)
        h.transport.post("not a message")
        #expect(h.host.receivedMessages.map(\.correlationId) == ["e1", "q1", "r1"])
        #expect(h.host.receivedMessages.map(\.type) == [.event, .request, .response])
        h.host.receivedMessages.removeAll()  // settable, as the troubleshooting guide suggests
        #expect(h.host.receivedMessages.isEmpty)
        h.transport.post(eventJSON("journey.step", id: "e2"))
        #expect(h.host.receivedMessages.map(\.correlationId) == ["e2"])
    }

    @Test("pendingRequests holds unhandled requests in arrival order; responding removes them")
    func pendingRequests() throws {
        let h = Harness()
        for id in ["p3", "p1", "p2"] { h.post("kiosk.print", id: id) }
        #expect(h.host.pendingRequests.map(\.correlationId) == ["p3", "p1", "p2"])
        h.host.respond(to: "p1", status: .success)
        #expect(h.host.pendingRequests.map(\.correlationId) == ["p3", "p2"])
        #expect(h.responses(to: "p1").first?.payload.action == "kiosk.print")
    }

    @Test("capabilities maps ids to supported and follows the slots of a rich host")
    func capabilitiesMap() {
        let host = BridgeHost(hostVersion: "1.0.0")
        #expect(host.capabilities == ["camera.document": false, "camera.selfie": false])
        host.documentCapture.handler = { _ in .cancelled(reason: "x") }
        host.registerCustomCapability("nfc.read") { _, _ in }
        #expect(host.capabilities == ["camera.document": true, "camera.selfie": false, "nfc.read": true])
        host.documentCapture.isEnabled = false
        #expect(host.capabilities["camera.document"] == false)
    }

    @Test("lastError: decoding failures, a missing transport; clearError() resets it")
    func lastError() {
        let h = Harness()
        #expect(h.host.lastError == nil)
        h.transport.post(#"{"version":"1.0"}"#)
        #expect(h.host.lastError?.hasPrefix("Failed to decode message: ") == true)
        h.host.clearError()
        #expect(h.host.lastError == nil)

        let detached = BridgeHost(hostVersion: "1")
        detached.send(event: "host.ready", data: [:])
        #expect(detached.lastError == "WebView not attached")
    }
}

@Suite("Reference: BridgeHost slots, delegate, configuration")
@MainActor
struct HostMembersConformance {
    @Test("documentCapture and selfieCapture are the camera.document and camera.selfie slots")
    func typedSlots() async throws {
        let h = Harness()
        #expect((h.host.documentCapture.id, h.host.documentCapture.actionId) == ("camera.document", "camera.document.capture"))
        #expect((h.host.selfieCapture.id, h.host.selfieCapture.actionId) == ("camera.selfie", "camera.selfie.capture"))
        let seen = Mutex<[String]>([])
        h.host.selfieCapture.handler = { request in
            seen.withLock { $0.append(request.correlationId) }
            return .failed(code: "CAMERA_DENIED", message: "denied", recoverable: true)
        }
        h.post("camera.selfie.capture", id: "s1")
        #expect(try await h.response(to: "s1").payload.error?.code == "CAMERA_DENIED")
        #expect(seen.withLock { $0 } == ["s1"])
    }

    @Test("the delegate sees every message and every unhandled request, and is held weakly")
    func delegate() throws {
        let h = Harness()
        var delegate: RecordingDelegate? = RecordingDelegate()
        h.host.delegate = delegate
        h.post("capability.query", id: "q")
        h.post("kiosk.print", id: "p")
        h.transport.post(eventJSON("journey.step", id: "e"))
        #expect(delegate?.received.map(\.correlationId) == ["q", "p", "e"])
        #expect(delegate?.unhandled.map(\.correlationId) == ["p"])
        #expect(h.host.pendingRequests.map(\.correlationId) == ["p"])
        weak let weakDelegate = delegate
        delegate = nil
        #expect(weakDelegate == nil)
        #expect(h.host.delegate == nil)
    }

    @Test("a delegate may implement only what it needs (defaults do nothing)")
    func delegateDefaults() {
        final class OnlyUnhandled: BridgeHostDelegate {
            var count = 0
            func bridgeHost(_ host: BridgeHost, unhandledRequest message: BridgeMessage) { count += 1 }
        }
        let h = Harness()
        let delegate = OnlyUnhandled()
        h.host.delegate = delegate
        h.post("unknown.action", id: "u")
        h.transport.post(eventJSON("x", id: "e"))
        #expect(delegate.count == 1)
    }

    @Test("configuration is the one given at initialization")
    func configuration() {
        let configuration = BridgeConfiguration(hostVersion: "3.1", capabilities: ["a": BridgeCapabilityInfo(supported: true)],
                                                bootstrapScript: "window.x = 1;")
        let host = BridgeHost(configuration: configuration)
        #expect(host.configuration.hostVersion == "3.1")
        #expect(host.configuration.capabilities["a"]?.supported == true)
        #expect(host.configuration.bootstrapScript == "window.x = 1;")
    }
}

@Suite("Reference: BridgeHost methods")
@MainActor
struct HostMethodConformance {
    @Test("register(handler:) routes its action to the handler; a second registration replaces the first")
    func register() async throws {
        let h = Harness()
        let first = EchoHandler(action: "device.info")
        let second = EchoHandler(action: "device.info")
        h.host.register(handler: first)
        h.host.register(handler: second)
        h.post("device.info", id: "i1")
        let response = try await h.response(to: "i1")
        #expect(response.payload.status == .success)
        #expect(response.payload.data?["handledBy"] == "registered")
        #expect(first.handled.isEmpty)
        #expect(second.handled.map(\.correlationId) == ["i1"])
    }

    @Test("unregister(action:) sends later requests to pendingRequests")
    func unregister() async throws {
        let h = Harness()
        h.host.register(handler: EchoHandler(action: "device.info"))
        h.host.unregister(action: "device.info")
        h.post("device.info", id: "i2")
        await settle()
        #expect(h.responses(to: "i2").isEmpty)
        #expect(h.host.pendingRequests.map(\.correlationId) == ["i2"])
    }

    @Test("registerCustomCapability appears in the query (version 1.0 by default) and handles its action")
    func customCapability() async throws {
        let h = Harness()
        h.host.registerCustomCapability("nfc.read", version: "1.0") { _, responder in
            responder.respond(status: .success, data: ["chipRead": .bool(true)], error: nil)
        }
        h.host.registerCustomCapability("kiosk.print") { request, responder in
            responder.respond(status: .success, data: ["copies": request.payload.data?["copies"] ?? .null], error: nil)
        }
        let capabilities = try #require(try await h.query()["capabilities"])
        #expect(capabilities["nfc.read"] == ["supported": true, "version": "1.0"])
        #expect(capabilities["kiosk.print"] == ["supported": true, "version": "1.0"])
        h.post("nfc.read", id: "n1")
        #expect(try await h.response(to: "n1").payload.data == ["chipRead": true])
        h.post("kiosk.print", id: "k1", data: #"{"copies":2}"#)
        #expect(try await h.response(to: "k1").payload.data == ["copies": 2])
    }

    @Test("a typed slot takes precedence over a custom capability with the same id, in the query and in routing")
    func slotPrecedence() async throws {
        let h = Harness()
        let customCalls = Counter()
        h.host.registerCustomCapability("camera.document", version: "9.9") { _, responder in
            customCalls.increment()
            responder.respond(status: .success, data: nil, error: nil)
        }
        h.host.registerCustomCapability("camera.document.capture", version: "9.9") { _, responder in
            customCalls.increment()
            responder.respond(status: .success, data: nil, error: nil)
        }
        h.host.documentCapture.handler = { _ in .document(DocumentCaptureResult(imageData: Data([1]), width: 1, height: 1)) }
        let capabilities = try #require(try await h.query()["capabilities"]?.objectValue)
        #expect(capabilities["camera.document"] == ["supported": true, "version": "1.0", "permissionState": "notDetermined"])
        #expect(capabilities["camera.document.capture"] == nil)
        h.post("camera.document.capture", id: "d1")
        #expect(try await h.response(to: "d1").payload.data?["mimeType"] == "image/png")
        #expect(customCalls.count == 0)
    }

    @Test("custom capabilities take precedence over registered handlers")
    func customBeforeHandler() async throws {
        let h = Harness()
        let registered = EchoHandler(action: "nfc.read")
        h.host.register(handler: registered)
        h.host.registerCustomCapability("nfc.read") { _, responder in
            responder.respond(status: .success, data: ["handledBy": "custom"], error: nil)
        }
        h.post("nfc.read", id: "n")
        #expect(try await h.response(to: "n").payload.data == ["handledBy": "custom"])
        #expect(registered.handled.isEmpty)
    }

    @Test("attach(transport:) delivers to the transport, which the host holds weakly")
    func attach() {
        let host = BridgeHost(hostVersion: "1")
        var transport: InMemoryBridgeTransport? = InMemoryBridgeTransport()
        host.attach(transport: transport!)
        host.send(event: "host.ready", data: [:])
        #expect(transport?.sentMessages.map(\.payload.action) == ["host.ready"])
        weak let weakTransport = transport
        transport = nil
        #expect(weakTransport == nil)
        host.send(event: "after", data: [:])
        #expect(host.lastError == "WebView not attached")
    }

    @Test("send(event:data:) sends an event with its own id, a millisecond timestamp and the data")
    func sendEvent() throws {
        let h = Harness()
        let before = BridgeMessage.now()
        h.host.send(event: "host.ready", data: ["timestamp": .number(Date().timeIntervalSince1970)])
        h.host.send(event: "host.ready", data: [:])
        let events = h.sent
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.type == .event && $0.payload.action == "host.ready" && $0.payload.status == nil })
        #expect(events[0].correlationId != events[1].correlationId)
        #expect(events[0].timestamp >= before && events[0].timestamp <= BridgeMessage.now())
        #expect(events[0].payload.data?["timestamp"]?.doubleValue != nil)
        #expect(events[1].payload.data == [:])
    }

    @Test("respond(to:status:data:error:) answers a pending request with its action and removes it")
    func respondToPending() throws {
        let h = Harness()
        h.post("kiosk.print", id: "p1", data: #"{"copies":2}"#)
        h.host.respond(to: "p1", status: .success, data: ["imagePath": .string("/tmp/capture.jpg")])
        let response = try #require(h.responses(to: "p1").first)
        #expect(response.type == .response)
        #expect(response.payload.action == "kiosk.print")
        #expect(response.payload.status == .success)
        #expect(response.payload.data == ["imagePath": "/tmp/capture.jpg"])
        #expect(response.payload.error == nil)
        #expect(h.host.pendingRequests.isEmpty)
        h.host.respond(to: "p1", status: .success)  // no longer pending: nothing is sent
        #expect(h.responses(to: "p1").count == 1)
    }

    @Test("respond(to:action:status:data:error:) sends directly, pending or not")
    func respondWithAction() throws {
        let h = Harness()
        h.host.respond(to: "free", action: "custom.thing", status: .acknowledged)
        #expect(h.responses(to: "free").first?.payload.action == "custom.thing")
        #expect(h.responses(to: "free").first?.payload.status == .acknowledged)
        h.post("kiosk.print", id: "p2")
        h.host.respond(to: "p2", action: "kiosk.print", status: .error,
                       error: BridgeErrorPayload(code: "PAPER_OUT", message: "No paper", recoverable: true))
        #expect(h.responses(to: "p2").first?.payload.error == BridgeErrorPayload(code: "PAPER_OUT", message: "No paper",
                                                                                 recoverable: true))
        #expect(h.host.pendingRequests.isEmpty)
    }

    @Test("receive(_:) with undecodable input sets lastError and changes nothing else",
          arguments: [
            "", "{", "[]", "42", "null", #"{"version":"1.0"}"#,
            // A response or an event with a broken envelope is never answered.
            #"{"version":"1.0","correlationId":"c","type":"response","timestamp":1,"payload":{}}"#,
            #"{"version":"1.0","correlationId":"c","type":"event","timestamp":"x","payload":{"action":"a"}}"#,
          ])
    func undecodable(json: String) async {
        let h = Harness()
        let delegate = RecordingDelegate()
        h.host.delegate = delegate
        h.transport.post(json)
        await settle()
        #expect(h.host.lastError?.hasPrefix("Failed to decode message: ") == true)
        #expect(h.host.receivedMessages.isEmpty)
        #expect(h.host.pendingRequests.isEmpty)
        #expect(h.transport.sent.isEmpty)
        #expect(delegate.received.isEmpty && delegate.unhandled.isEmpty && delegate.sent.isEmpty)
    }

    @Test("an undecodable request whose correlationId can be read is answered INVALID_REQUEST (Linux addition); nothing else changes",
          arguments: [
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":1,"payload":{}}"#, "", "missing field 'payload.action'"),
            (#"{"version":"1.0","correlationId":"c","type":"command","timestamp":1,"payload":{"action":"capability.query"}}"#,
             "capability.query", "'type'"),
            (#"{"version":1,"correlationId":"c","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#,
             "capability.query", "wrong type at 'version'"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":1,"payload":{"action":"a","data":[1]}}"#, "a",
             "'payload.data': expected an object"),
          ])
    func undecodableRequestIsAnswered(json: String, action: String, reason: String) async {
        let h = Harness()
        let delegate = RecordingDelegate()
        h.host.delegate = delegate
        h.transport.post(json)
        await settle()
        #expect(h.host.lastError?.hasPrefix("Failed to decode message: ") == true)
        #expect(h.host.receivedMessages.isEmpty && h.host.pendingRequests.isEmpty)
        #expect(delegate.received.isEmpty && delegate.unhandled.isEmpty)
        let answer = h.responses(to: "c")
        #expect(answer.count == 1)
        #expect(answer.first?.payload.action == action && answer.first?.payload.status == .error)
        #expect(answer.first?.payload.error?.code == "INVALID_REQUEST" && answer.first?.payload.error?.recoverable == false)
        #expect(answer.first?.payload.error?.message.contains(reason) == true)
    }

    @Test("responses and events from the page are recorded and reported, never routed")
    func responsesAndEventsAreNotRouted() async {
        let h = Harness()
        let registered = EchoHandler(action: "journey.step")
        h.host.register(handler: registered)
        h.transport.post(eventJSON("journey.step", id: "e1", data: #"{"step":3}"#))
        h.transport.post(#"{"version":"1.0","correlationId":"r1","type":"response","timestamp":2,"payload":{"action":"journey.step","status":"success"}}"#)
        await settle()
        #expect(registered.handled.isEmpty)
        #expect(h.sent.isEmpty)
        #expect(h.host.pendingRequests.isEmpty)
        #expect(h.host.receivedMessages.map(\.correlationId) == ["e1", "r1"])
    }
}

@Suite("Reference: BridgeCapabilityHandler and BridgeResponder")
@MainActor
struct HandlerAndResponderConformance {
    /// A handler in the reference's shape that awaits work before it answers.
    final class SlowCapture: BridgeCapabilityHandler, @unchecked Sendable {
        let action = "camera.document.capture.custom"
        func handle(request: BridgeMessage, responder: BridgeResponder) async {
            let side = request.payload.data?["side"]?.stringValue ?? "front"
            try? await Task.sleep(for: .milliseconds(20))
            responder.respond(status: .success, data: ["imageBase64": .string(Data(side.utf8).base64EncodedString())], error: nil)
        }
    }

    @Test("handle(request:responder:) runs in a task: it can await before answering")
    func asyncHandler() async throws {
        let h = Harness()
        h.host.register(handler: SlowCapture())
        h.post("camera.document.capture.custom", id: "c", data: #"{"side":"back"}"#)
        #expect(h.responses(to: "c").isEmpty)  // not answered synchronously
        #expect(try await h.response(to: "c").payload.data == ["imageBase64": "YmFjaw=="])
    }

    @Test("the responder is Sendable and answers from any thread; the first call wins")
    func firstCallWins() async throws {
        let h = Harness()
        h.host.registerCustomCapability("slow.op") { _, responder in
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    responder.respond(status: .success, data: ["from": "thread"], error: nil)
                    responder.respond(status: .error, data: nil,
                                      error: BridgeErrorPayload(code: "LATE", message: "late", recoverable: false))
                    done.resume()
                }
            }
            responder.respond(status: .cancelled, data: nil, error: nil)
        }
        h.post("slow.op", id: "s")
        let response = try await h.response(to: "s")
        #expect(response.payload.data == ["from": "thread"])
        await settle()
        #expect(h.responses(to: "s").count == 1)
    }

    @Test("racing responders on many threads produce exactly one response")
    func racingResponders() async throws {
        let h = Harness()
        h.host.registerCustomCapability("race") { _, responder in
            await withTaskGroup(of: Void.self) { group in
                for i in 0..<16 {
                    group.addTask { responder.respond(status: i.isMultiple(of: 2) ? .success : .error, data: nil, error: nil) }
                }
            }
        }
        for round in 0..<10 { h.post("race", id: "r\(round)") }
        for round in 0..<10 { _ = try await h.response(to: "r\(round)") }
    }

    @Test("an answer from a handler keeps its order after the events it sent")
    func answerAfterEvents() async throws {
        let h = Harness()
        let host = h.host
        h.host.registerCustomCapability("with.progress") { request, responder in
            await MainActor.run {
                host.send(event: "with.progress.step", data: ["n": 1])
                host.send(event: "with.progress.step", data: ["n": 2])
            }
            responder.respond(status: .success, data: nil, error: nil)
        }
        h.post("with.progress", id: "w")
        _ = try await h.response(to: "w")
        #expect(h.sent.map(\.payload.action) == ["with.progress.step", "with.progress.step", "with.progress"])
    }
}

@Suite("Reference: CapabilityQueryHandler")
@MainActor
struct QueryHandlerConformance {
    @Test("action is capability.query; the simple provider is asked on every query")
    func simpleProvider() async throws {
        let calls = Counter()
        let handler = CapabilityQueryHandler(capabilities: { calls.increment(); return ["nfc.read": true, "camera.selfie": false] },
                                             hostVersion: "4.0")
        #expect(handler.action == "capability.query")
        let h = Harness()
        h.host.register(handler: handler)
        let first = try await h.query()
        _ = try await h.query()
        #expect(calls.count == 2)
        #expect(first["environment"] == "linux")
        #expect(first["hostVersion"] == "4.0")
        #expect(first["capabilities"] == [
            "nfc.read": ["supported": true, "version": "1.0"],
            "camera.selfie": ["supported": false, "version": .null],
        ])
    }

    @Test("the rich provider carries permissionState when it is set, and omits it otherwise")
    func richProvider() async throws {
        let handler = CapabilityQueryHandler(richCapabilities: {
            ["camera.document": BridgeCapabilityInfo(supported: true, version: "1.0", permissionState: "granted"),
             "nfc.read": BridgeCapabilityInfo(supported: true, version: "1.0")]
        }, hostVersion: "1.0.0")
        let h = Harness()
        h.host.register(handler: handler)
        let data = try await h.query()
        #expect(data["capabilities"] == [
            "camera.document": ["supported": true, "version": "1.0", "permissionState": "granted"],
            "nfc.read": ["supported": true, "version": "1.0"],
        ])
    }

    @Test("the answer of a rich host matches the documented shape", arguments: [true, false])
    func documentedShape(documentHasHandler: Bool) async throws {
        let h = Harness(BridgeHost(hostVersion: "2.3.0"))
        if documentHasHandler {
            h.host.documentCapture.handler = { _ in .cancelled(reason: "test") }
        }
        h.host.documentCapture.permissionState = .granted
        h.host.selfieCapture.permissionState = .denied
        h.host.registerCustomCapability("nfc.read", version: "2.0") { _, _ in }
        h.transport.post(try String(contentsOf: fixturesDirectory.appendingPathComponent("bridge/query-request.json"), encoding: .utf8))
        let response = try parse(try await h.response(to: "query-001").jsonString())
        var expected = without(["timestamp"], try fixtureJSON("query-response-rich.json"))
        if !documentHasHandler {
            guard case .object(var root) = expected, case .object(var payload) = root["payload"]!,
                  case .object(var data) = payload["data"]!, case .object(var capabilities) = data["capabilities"]! else {
                Issue.record("fixture shape")
                return
            }
            capabilities["camera.document"] = ["supported": false, "version": .null]
            data["capabilities"] = .object(capabilities)
            payload["data"] = .object(data)
            root["payload"] = .object(payload)
            expected = .object(root)
        }
        #expect(without(["timestamp"], response) == expected)
    }

    @Test("the rich provider is built on every query")
    func richIsLive() async throws {
        let h = Harness()
        #expect(try await h.query()["capabilities"]?["camera.selfie"]?["supported"] == false)
        h.host.selfieCapture.handler = { _ in .cancelled(reason: "x") }
        h.host.registerCustomCapability("kiosk.print") { _, _ in }
        let on = try #require(try await h.query()["capabilities"])
        #expect(on["camera.selfie"]?["supported"] == true)
        #expect(on["kiosk.print"] == ["supported": true, "version": "1.0"])
        h.host.selfieCapture.isEnabled = false
        h.host.unregisterCustomCapability("kiosk.print")
        let off = try #require(try await h.query()["capabilities"])
        #expect(off["camera.selfie"] == ["supported": false, "version": .null])
        #expect(off["kiosk.print"] == nil)
    }

    @Test("a custom capability's state can follow hardware (Linux addition)")
    func customStateFollowsHardware() async throws {
        let h = Harness()
        h.host.registerCustomCapability("nfc.read") { _, _ in }
        #expect(h.host.updateCustomCapability("nfc.read", supported: false, permissionState: .denied,
                                              constraints: ["readers": []]))
        #expect(!h.host.updateCustomCapability("unknown", supported: true))
        #expect(try await h.query()["capabilities"]?["nfc.read"] ==
                ["supported": false, "version": "1.0", "permissionState": "denied", "constraints": ["readers": []]])
        #expect(h.host.capabilities["nfc.read"] == false)
    }
}
