import Foundation
import GBGBridge
import GBGBridgeServer
import MRTDEmulator
import Synchronization
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Hostile and broken pages against a real BridgeServer on loopback, with real sockets: what they
// cannot do is lock other pages out, orphan a read, grow the host without bound, forge log lines,
// hold connections, or get around RFC 6455. Every loop here is bounded.

/// Polls `condition` (every 20 ms) for up to `seconds`.
func waitUntil(_ seconds: Double = 10, _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

func upgradeRequest(port: Int, token: String, origin: String = "ws://127.0.0.1") -> String {
    "GET /gbg-bridge/ws?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: \(origin)\r\n\r\n"
}

func json(_ object: [String: Any]?) -> String {
    guard let object, let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "" }
    return String(decoding: data, as: UTF8.self)
}

@Suite("Hostile pages against BridgeServer (loopback sockets)", .serialized)
struct HostilePageTests {
    @Test("upgrades aborted with a TCP reset never lock pages out")
    func abortedUpgradesReleaseTheirSlots() async throws {
        let rig = try await ServerRig.start(maxConnections: 4)
        defer { Task { await rig.stop() } }
        for round in 0..<16 {
            let socket = try await RawSocket.connect(port: rig.port)
            await socket.send(upgradeRequest(port: rig.port, token: rig.server.token))
            if round.isMultiple(of: 2) { _ = await socket.receive(max: 16) }  // half of them after the 101 arrived
            socket.abortWithReset()
        }
        #expect(await waitUntil { rig.server.connectionCount == 0 && rig.server.openConnectionCount == 0 })
        // Every slot is free: four pages at once, each served.
        var pages: [RawWebSocket] = []
        for _ in 0..<4 { pages.append(try await rig.page()) }
        for (index, page) in pages.enumerated() {
            await page.sendText(requestJSON("capability.query", id: "q\(index)"))
            #expect(await page.response(to: "q\(index)")?["payload"] != nil)
        }
        await #expect(throws: RawSocketError.self) { _ = try await rig.page() }  // the fifth is refused
    }

