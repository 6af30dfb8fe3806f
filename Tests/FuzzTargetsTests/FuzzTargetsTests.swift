import Foundation
import FuzzTargets
import MRTDEmulator
import TestSupport
import Testing

/// The fuzz targets in an ordinary test build (issue 44): each runs its seeds, and the inputs of
/// earlier attacks — every hostile card's files, hostile pages' messages — go through the targets
/// that parse them without a crash. (Coverage-guided runs: scripts/fuzz.sh.)
@Suite("Fuzz targets: seeds and earlier attacks replayed")
struct FuzzTargetsTests {
    @Test("at least 15 targets, each named once")
    func targets() {
        #expect(FuzzTarget.all.count >= 15)
        #expect(Set(FuzzTarget.all.map(\.name)).count == FuzzTarget.all.count)
    }

    @Test("every target runs its seed corpus")
    func seeds() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-seeds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let counts = try FuzzSeeds.write(to: directory)
        for target in FuzzTarget.all {
            #expect((counts[target.name] ?? 0) > 0, "\(target.name) has no seeds")
            let folder = directory.appendingPathComponent(target.name)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] {
                target.run(Array(try Data(contentsOf: folder.appendingPathComponent(name))))
            }
        }
    }

    @Test("every hostile card's files through the parsers of their kind")
    func hostileCards() throws {
        let byFID: [UInt16: String] = [0x011E: "ef-com", 0x011D: "ef-sod", 0x0101: "dg1", 0x0102: "dg2", 0x0103: "biometrics",
                                       0x0104: "biometrics", 0x0107: "dg7", 0x010B: "dg11", 0x010C: "dg12", 0x010E: "security-infos",
                                       0x010F: "dg15"]
        for mode in HostileMode.allCases {
            var passport = try TestFixtures.passport("utopia-td3-pace")
            try passport.makeHostile(HostileCard(modes: [mode]), signer: try TestFixtures.documentSigner())
            for (fid, content) in passport.applicationFiles {
                guard let name = byFID[fid], let target = FuzzTarget.named(name) else { continue }
                target.run(Array(content.prefix(1 << 20)))
                FuzzTarget.named("ber-tlv")?.run(Array(content.prefix(1 << 16)))
            }
            for (_, content) in passport.masterFiles { FuzzTarget.named("security-infos")?.run(content) }
        }
    }

    @Test("hostile pages' messages through the bridge decoder")
    func hostilePages() {
        let target = FuzzTarget.named("bridge-message")
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        for message in [deep, #"{"id":"\#(String(repeating: "x", count: 1 << 20))","action":"nfc.read"}"#, "\u{FEFF}{}", #"{"id":1e999}"#,
                        #"{"id":"a","action":"nfc.read","payload":{"data":{"accessKey":{"mrz":"\#(String(repeating: "<", count: 10_000))"}}}}"#,
                        String(repeating: "\u{0}", count: 1_000), #"{"a":"\ud800"}"#] {
            target?.run(Array(message.utf8))
        }
    }
}
