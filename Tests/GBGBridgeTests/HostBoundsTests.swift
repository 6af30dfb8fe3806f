import Foundation
import Synchronization
import Testing
@testable import GBGBridge

// What a hostile or broken page cannot do to a host (issue 12, the core's part): reuse a
// correlation id that is in flight, make the host hold unbounded requests or log, or leave work
// running after it has gone.

@Suite("BridgeHost: correlation ids in flight")
@MainActor
struct CorrelationIdTests {
    @Test("a request whose correlationId is in flight is refused; the first keeps its responder")
    func duplicateWhileHandlerRuns() async throws {
        let h = Harness()
        let gate = AsyncGate()
        let calls = Counter()
        h.host.registerCustomCapability("nfc.read") { _, responder in
            calls.increment()
            await gate.wait()
            responder.respond(status: .success, data: ["first": true], error: nil)
        }
        h.post("nfc.read", id: "X")
        h.post("capability.query", id: "X")
        h.post("nfc.read", id: "X")
        let refusals = h.responses(to: "X")
        #expect(refusals.count == 2)
        for refusal in refusals {
            #expect(refusal.payload.status == .error)
            #expect(refusal.payload.error == BridgeErrorPayload(code: "INVALID_REQUEST", message: "correlationId already in use",
                                                                recoverable: false))
        }
        #expect(refusals.map(\.payload.action) == ["capability.query", "nfc.read"])
        await gate.open()
        #expect(await eventually { h.responses(to: "X").count == 3 })
        #expect(h.responses(to: "X").last?.payload.data == ["first": true])
        #expect(calls.count == 1)
        // Once answered, the id may be used again.
        h.post("capability.query", id: "X")
        #expect(await eventually { h.responses(to: "X").count == 4 })
        #expect(h.responses(to: "X").last?.payload.status == .success)
    }

    @Test("leaving cancels the first request even after a duplicate was sent")
    func duplicateThenLeave() async throws {
        let h = Harness()
        let cancelled = Mutex(false)
        h.host.registerCustomCapability("nfc.read") { _, responder in
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
            cancelled.withLock { $0 = true }
            responder.respond(status: .success, data: ["late": true], error: nil)
        }
        h.post("nfc.read", id: "X")
        h.post("camera.selfie.capture", id: "X")
        h.host.detachTransport(reason: "the page went away")
        #expect(await eventually { cancelled.withLock { $0 } })
        #expect(h.host.openRequestCount == 0)
        let answers = h.responses(to: "X")
        #expect(answers.map(\.payload.status) == [.error, .cancelled])
        await settle()
        #expect(h.responses(to: "X").count == 2)  // the late answer went nowhere
    }

    @Test("duplicates of a busy slot's request and of a pending request are refused too")
    func duplicateSlotAndPending() async throws {
        let h = Harness()
        h.host.documentCapture.handler = { _ in await h.host.documentCapture.awaitCompletion() }
        h.post("camera.document.capture", id: "D")
        h.post("nfc.read", id: "D")
        #expect(h.responses(to: "D").first?.payload.error?.code == "INVALID_REQUEST")
        h.post("kiosk.print", id: "P")
        h.post("kiosk.print", id: "P")
        #expect(h.host.pendingRequests.map(\.correlationId) == ["P"])
        #expect(h.responses(to: "P").first?.payload.error?.message == "correlationId already in use")
        // An app that drops a pending request itself frees its id.
        h.host.pendingRequests.removeAll()
        h.post("kiosk.print", id: "P")
        #expect(h.host.pendingRequests.map(\.correlationId) == ["P"])
    }
}

