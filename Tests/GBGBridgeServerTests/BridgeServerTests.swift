import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GBGBridge
import GBGBridgeServer
import HTTPTypes
import Logging
import MRTDEmulator
import SmartCard
import Synchronization
import TestSupport
import Testing

@Suite("BridgeServer over a real loopback WebSocket", .serialized)
struct BridgeServerTests {
    static let logger: Logger = {
        var logger = Logger(label: "test.client")
        logger.logLevel = .error
        return logger
    }()

    /// Connects as a page from `origin`, sends `messages`, and collects what comes back until
    /// `until` says enough (or 20 s pass).
    /// (The client sends `Origin: ws://127.0.0.1`, which the rig's server allows; it is the raw
    /// RFC 6455 client of TestSupport, on a thread of its own.)
    func exchange(_ rig: ServerRig, url: String? = nil, messages: [String],
                  until: @escaping @Sendable ([BridgeMessage]) -> Bool) async throws -> [BridgeMessage] {
        let target = try #require(URL(string: url ?? rig.webSocketURL))
        let port = try #require(target.port)
        let path = target.path + (target.query.map { "?\($0)" } ?? "")
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    let socket = try RawWebSocket(port: port, path: path, origin: "ws://127.0.0.1", timeout: 20)
                    for message in messages { socket.sendText(message) }
                    var received: [BridgeMessage] = []
                    let deadline = ContinuousClock.now + .seconds(20)
                    while ContinuousClock.now < deadline, let text = socket.receiveText() {
                        guard let message = try? BridgeMessage.decode(json: text) else { continue }
                        received.append(message)
                        if until(received) { break }
                    }
                    socket.send(opcode: 8, payload: [0x03, 0xE8])
                    return received
                })
            }.start()
        }
    }

    @Test func servesTheScriptWithTokenAndShim() async throws {
        let rig = try await ServerRig.start()
        let (data, response) = try await URLSession.shared.data(from: URL(string: "\(rig.origin)/gbg-bridge.js")!)
        let script = String(decoding: data, as: UTF8.self)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(script.contains(rig.server.token))
        #expect(script.contains("window.webkit.messageHandlers"))
        #expect(script.contains("window.GBGBridge.receive = window.GBGBridge.receive || function"))
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Control") == "no-store")
        await rig.stop()
    }

    @Test func capabilityQueryAndStubCaptureRoundTrip() async throws {
        let rig = try await ServerRig.start()
        let messages = try await exchange(rig, messages: [requestJSON("capability.query", id: "q"),
                                                          requestJSON("camera.document.capture", id: "d")]) { all in
            all.contains { $0.correlationId == "q" } && all.contains { $0.correlationId == "d" }
        }
        let query = try #require(messages.first { $0.correlationId == "q" })
        #expect(query.payload.data?["environment"] == "linux")
        #expect(query.payload.data?["capabilities"]?["nfc.read"]?["supported"] == true)
        let capture = try #require(messages.first { $0.correlationId == "d" })
        #expect(capture.payload.data?["mimeType"] == "image/png")
        await rig.stop()
    }

    @Test func refusesForeignOriginsWrongHostsAndMissingTokens() async throws {
        let rig = try await ServerRig.start(allowedOrigins: ["https://journey.example.com"])
        let path = "/gbg-bridge/ws?token=\(rig.server.token)"
        #expect(try await rig.rawStatus(path: path, headers: rig.upgradeHeaders(origin: rig.origin)) == 101)
        #expect(try await rig.rawStatus(path: path, headers: rig.upgradeHeaders(origin: "https://journey.example.com")) == 101)
        #expect(try await rig.rawStatus(path: path, headers: rig.upgradeHeaders(origin: "https://evil.example.com")) != 101)
        #expect(try await rig.rawStatus(path: path, headers: rig.upgradeHeaders(origin: "https://journey.example.com.evil.com")) != 101)
        #expect(try await rig.rawStatus(path: path, headers: rig.upgradeHeaders(origin: nil)) != 101)
        // DNS rebinding: a foreign name resolving to 127.0.0.1 is refused, for pages and the socket.
        #expect(try await rig.rawStatus(path: path, headers: rig.upgradeHeaders(host: "attacker.example:\(rig.port)", origin: rig.origin)) != 101)
        #expect(try await rig.rawStatus(path: "/gbg-bridge.js", headers: [("Host", "attacker.example:\(rig.port)")]) == 421)
        #expect(try await rig.rawStatus(path: "/gbg-bridge.js", headers: [("Host", "127.0.0.1:1")]) == 421)
        // Token: missing or wrong.
        #expect(try await rig.rawStatus(path: "/gbg-bridge/ws", headers: rig.upgradeHeaders(origin: rig.origin)) != 101)
        #expect(try await rig.rawStatus(path: "/gbg-bridge/ws?token=00", headers: rig.upgradeHeaders(origin: rig.origin)) != 101)
        // The script is refused to a cross-site page that is not allowed.
        #expect(try await rig.rawStatus(path: "/gbg-bridge.js", headers: [("Host", "127.0.0.1:\(rig.port)"), ("Sec-Fetch-Site", "cross-site"),
                                                                    ("Referer", "https://evil.example.com/page")]) == 403)
        #expect(try await rig.rawStatus(path: "/gbg-bridge.js", headers: [("Host", "127.0.0.1:\(rig.port)"), ("Sec-Fetch-Site", "cross-site"),
                                                                    ("Referer", "https://journey.example.com/start")]) == 200)
        await rig.stop()
    }

    @Test func oversizeMessagesCloseTheConnectionButLargeOnesPass() async throws {
        let rig = try await ServerRig.start()
        // A 6 MB message (a 5 MB image in base64 would be about this) is accepted…
        let big = requestJSON("kiosk.echo", id: "big", data: "{\"blob\":\"\(String(repeating: "A", count: 6_000_000))\"}")
        let ok = try await exchange(rig, messages: [big, requestJSON("capability.query", id: "after")]) { all in
            all.contains { $0.correlationId == "after" }
        }
        #expect(ok.contains { $0.correlationId == "after" })
        // … one above the 8 MiB limit ends the connection.
        let huge = requestJSON("kiosk.echo", id: "huge", data: "{\"blob\":\"\(String(repeating: "A", count: 9_000_000))\"}")
        let refused = try await exchange(rig, messages: [huge, requestJSON("capability.query", id: "never")]) { _ in false }
        #expect(!refused.contains { $0.correlationId == "never" })
        await rig.stop()
    }

    @Test func manyConcurrentPagesEachGetTheirOwnHostAndTheLimitHolds() async throws {
        let rig = try await ServerRig.start(maxConnections: 12)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for page in 0..<12 {
                group.addTask {
                    let id = "page-\(page)"
                    let answers = try await exchange(rig, messages: [requestJSON("capability.query", id: id)]) { all in
                        all.contains { $0.correlationId == id }
                    }
                    return answers.count == 1 && answers[0].correlationId == id
                }
            }
            for try await answered in group { #expect(answered) }
        }
        // The pages above sent their close frames and went: the server counts each until it has
        // seen its close, which on a loaded machine can come after the next pages knock (and
        // they would be refused for slots still held). Wait for the slots to be given back.
        let released = ContinuousClock.now + .seconds(60)
        while rig.server.connectionCount > 0, ContinuousClock.now < released { try await Task.sleep(for: .milliseconds(10)) }
        #expect(rig.server.connectionCount == 0, "the closed pages' slots were given back")
        // With all slots taken, one more page is refused.
        let holders = Counter()
        let hold = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for page in 0..<12 {
                    group.addTask {
                        _ = try await exchange(rig, messages: [requestJSON("capability.query", id: "h\(page)")]) { _ in
                            holders.increment()
                            return false
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        // (Up to a minute: on a loaded 2-core CI machine twelve handshakes took over 5 s.)
        let deadline = ContinuousClock.now + .seconds(60)
        while holders.value < 12, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(rig.server.connectionCount == 12)
        #expect(try await rig.rawStatus(path: "/gbg-bridge/ws?token=\(rig.server.token)", headers: rig.upgradeHeaders(origin: rig.origin)) != 101)
        hold.cancel()
        await rig.stop()
    }

    @Test func nfcReadThroughRealPCSCDLikeServe() async throws {
        // `gbgbridge serve` uses every PC/SC reader: here the emulator sits in pcscd's vpcd reader.
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td1-idcard"))
        try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let rig = try await ServerRig.start(chip: chip, backend: PCSCBackend())
            let read = requestJSON("nfc.read", id: "p", data: #"{"accessKey":{"documentNumber":"U21034875","dateOfBirth":"880214","dateOfExpiry":"340901"},"reader":"Virtual PCD 00 00"}"#)
            let messages = try await exchange(rig, messages: [requestJSON("capability.query", id: "q"), read]) { all in
                all.contains { $0.correlationId == "p" && $0.type == .response }
            }
            await rig.stop()
            let query = try #require(messages.first { $0.correlationId == "q" })
            let readers = query.payload.data?["capabilities"]?["nfc.read"]?["constraints"]?["readers"]?.arrayValue ?? []
            #expect(readers.contains("Virtual PCD 00 00"))
            let response = try #require(messages.first { $0.correlationId == "p" && $0.type == .response })
            #expect(response.payload.status == .success, "\(response.payload.error?.message ?? "")")
            #expect(response.payload.data?["document"]?["surname"] == "SPECIMEN")
            #expect(response.payload.data?["verification"]?["passive"]?["status"] == "valid")
        }
    }

    @Test func aPageThatLeavesMidReadCancelsItAndFreesTheReader() async throws {
        let rig = try await ServerRig.start()
        rig.chip.setFaults(ChipFaults(latencyPerAPDU: .milliseconds(40)))
        let read = requestJSON("nfc.read", id: "r", data: #"{"accessKey":{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}}"#)
        // Leave as soon as reading has started.
        let seen = try await exchange(rig, messages: [read]) { all in
            all.contains { $0.payload.action == "nfc.read.progress" && $0.payload.data?["phase"] == "reading" }
        }
        #expect(!seen.contains { $0.type == .response })
        var busy = await MainActor.run { rig.nfc.isBusy }
        for _ in 0..<300 where busy {
            try await Task.sleep(for: .milliseconds(10))
            busy = await MainActor.run { rig.nfc.isBusy }
        }
        #expect(!busy)
        // The next page reads fine.
        rig.chip.setFaults(ChipFaults())
        let next = try await exchange(rig, messages: [read.replacingOccurrences(of: "\"r\"", with: "\"r2\"")]) { all in
            all.contains { $0.correlationId == "r2" && $0.type == .response }
        }
        #expect(next.first { $0.correlationId == "r2" && $0.type == .response }?.payload.status == .success)
        await rig.stop()
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
