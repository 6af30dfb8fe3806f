import Foundation
import MRTDEmulator
import SmartCard
import Synchronization
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

@Suite("APDU trace (read --trace): every exchange, no secrets")
struct APDUTraceTests {
    static let trust = TestFixtures.testTrustStore

    struct Traced {
        let result: PassportReadResult
        let lines: [String]
        let records: [[String: Any]]
        let wire: [(command: [UInt8], response: [UInt8])]
        let chip: VirtualPassportChip
    }

    func tracedRead(_ name: String, key: AccessKey? = nil, quirks: ChipQuirks? = nil) async throws -> Traced {
        var description = try TestFixtures.description(name)
        if let quirks { description.quirks = quirks }
        let chip = VirtualPassportChip(passport: try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                                      signer: try TestFixtures.documentSigner()))
        let lines = Mutex<[String]>([])
        let trace = APDUTrace { line in lines.withLock { $0.append(line) } }
        let connection = RecordingConnection(EmulatedCardConnection(chip: chip))
        let result = try await PassportReader(connection: connection, accessKey: try key ?? TestFixtures.accessKey(name),
                                              options: ReadOptions.forTest(trustStore: Self.trust, trace: trace)).read()
        let text = lines.withLock { $0 }
        let records = try text.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        return Traced(result: result, lines: text, records: records, wire: connection.exchanges.withLock { $0 }, chip: chip)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined() }

    @Test("one line per exchange, in order, with the step, file and offset", arguments: ["utopia-td3-jpeg", "utopia-td3-pace"])
    func everyExchange(name: String) async throws {
        let traced = try await tracedRead(name)
        #expect(traced.records.count == traced.result.statistics.apdus)
        #expect(traced.records.map { $0["seq"] as? Int } == Array(1...traced.records.count).map { Optional($0) })
        for record in traced.records {
            #expect(record["time"] is String && record["elapsedMs"] is NSNumber && record["durationMs"] is NSNumber)
            #expect(record["protected"] is Bool && record["command"] is String && record["sw"] is String)
        }
        let steps = Set(traced.records.compactMap { $0["step"] as? String })
        #expect(steps.isSuperset(of: ["select", "read", "CA", "AA"]) || !steps.contains("CA") && name == "utopia-td3-jpeg")
        #expect(steps.contains(name == "utopia-td3-pace" ? "PACE" : "BAC"))
        // Every file read shows as reads of that file, from offset 0 up.
        for file in ["EF.COM", "EF.SOD", "DG1", "DG2"] {
            let reads = traced.records.filter { $0["step"] as? String == "read" && $0["file"] as? String == file }
            #expect(!reads.isEmpty, "\(file)")
            #expect(reads.first?["offset"] as? Int == 0, "\(file)")
        }
        let protectedReads = traced.records.filter { $0["step"] as? String == "read" && $0["protected"] as? Bool == true }
        #expect(!protectedReads.isEmpty)
        #expect(protectedReads.allSatisfy { $0["status"] is String })
    }

    @Test("no access key, nonce, plain access-control data or decrypted content", arguments: ["utopia-td3-jpeg", "utopia-td3-pace", "utopia-id-pace-only"])
    func noSecrets(name: String) async throws {
        let traced = try await tracedRead(name)
        let text = traced.lines.joined(separator: "\n")
        // Decrypted file contents: no 12-byte run of any file read under secure messaging.
        for (file, content) in traced.result.files where file != .cardAccess {
            for start in stride(from: 0, to: max(0, content.count - 12), by: 97) {
                #expect(!text.contains(Self.hex(Array(content[start..<start + 12]))), "\(file) content at \(start)")
            }
        }
        // The access key, in ASCII and as hex.
        let description = try TestFixtures.description(name)
        var secrets = description.mrz.lines.map { String($0.prefix(30)) }
        if let can = description.can { secrets.append(can) }
        for secret in secrets {
            #expect(!text.contains(secret))
            #expect(!text.contains(Self.hex(Array(secret.utf8))))
        }
        // The plain access-control exchanges: their data never appears (only lengths).
        for (command, response) in traced.wire where command[0] & 0x0C == 0 && [0x84, 0x82, 0x86, 0x88].contains(command[1]) {
            // Runs shorter than 8 bytes (GENERAL AUTHENTICATE's empty 7C00) can occur in ciphertext by
            // chance; the structural check below covers them.
            if command.count > 5 + 8, [0x82, 0x86, 0x88].contains(command[1]) {
                #expect(!text.contains(Self.hex(Array(command[5..<min(command.count, 5 + Int(command[4]))]))), "command data of INS \(command[1])")
            }
            if response.count > 2 + 8 {
                #expect(!text.contains(Self.hex(Array(response.dropLast(2)))), "response data of INS \(command[1])")
            }
        }
        let redacted = traced.records.filter { $0["commandRedacted"] != nil || $0["responseRedacted"] != nil }
        #expect(!redacted.isEmpty)
        // Structurally: an unprotected access-control command shows its 4-byte header only, its answer the status only.
        for record in traced.records where record["protected"] as? Bool == false {
            guard let command = record["command"] as? String, command.count >= 4,
                  let ins = UInt8(command.dropFirst(2).prefix(2), radix: 16), [0x82, 0x86, 0x88].contains(ins) else { continue }
            #expect(command.count == 8, "\(record)")
            #expect((record["response"] as? String)?.count == 4, "\(record)")
        }
    }

    @Test("tag loss shows as cardRemoved and cardBack lines; the failed exchange carries its error")
    func tagLossIsTraced() async throws {
        var quirks = ChipQuirks()
        quirks.tagLossAfterAPDUs = 8
        quirks.tagLossReturnAfterMilliseconds = 0
        var description = try TestFixtures.description("utopia-td3-jpeg")
        description.quirks = quirks
        let chip = VirtualPassportChip(passport: try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                                      signer: try TestFixtures.documentSigner()))
        let backend = EmulatedReaderBackend(chip: chip)
        let lines = Mutex<[String]>([])
        let name = backend.readerName
        let result = try await PassportReader(connection: try await backend.connect(reader: name),
                                              accessKey: try TestFixtures.accessKey("utopia-td3-jpeg"),
                                              options: ReadOptions.forTest(trustStore: Self.trust, trace: APDUTrace { line in lines.withLock { $0.append(line) } }),
                                              reconnect: { try await backend.reconnect(reader: name, until: .now + .seconds(5)) }).read()
        #expect(result.statistics.reconnections == 1)
        let text = lines.withLock { $0 }
        let removed = try #require(text.firstIndex { $0.contains(#""event":"cardRemoved""#) })
        #expect(text[removed - 1].contains(#""error":"CARD_REMOVED"#))
        #expect(text[removed...].contains { $0.contains(#""event":"cardBack""#) })
    }

    @Test("a trace file is created for its owner only, and truncated when it exists")
    func fileIsPrivate() throws {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("trace-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(repeating: 0x41, count: 1000).write(to: url)
        let trace = try APDUTrace(url: url)
        trace.note("start", ["reader": "a \"quoted\"\nname"])
        trace.close()
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600 || (attributes[.size] as? Int ?? 0) < 1000)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(!text.contains("AAAA"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["reader"] as? String == "a \"quoted\"\nname")
        #expect(throws: MRTDError.self) { _ = try APDUTrace(url: URL(fileURLWithPath: "/nonexistent-directory/trace.jsonl")) }
    }

    @Test("the steps are named from the command: SELECT, READ BINARY with its offset, BAC, MSE, AA")
    func stepNames() {
        let context = APDUTrace.TraceContext(step: "PACE", detail: "mapping", file: "DG2")
        #expect(APDUTrace.step(of: .selectFile(0x011E), context: context) == ("select", "011E"))
        #expect(APDUTrace.step(of: CommandAPDU(ins: 0x86, p1: 0, p2: 0, data: [0x7C, 0x00]), context: context) == ("PACE", "mapping"))
        #expect(APDUTrace.step(of: CommandAPDU(ins: 0x22, p1: 0x41, p2: 0xA6), context: APDUTrace.TraceContext(step: "CA")) == ("CA", "MSE:Set KAT"))
        #expect(APDUTrace.offset(of: .readBinary(offset: 0x1234, length: 16)) == 0x1234)
        #expect(APDUTrace.offset(of: .readBinary(sfi: 2, offset: 0, length: 4)) == 0)
        #expect(APDUTrace.offset(of: CommandAPDU(ins: 0xB1, p1: 0, p2: 0, data: [0x54, 0x02, 0x80, 0x10])) == 0x8010)
    }
}
