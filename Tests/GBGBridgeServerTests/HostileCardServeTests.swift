import Foundation
import MRTDEmulator
import TestSupport
import Testing

/// `gbgbridge serve` against hostile cards, as a kiosk meets them: a real pcscd with the vpcd
/// driver, the chip in the test process, pages over real WebSockets. A chip that stops answering
/// costs a page its read deadline, never the reader: the next page is answered at once (not
/// BUSY), a page that goes away frees the reader within 2 s, and once the card has left the next
/// document reads. The host's peak memory stays under a fixed ceiling through every attack.
@Suite("gbgbridge serve against hostile cards", .serialized)
struct HostileCardServeTests {
    static let binary = CLIShutdownTests.binary
    static let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#
    /// The host's peak resident memory after every attack here (it idles at ~50 MiB).
    static let memoryCeilingKiB = 200 * 1_024

    static func chip(_ modes: [String], passport: String = "utopia-td3-pace") throws -> VirtualPassportChip {
        var emulated = try TestFixtures.passport(passport)
        var hostile = HostileCard()
        for mode in modes { try hostile.add(mode) }
        try emulated.makeHostile(hostile, signer: try TestFixtures.documentSigner())
        return VirtualPassportChip(passport: emulated)
    }

    /// The status, error code and seconds taken of one nfc.read on `page`.
    static func read(_ page: RawWebSocket, id: String, extra: String = "") async throws -> (status: String?, code: String?, seconds: Double) {
        let started = ContinuousClock.now
        await page.sendText(requestJSON("nfc.read", id: id, data: #"{"accessKey":\#(key),"timeoutSeconds":10\#(extra)}"#))
        let answer = try #require(await page.response(to: id), "no answer to \(id)")
        let payload = answer["payload"] as? [String: Any]
        let elapsed = ContinuousClock.now - started
        return (payload?["status"] as? String, (payload?["error"] as? [String: Any])?["code"] as? String,
                Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    static func page(_ serve: ServeProcess) async throws -> RawWebSocket {
        let script = try await waitForScript(port: serve.port)
        let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
        return try await RawWebSocket.connect(port: serve.port, path: "/gbg-bridge/ws?token=\(token)", origin: "http://127.0.0.1:\(serve.port)")
    }

    /// `VmHWM` of a process, in KiB.
    static func peakMemory(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// Puts `chip` into the vpcd reader in place of the card `client` serves.
    static func swap(_ client: inout VPCDClient<VirtualPassportChip>, for chip: VirtualPassportChip) async throws {
        client.stop()
        let next = VPCDClient(chip: chip, port: PCSCDHarness.vpcdPort)
        next.start()
        try #require(await next.waitUntilConnected(timeout: .seconds(10)))
        client = next
        try await Task.sleep(for: .milliseconds(600))  // pcscd polls its readers every 400 ms
    }

    @Test("a stalled chip: the page gets CARD_TIMEOUT at its readTimeoutSeconds, the next page is answered at once, a page that goes away frees the reader",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func stalledChip() async throws {
        try await PCSCDHarness.withEmulatedCard(try Self.chip(["stall-after-access"])) { first in
            let serve = try await ServeProcess.start(["serve", "--port", "0", "--config", "/dev/null",
                                                      "--trust", TestFixtures.url("pki/csca.cert.pem").path])
            defer { serve.stop() }
            let page = try await Self.page(serve)
            let timedOut = try await Self.read(page, id: "stall", extra: #","readTimeoutSeconds":5"#)
            #expect(timedOut.status == "error" && timedOut.code == "CARD_TIMEOUT", "\(timedOut)")
            #expect(timedOut.seconds < 10, "the read ended \(timedOut.seconds) s after it began (readTimeoutSeconds 5)")

            // The chip is still in the reader, still stalled: the next page is told so at once.
            let other = try await Self.page(serve)
            let next = try await Self.read(other, id: "next", extra: #","readTimeoutSeconds":5"#)
            #expect(next.code != "BUSY", "\(next)")
            #expect(next.code == "CARD_TIMEOUT", "\(next)")

            // The card leaves; a good one comes: it reads.
            var client = first
            try await Self.swap(&client, for: VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace")))
            let good = try await Self.read(other, id: "good")
            #expect(good.status == "success", "\(good)")

            // A page that goes away in the middle of a stalled read: within 2 s the reader is free.
            try await Self.swap(&client, for: try Self.chip(["stall-after-access"]))
            let leaving = try await Self.page(serve)
            await leaving.sendText(requestJSON("nfc.read", id: "leaving", data: #"{"accessKey":\#(Self.key),"timeoutSeconds":10,"readTimeoutSeconds":60}"#))
            try await Task.sleep(for: .seconds(2))
            leaving.socket.abortWithReset()
            try await Task.sleep(for: .seconds(2))
            let after = try await Self.read(other, id: "after", extra: #","readTimeoutSeconds":5"#)
            #expect(after.code != "BUSY", "the reader was still busy 2 s after its page went away: \(after)")
            client.stop()

            // Nothing of the document in the host's log.
            for secret in ["L898902C3", "740812", "120415", "ERIKSSON"] { #expect(!serve.standardError.contains(secret), "\(secret)") }
        }
    }

    @Test("every hostile card, one after the other, through one host: bounded memory, and the next document still reads",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func everyAttackThroughOneHost() async throws {
        let attacks: [[String]] = [["lying-length"], ["indefinite-length"], ["huge-file"], ["overlong-answer"], ["wrong-length-ladder"],
                                   ["exact-length-chase"], ["many-dh-keys"], ["huge-dh-key"], ["huge-rsa-key"], ["uncovered-dg11"],
                                   ["bare-6282"], ["unauthenticated-6282"], ["broken-dg11"], ["altered-dg11", "altered-dg12"],
                                   ["iris-flood"], ["finger-flood"], ["scan-bomb-face"], ["stall-at-apdu=20"]]
        try await PCSCDHarness.withEmulatedCard(VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace"))) { first in
            let serve = try await ServeProcess.start(["serve", "--port", "0", "--config", "/dev/null", "--read-timeout", "5",
                                                      "--trust", TestFixtures.url("pki/csca.cert.pem").path])
            defer { serve.stop() }
            let page = try await Self.page(serve)
            var client = first
            for (index, modes) in attacks.enumerated() {
                try await Self.swap(&client, for: try Self.chip(modes))
                let answer = try await Self.read(page, id: "attack\(index)")
                #expect(answer.status == "success" || ["CHIP_ERROR", "CARD_TIMEOUT"].contains(answer.code ?? ""), "\(modes): \(answer)")
                #expect(answer.seconds < 10, "\(modes): \(answer.seconds) s")
            }
            try await Self.swap(&client, for: VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace")))
            let good = try await Self.read(page, id: "good", extra: #","readTimeoutSeconds":60"#)
            #expect(good.status == "success", "\(good)")
            client.stop()
            let peak = try #require(Self.peakMemory(serve.process.pid))
            #expect(peak < Self.memoryCeilingKiB, "the host peaked at \(peak / 1024) MiB")
            for secret in ["L898902C3", "740812", "120415", "ERIKSSON", "MALLORY"] { #expect(!serve.standardError.contains(secret), "\(secret)") }
        }
    }

    @Test("readTimeoutSeconds outside 5…600 is INVALID_REQUEST",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func readTimeoutBounds() async throws {
        let serve = try await ServeProcess.start(["serve", "--port", "0", "--config", "/dev/null"])
        defer { serve.stop() }
        let page = try await Self.page(serve)
        for (index, value) in ["4", "601", "\"60\"", "-1", "1e999"].enumerated() {
            let answer = try await Self.read(page, id: "bad\(index)", extra: #","readTimeoutSeconds":\#(value)"#)
            #expect(answer.code == "INVALID_REQUEST", "\(value): \(answer)")
        }
    }
}