@Suite("BridgeHost: cancellation")
@MainActor
struct CancellationTests {
    @Test("cancelInFlightRequests cancels handler tasks, busy slots and pending requests, in arrival order")
    func cancelEverything() async throws {
        let h = Harness()
        let handlerSawCancel = Mutex(false)
        h.host.registerCustomCapability("nfc.read") { _, responder in
            await withTaskCancellationHandler {
                try? await Task.sleep(for: .seconds(30))
            } onCancel: {
                handlerSawCancel.withLock { $0 = true }
            }
            responder.respond(status: .success, data: nil, error: nil)
        }
        let slotResult = Mutex<CaptureResult?>(nil)
        h.host.documentCapture.handler = { _ in
            let result = await h.host.documentCapture.awaitCompletion()
            slotResult.withLock { $0 = result }
            return result
        }
        h.post("nfc.read", id: "n")
        h.post("camera.document.capture", id: "d")
        h.post("kiosk.unknown", id: "u")
        h.host.cancelInFlightRequests(reason: "navigated away")
        let cancelled = BridgeErrorPayload(code: "CANCELLED", message: "navigated away", recoverable: true)
        #expect(h.sent.map(\.correlationId) == ["n", "d", "u"])
        #expect(h.sent.allSatisfy { $0.payload.status == .cancelled && $0.payload.error == cancelled })
        #expect(await eventually { handlerSawCancel.withLock { $0 } })
        #expect(await eventually { slotResult.withLock { $0 } == .cancelled(reason: "navigated away") })
        #expect(h.host.documentCapture.activeRequest == nil)
        #expect(h.host.pendingRequests.isEmpty)
        await settle()
        #expect(h.sent.count == 3)  // the handlers' late answers have no effect
        // The slot takes new requests at once.
        h.post("camera.document.capture", id: "d2")
        #expect(h.host.documentCapture.activeRequest?.correlationId == "d2")
    }

    @Test("a host that goes away cancels what its handlers still run")
    func deinitCancels() async throws {
        let sawCancel = Mutex(false)
        var host: BridgeHost? = BridgeHost(hostVersion: "1")
        let transport = InMemoryBridgeTransport()
        host!.attach(transport: transport)
        host!.registerCustomCapability("long") { _, _ in
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
            sawCancel.withLock { $0 = true }
        }
        transport.post(requestJSON("long", id: "l"))
        host = nil
        #expect(await eventually { sawCancel.withLock { $0 } })
    }
}

@Suite("BridgeHost: bounds")
@MainActor
struct BoundsTests {
    @Test("requests beyond maxRequestsInFlight are answered TOO_MANY_REQUESTS, recoverable")
    func requestCount() async throws {
        var configuration = BridgeConfiguration(hostVersion: "1", capabilities: [:])
        configuration.maxRequestsInFlight = 3
        let h = Harness(BridgeHost(configuration: configuration, queryProvider: .rich))
        for i in 0..<5 { h.post("unknown.action", id: "p\(i)") }
        #expect(h.host.pendingRequests.count == 3)
        #expect(h.responses(to: "p3").first?.payload.error?.code == "TOO_MANY_REQUESTS")
        #expect(h.responses(to: "p3").first?.payload.error?.recoverable == true)
        // capability.query is answered at once and never counts.
        #expect(try await h.query()["environment"] == "linux")
        h.host.respond(to: "p0", status: .success)
        h.post("unknown.action", id: "p5")
        #expect(h.host.pendingRequests.map(\.correlationId) == ["p1", "p2", "p5"])
    }