    @Test("a reused correlationId is refused; leaving cancels the first read, which never reads a later card")
    func duplicateCorrelationIdCannotOrphanARead() async throws {
        let reader = EmulatedReaderBackend()  // no card yet
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let rig = try await ServerRig.start(chip: chip, backend: reader)
        defer { Task { await rig.stop() } }
        let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#
        let page = try await rig.page()
        await page.sendText(requestJSON("nfc.read", id: "X", data: #"{"accessKey":\#(key),"timeoutSeconds":60}"#))
        #expect(await waitUntil { await MainActor.run { rig.nfc.isBusy } })
        await page.sendText(requestJSON("capability.query", id: "X"))
        let refusal = try #require(page.response(to: "X"))
        let payload = try #require(refusal["payload"] as? [String: Any])
        #expect(payload["action"] as? String == "capability.query")
        #expect(payload["status"] as? String == "error")
        let error = try #require(payload["error"] as? [String: Any])
        #expect(error["code"] as? String == "INVALID_REQUEST")
        #expect(error["message"] as? String == "correlationId already in use")
        #expect(error["recoverable"] as? Bool == false)

        page.socket.abortWithReset()  // the page goes away
        #expect(await waitUntil { await MainActor.run { !rig.nfc.isBusy } })
        let other = try await rig.page()
        await other.sendText(requestJSON("nfc.read", id: "Y", data: #"{"accessKey":\#(key),"timeoutSeconds":1}"#))
        let answer = try #require(await other.response(to: "Y")?["payload"] as? [String: Any])
        #expect((answer["error"] as? [String: Any])?["code"] as? String == "CARD_TIMEOUT")
        reader.insert(chip)
        try await Task.sleep(for: .milliseconds(300))
        #expect(chip.statistics.apdus == 0)  // nobody read the card that came later
    }

    @Test("a page that does not read is cut off (close 1008), its requests cancelled, others served")
    func nonReadingPageIsCutOff() async throws {
        // A capability that answers every request with 64 kB at once.
        let blob = JSONValue.string(String(repeating: "b", count: 64 << 10))
        let rig = try await ServerRig.start(logLevel: .warning, configure: {
            $0.maxOutboundBytes = 1 << 20
            $0.maxMessagesPerSecond = 100_000
        }, setUpHost: { host in
            host.registerCustomCapability("test.blob") { _, responder in
                responder.respond(status: .success, data: ["blob": blob], error: nil)
            }
        })
        defer { Task { await rig.stop() } }
        let page = try await rig.page(timeout: 5)
        #expect(await waitUntil { rig.server.connectionCount == 1 })
        // Requests whose answers the page never reads: the kernel's socket buffers fill (a few MB),
        // then the host's queue for the page.
        var sent = 0
        let started = ContinuousClock.now
        while sent < 5_000, !rig.log.all.contains(where: { $0.contains("does not read its messages") }) {
            guard await page.sendText(requestJSON("test.blob", id: "s\(sent)")) else { break }
            sent += 1
            if sent.isMultiple(of: 100) { try await Task.sleep(for: .milliseconds(5)) }
        }
        let flooded = ContinuousClock.now - started
        #expect(rig.log.all.contains { $0.contains("does not read its messages") }, "after \(sent) requests in \(flooded)")
        // Reading now, the page finds the close frame behind what was queued for it.
        #expect(await page.receiveCloseCode() == 1008)
        #expect(await waitUntil { rig.server.connectionCount == 0 })
        #expect(await MainActor.run { rig.hosts.current.isEmpty })
        let other = try await rig.page()
        await other.sendText(requestJSON("capability.query", id: "q"))
        #expect(await other.response(to: "q") != nil)
        #expect(sent > 10)
    }

    @Test("large events keep the page's message log bounded in bytes; routing still sees them whole")
    func largeEventsStayBounded() async throws {
        let rig = try await ServerRig.start()
        defer { Task { await rig.stop() } }
        let page = try await rig.page(timeout: 20)
        let blob = String(repeating: "E", count: 2 << 20)
        // Three of them (6 MiB, a hundred times the log's bound): more only costs time, and a debug
        // build under the full suite's load parses about a megabyte a second.
        for i in 0..<3 {
            await page.sendText(#"{"version":"1.0","correlationId":"e\#(i)","type":"event","timestamp":1,"payload":{"action":"journey.log","data":{"blob":"\#(blob)"}}}"#)
        }
        await page.sendText(requestJSON("capability.query", id: "after"))
        #expect(await page.response(to: "after") != nil)
        let (count, bytes, elided) = try await MainActor.run { () throws -> (Int, Int, Bool) in
            let host = try #require(rig.hosts.current.first)
            let bytes = try host.receivedMessages.reduce(0) { $0 + (try $1.jsonString().utf8.count) }
            return (host.receivedMessages.count, bytes, host.receivedMessages.first?.payload.data?["elided"] == .bool(true))
        }
        #expect(count == 4)
        #expect(bytes < 64 << 10)
        #expect(elided)
    }

    @Test("correlation ids and origins reach the log escaped and cut, never as raw lines")
    func logInjection() async throws {
        let reader = EmulatedReaderBackend()
        let rig = try await ServerRig.start(backend: reader, logLevel: .info)
        defer { Task { await rig.stop() } }
        let evil = "x\\n2026-11-22T00:00:00+0000 critical gbgbridge: [forged] reader stolen\\u001b[2J\\u001b[31m"
        let huge = String(repeating: "A", count: 1 << 20)
        let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#
        let page = try await rig.page()
        for id in [evil, huge] {
            await page.sendText(requestJSON("nfc.read", id: id, data: #"{"accessKey":\#(key),"timeoutSeconds":0.2}"#))
            // Progress events first; the next read only once this one has answered (else: BUSY).
            while let text = await page.receiveText(), !text.contains(#""type":"response""#) {}
        }
        // An origin with an escape sequence does not get past the HTTP parser: answered 400 and
        // closed at once (not left open until the idle timeout); a long one is refused and logged cut.
        let escaped = try await RawSocket.connect(port: rig.port, timeout: 5)
        await escaped.send(upgradeRequest(port: rig.port, token: rig.server.token, origin: "http://evil\u{1B}[31m.example"))
        #expect(String(decoding: await escaped.receive() ?? [], as: UTF8.self).hasPrefix("HTTP/1.1 400"))
        #expect(await escaped.closedByPeer(within: 5))
        let long = try await RawSocket.connect(port: rig.port)
        await long.send(upgradeRequest(port: rig.port, token: rig.server.token, origin: "http://" + String(repeating: "o", count: 6_000) + ".example"))
        _ = await long.receive()
        #expect(await waitUntil { rig.log.all.count(where: { $0.contains("nfc.read") }) >= 2 && rig.log.all.contains { $0.contains("refused") } })
        let lines = rig.log.all
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(!line.contains("\n") && !line.contains("\u{1B}") && !line.contains("\r"), "\(line.prefix(200))")
            #expect(line.utf8.count < 2_000, "a log line of \(line.utf8.count) bytes")
        }
        #expect(lines.contains { $0.contains("\\n2026-11-22T00:00:00+0000 critical") })
    }

    @Test("idle and slow-header connections are closed; a page then gets in")
    func idleAndSlowConnectionsAreClosed() async throws {
        let rig = try await ServerRig.start(maxConnections: 4) {
            $0.maxOpenConnections = 24
            // Long enough for 24 connections to be made before the first is timed out, on a
            // loaded machine (at 1 s a CI run beside 779 tests saw some closed before all 24 were open).
            $0.headerTimeout = .seconds(3)
        }
        defer { Task { await rig.stop() } }
        var sockets: [RawSocket] = []
        for index in 0..<24 {
            let socket = try await RawSocket.connect(port: rig.port)
            if index.isMultiple(of: 2) { await socket.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(rig.port)\r\nX-Slow: ") }
            sockets.append(socket)
        }
        #expect(await waitUntil { rig.server.openConnectionCount == 24 })
        // Every connection slot is held: a new page waits in the backlog until the idle ones are closed.
        let page = try await rig.page(timeout: 10)
        for socket in sockets { #expect(await socket.closedByPeer(within: 10)) }
        await page.sendText(requestJSON("capability.query", id: "q"))
        #expect(await page.response(to: "q") != nil)
        #expect(await waitUntil { rig.server.openConnectionCount == 1 })
    }

    @Test("RFC 6455: invalid UTF-8 → 1007, oversize fragmented → 1009, interleaved → 1002, binary → 1003",
          arguments: ["utf8", "utf8-split-ok", "oversize-fragmented", "oversize-frame", "interleaved", "orphan-continuation", "binary"])
    func closeCodes(kind: String) async throws {
        let rig = try await ServerRig.start { $0.maxMessageBytes = 64 << 10 }
        defer { Task { await rig.stop() } }
        let page = try await rig.page()
        let half = [UInt8](repeating: 0x20, count: 40 << 10)
        let expected: Int?
        switch kind {
        case "utf8":
            await page.send(opcode: 1, payload: Array(requestJSON("capability.query", id: "q").utf8) + [0xC3, 0x28])
            expected = 1007
        case "utf8-split-ok":
            // "é" (C3 A9) split across two fragments is valid UTF-8 once assembled.
            let text = Array(requestJSON("capability.query", id: "é").utf8)
            let cut = text.firstIndex(of: 0xC3)! + 1
            await page.send(opcode: 1, payload: Array(text[..<cut]), fin: false)
            await page.send(opcode: 0, payload: Array(text[cut...]), fin: true)
            #expect(await page.response(to: "é") != nil)
            expected = nil
        case "oversize-fragmented":
            await page.send(opcode: 1, payload: half, fin: false)
            await page.send(opcode: 0, payload: half, fin: true)
            expected = 1009
        case "oversize-frame":
            await page.send(opcode: 1, payload: half + half)
            expected = 1009
        case "interleaved":
            await page.send(opcode: 1, payload: Array("{\"version\":".utf8), fin: false)
            await page.send(opcode: 1, payload: Array(requestJSON("capability.query", id: "q").utf8))
            expected = 1002
        case "orphan-continuation":
            await page.send(opcode: 0, payload: Array("{}".utf8), fin: true)
            expected = 1002
        default:
            await page.send(opcode: 2, payload: Array(requestJSON("capability.query", id: "q").utf8))
            expected = 1003
        }
        if let expected {
            #expect(await page.receiveCloseCode() == expected)
            #expect(await waitUntil { rig.server.connectionCount == 0 })
        }
    }

    @Test("unknown actions are answered unsupported at once")
    func unknownActions() async throws {
        let rig = try await ServerRig.start()
        defer { Task { await rig.stop() } }
        let page = try await rig.page()
        await page.sendText(requestJSON("kiosk.teleport", id: "t"))
        let payload = try #require(await page.response(to: "t")?["payload"] as? [String: Any])
        #expect(payload["status"] as? String == "unsupported")
        #expect((payload["error"] as? [String: Any])?["code"] as? String == "UNSUPPORTED")
        #expect(await MainActor.run { rig.hosts.current.first?.pendingRequests.isEmpty } == true)
    }

    @Test("a flooding page is slowed down, not dropped, and other pages are still served")
    func floodingPage() async throws {
        let rig = try await ServerRig.start { $0.maxMessagesPerSecond = 500 }
        defer { Task { await rig.stop() } }
        let flooder = try await rig.page(timeout: 20)
        let answered = Mutex(0)
        let reader = Thread {
            while let text = flooder.receiveText() {
                if text.contains("\"response\"") { answered.withLock { $0 += 1 } }
                if answered.withLock({ $0 }) == 2_000 { break }
            }
        }
        reader.start()
        for i in 0..<2_000 { await flooder.sendText(requestJSON("capability.query", id: "f\(i)")) }
        let other = try await rig.page()
        for i in 0..<10 {
            await other.sendText(requestJSON("capability.query", id: "o\(i)"))
            #expect(await other.response(to: "o\(i)") != nil)
        }
        #expect(await waitUntil(20) { answered.withLock { $0 } == 2_000 })
    }

    @Test("shutdown closes pages and cancels a read in progress, and run returns")
    func shutdownMidRead() async throws {
        let reader = EmulatedReaderBackend()
        let rig = try await ServerRig.start(backend: reader)
        let page = try await rig.page()
        let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#
        await page.sendText(requestJSON("nfc.read", id: "r", data: #"{"accessKey":\#(key),"timeoutSeconds":60}"#))
        #expect(await waitUntil { await MainActor.run { rig.nfc.isBusy } })
        let returned = Mutex(false)
        Task {
            _ = try? await rig.task.value
            returned.withLock { $0 = true }
        }
        await rig.server.shutdown()
        #expect(await waitUntil(10) { returned.withLock { $0 } })
        #expect(await MainActor.run { !rig.nfc.isBusy })
        let code = await page.receiveCloseCode()
        #expect(code == 1000 || code == 1001 || code == nil)
    }

    @Test("JSON endpoints (the demo's backend): POST from the page's origin only, bodies bounded")
    func jsonEndpointsAreSameOriginAndBounded() async throws {
        let rig = try await ServerRig.start(configure: { configuration in
            configuration.maxMessageBytes = 4_096
            configuration.jsonEndpoints["/demo/echo"] = { body in (200, body) }
        })
        defer { Task { await rig.stop() } }
        let own = "http://127.0.0.1:\(rig.port)"
        let host = ("Host", "127.0.0.1:\(rig.port)")
        #expect(try await rig.rawStatus(path: "/demo/echo", headers: [host, ("Origin", own)], method: "POST", body: "{}") == 200)
        #expect(try await rig.rawStatus(path: "/demo/echo", headers: [host, ("Origin", "https://evil.example")], method: "POST", body: "{}") == 403)
        #expect(try await rig.rawStatus(path: "/demo/echo", headers: [host], method: "POST", body: "{}") == 403)
        #expect(try await rig.rawStatus(path: "/demo/echo", headers: [host, ("Origin", own), ("Sec-Fetch-Site", "cross-site")],
                                        method: "POST", body: "{}") == 403)
        #expect(try await rig.rawStatus(path: "/demo/echo", headers: [host, ("Origin", own)], method: "POST",
                                        body: String(repeating: "x", count: 10_000)) == 413)
        #expect(try await rig.rawStatus(path: "/demo/echo", headers: [("Host", "evil.example"), ("Origin", own)], method: "POST", body: "{}") == 421)
    }
}