    @Test("requests beyond maxRequestBytesInFlight are refused")
    func requestBytes() {
        var configuration = BridgeConfiguration(hostVersion: "1", capabilities: [:])
        configuration.maxRequestBytesInFlight = 10_000
        let h = Harness(BridgeHost(configuration: configuration, queryProvider: .rich))
        let blob = "\"" + String(repeating: "A", count: 4_000) + "\""
        for i in 0..<4 { h.post("unknown.action", id: "b\(i)", data: #"{"blob":\#(blob)}"#) }
        #expect(h.host.pendingRequests.count == 2)
        #expect(h.responses(to: "b2").first?.payload.error?.code == "TOO_MANY_REQUESTS")
    }

    @Test("the log keeps 1,000 messages by default, oldest dropped; the limit is configurable")
    func logCount() {
        let h = Harness()
        #expect(h.host.receivedMessagesLimit == 1_000)
        for i in 0..<1_050 { h.transport.post(eventJSON("tick", id: "e\(i)")) }
        #expect(h.host.receivedMessages.count == 1_000)
        #expect(h.host.receivedMessages.first?.correlationId == "e50")
        #expect(h.host.receivedMessages.last?.correlationId == "e1049")
        h.host.receivedMessagesLimit = 1
        #expect(h.host.receivedMessages.map(\.correlationId) == ["e1049"])
    }

    @Test("large data is elided in the log, never in routing; the log is bounded in bytes")
    func logBytes() async throws {
        var configuration = BridgeConfiguration(hostVersion: "1", capabilities: [:])
        configuration.loggedMessageByteLimit = 1_000
        configuration.receivedMessagesByteLimit = 50_000
        let h = Harness(BridgeHost(configuration: configuration, queryProvider: .rich))
        let seenBytes = Mutex(0)
        h.host.registerCustomCapability("upload") { request, responder in
            seenBytes.withLock { $0 = request.payload.data?["blob"]?.stringValue?.count ?? 0 }
            responder.respond(status: .success, data: nil, error: nil)
        }
        let blob = String(repeating: "B", count: 200_000)
        h.post("upload", id: "u", data: #"{"blob":"\#(blob)"}"#)
        _ = try await h.response(to: "u")
        #expect(seenBytes.withLock { $0 } == 200_000)
        let logged = try #require(h.host.receivedMessages.last)
        #expect(logged.payload.data?["elided"] == true)
        #expect((logged.payload.data?["originalBytes"]?.intValue ?? 0) > 200_000)
        // Many mid-sized messages: the byte bound drops the oldest before the count bound would.
        let mid = String(repeating: "m", count: 700)
        for i in 0..<200 { h.transport.post(eventJSON("mid", id: "m\(i)", data: #"{"t":"\#(mid)"}"#)) }
        let total = try h.host.receivedMessages.reduce(0) { $0 + (try $1.jsonString().utf8.count) }
        #expect(total <= 50_000)
        #expect(h.host.receivedMessages.count < 200)
        #expect(h.host.receivedMessages.last?.correlationId == "m199")
    }

    @Test("a huge correlation id is shortened in the log, kept whole in the answer")
    func hugeCorrelationId() async throws {
        let h = Harness()
        let id = String(repeating: "i", count: 100_000)
        h.post("capability.query", id: id)
        #expect(h.responses(to: id).count == 1)
        let logged = try #require(h.host.receivedMessages.last)
        #expect(logged.correlationId.count < 400)
    }
}

@Suite("BridgeHost: log redaction and streams")
@MainActor
struct ObservationTests {
    @Test("logRedactor masks what is logged, not what is routed")
    func redactor() async throws {
        let h = Harness()
        h.host.logRedactor = { message in
            var copy = message
            if copy.payload.data?["accessKey"] != nil { copy.payload.data?["accessKey"] = "***" }
            return copy
        }
        let seen = Mutex<JSONValue?>(nil)
        h.host.registerCustomCapability("nfc.read") { request, responder in
            seen.withLock { $0 = request.payload.data?["accessKey"] }
            responder.respond(status: .success, data: nil, error: nil)
        }
        h.post("nfc.read", id: "n", data: #"{"accessKey":{"can":"123456"}}"#)
        _ = try await h.response(to: "n")
        #expect(seen.withLock { $0 } == ["can": "123456"])
        #expect(h.host.receivedMessages.last?.payload.data == ["accessKey": "***"])
    }

    @Test("the messages and errors streams follow traffic and lastError")
    func streams() async throws {
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
}

@Suite("LogText")
struct LogTextTests {
    @Test("control characters, separators and bidi overrides are escaped", arguments: [
        ("plain-id-123", "plain-id-123"),
        ("a\nb", "a\\nb"),
        ("a\r\ncritical: forged", "a\\r\\ncritical: forged"),
        ("\u{1B}[2J\u{1B}[31mred", "\\u{1B}[2J\\u{1B}[31mred"),
        ("tab\there", "tab\\there"),
        ("nul\u{0}x", "nul\\u{0}x"),
        ("c1\u{9B}31m", "c1\\u{9B}31m"),
        ("rtl\u{202E}txt", "rtl\\u{202E}txt"),
        ("line\u{2028}sep", "line\\u{2028}sep"),
        ("back\\slash", "back\\\\slash"),
        ("ünïcødé 😀", "ünïcødé 😀"),
    ])
    func escapes(input: String, expected: String) {
        #expect(LogText.clip(input) == expected)
    }

    @Test("long text is cut, saying how much was left out")
    func clips() {
        let text = String(repeating: "x", count: 4 << 20)
        let clipped = LogText.clip(text, to: 100)
        #expect(clipped.hasPrefix(String(repeating: "x", count: 100)))
        #expect(clipped.hasSuffix("…(+\((4 << 20) - 100) bytes)"))
        #expect(clipped.count < 130)
        #expect(!LogText.clip(String(repeating: "\n", count: 1_000)).contains("\n"))
    }
}

/// A gate tasks wait at until it is opened.
actor AsyncGate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters.removeAll()
    }
}
