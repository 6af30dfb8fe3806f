import Foundation
import MRTDEmulator
import TestSupport
import Testing

/// The command line as a rig uses it: `gbgbridge emulate` with field-behaviour flags in a real
/// pcscd, `gbgbridge read` against it.
@Suite("gbgbridge emulate (quirk flags) and read through pcscd", .serialized,
       .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
struct ReadCommandTests {
    static let anna = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"

    func read(_ extra: [String] = []) async throws -> CommandOutcome {
        try await runCommand(GBGBridgeBinary.path, ["read", "--reader", PCSCDHarness.vpcdReaderName, "--mrz", Self.anna, "--json",
                                                    "--trust", "Fixtures/pki/csca.cert.pem", "--timeout", "10"] + extra)
    }

    @Test("quirk flags combined, and the card leaving mid-read: read goes on, says so, traces it")
    func quirkFlagsAndTagLoss() async throws {
        let trace = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("read-trace-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: trace) }
        let outcome = try await PCSCDHarness.withEmulatorCommand([
            "--passport", "Fixtures/passports/utopia-td3-pace.json", "--no-extended-length", "--max-read-length", "160",
            "--no-short-file-identifier", "6A82", "--plain-errors", "--plain-errors-not-counted-in-ssc", "--refuse-le00",
            "--exact-length-hint", "--select-le", "required", "--pace-parameter-id-in-mse", "required",
            "--tag-loss-after-apdus", "20", "--tag-loss-return-after-ms", "300",
        ]) {
            try await read(["--trace", trace.path, "--data-groups", "DG1,DG2,DG5,DG11"])
        }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        #expect(report["reconnections"] as? Int == 1)
        #expect(report["accessControl"] as? String == "PACE", "\(report["accessControlNote"] ?? "")")
        let verification = try #require(report["verification"] as? [String: Any])
        for check in ["passive", "chip", "active", "cardAccess"] {
            #expect((verification[check] as? [String: Any])?["status"] as? String == "valid", "\(check): \(verification[check] ?? "")")
        }
        // Without a terminal the request to put the document back is one plain line.
        #expect(outcome.standardError.contains("Put it back on the reader"), "\(outcome.standardError)")
        let lines = try String(contentsOf: trace, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.contains(#""event":"cardRemoved""#) })
        #expect(lines.last?.contains(#""reconnections":"1""#) == true)
    }

    @Test("emulate --profile serves a field profile through pcscd, --latency and --bit-rate slow it down like a chip")
    func profileWithTiming() async throws {
        // NL passport 2025: PACE on brainpoolP320r1, CA on brainpoolP512r1, LDS 1.8.
        let description = try JSONSerialization.jsonObject(with: Data(contentsOf: TestFixtures.url("passports/field/nl-passport-2025.json"))) as? [String: Any]
        let mrz = try #require(description?["mrz"] as? [String]).joined(separator: "\n")
        let outcome = try await PCSCDHarness.withEmulatorCommand(["--profile", "nl-passport-2025", "--latency", "2", "--bit-rate", "424"]) {
            try await runCommand(GBGBridgeBinary.path, ["read", "--reader", PCSCDHarness.vpcdReaderName, "--mrz", mrz, "--json",
                                                        "--trust", "Fixtures/pki/csca.cert.pem", "--timeout", "20", "--data-groups", "DG1"])
        }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        #expect(report["accessControl"] as? String == "PACE")
        let verification = try #require(report["verification"] as? [String: Any])
        #expect((verification["passive"] as? [String: Any])?["status"] as? String == "valid")
        #expect((verification["chip"] as? [String: Any])?["status"] as? String == "valid")
        #expect((verification["active"] as? [String: Any])?["status"] as? String == "notSupported")
    }

    @Test("read --evidence with a backend's challenge, then verify --evidence: valid with that challenge, exit 6 with another")
    func evidenceRoundTrip() async throws {
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("evidence-\(UUID().uuidString).json")
        let dump = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("dump-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(at: dump)
        }
        let challenge = "3q2+78r+ur4="
        let outcome = try await PCSCDHarness.withEmulatorCommand(["--passport", "Fixtures/passports/utopia-demo.json"]) {
            try await read(["--evidence", file.path, "--challenge", challenge, "--dump", dump.path,
                            "--photo", dump.appendingPathComponent("face.jpg").path])
        }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        // Personal data (MRZ, face): readable by the owner only.
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let dg2 = try FileManager.default.attributesOfItem(atPath: dump.appendingPathComponent("DG2.bin").path)[.posixPermissions] as? Int
        #expect(dg2 == 0o600)
        let photo = try FileManager.default.attributesOfItem(atPath: dump.appendingPathComponent("face.jpg").path)
        #expect(photo[.posixPermissions] as? Int == 0o600 && (photo[.size] as? Int ?? 0) > 1_000)
        let verifiedDump = try await runCommand(GBGBridgeBinary.path, ["verify", "--dump", dump.path, "--trust", "Fixtures/pki/csca.cert.pem"],
                                                timeout: .seconds(30))
        #expect(verifiedDump.status == 0 && verifiedDump.standardOutput.contains("Passive authentication: valid"), "\(verifiedDump.standardOutput)")
        let evidence = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
        let chip = try #require(evidence?["chip"] as? [String: Any])
        #expect((chip["activeAuthentication"] as? [String: Any])?["challenge"] as? String == challenge)
        let verify = ["verify", "--evidence", file.path, "--trust", "Fixtures/pki/csca.cert.pem", "--json"]
        let good = try await runCommand(GBGBridgeBinary.path, verify + ["--challenge", challenge], timeout: .seconds(30))
        #expect(good.status == 0, "\(good.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(good.standardOutput.utf8)) as? [String: Any])
        let verification = try #require(report["verification"] as? [String: Any])
        #expect((verification["passive"] as? [String: Any])?["status"] as? String == "valid")
        #expect((verification["active"] as? [String: Any])?["status"] as? String == "valid")
        #expect((verification["chip"] as? [String: Any])?["status"] as? String == "notChecked")
        let replay = try await runCommand(GBGBridgeBinary.path, verify + ["--challenge", "AAAAAAAAAAA="], timeout: .seconds(30))
        #expect(replay.status == 6, "\(replay.standardOutput)")
        let text = try await runCommand(GBGBridgeBinary.path, ["verify", "--evidence", file.path, "--trust", "Fixtures/pki/csca.cert.pem"], timeout: .seconds(30))
        #expect(text.status == 0 && text.standardOutput.contains("Active authentication: valid"), "\(text.standardOutput)")
        let bad = try await runCommand(GBGBridgeBinary.path, ["verify", "--evidence", file.path, "--trust", "Fixtures/pki/csca.cert.pem",
                                                              "--challenge", "short"], timeout: .seconds(30))
        #expect(bad.status != 0 && bad.standardError.contains("--challenge"))
    }

    @Test("read runs in the lean gbgbridge-read binary: the same help, usage errors and exit statuses as in process")
    func leanReaderAnswersAsTheFullBinary() async throws {
        let lean = URL(fileURLWithPath: GBGBridgeBinary.path).deletingLastPathComponent().appendingPathComponent("gbgbridge-read").path
        #expect(FileManager.default.isExecutableFile(atPath: lean), "swift build builds gbgbridge-read beside gbgbridge")
        for arguments in [["read", "--help"], ["read", "--mrz", "short"], ["read", "--can", "123456", "--reader", "No Such Reader", "--timeout", "1"]] {
            let execed = try await runCommand(GBGBridgeBinary.path, arguments, timeout: .seconds(30))
            let inProcess = try await runCommand(GBGBridgeBinary.path, arguments, timeout: .seconds(30), environment: ["GBGBRIDGE_READ_IN_PROCESS": "1"])
            #expect(execed.status == inProcess.status, "\(arguments)")
            #expect(execed.standardOutput == inProcess.standardOutput, "\(arguments)")
            #expect(execed.standardError.prefix(200) == inProcess.standardError.prefix(200), "\(arguments)")
        }
        let usage = try await runCommand(GBGBridgeBinary.path, ["read", "--mrz", "short"], timeout: .seconds(30))
        #expect(usage.status == 2, "usage errors exit 2 from the lean binary too: \(usage.standardError)")
        #expect(usage.standardError.contains("gbgbridge read"), "\(usage.standardError)")
    }

    @Test("emulate --help lists every field profile; bad profile, latency and bit rate values are refused by name")
    func profileAndTimingUsage() async throws {
        let help = try await runCommand(GBGBridgeBinary.path, ["emulate", "--help"], timeout: .seconds(20))
        for name in FieldProfiles.names { #expect(help.standardOutput.contains(name), "\(name)") }
        #expect(help.standardOutput.contains("--latency") && help.standardOutput.contains("--bit-rate"))
        for (arguments, mentions) in [(["--profile", "xx-passport-1999"], "no field profile 'xx-passport-1999'"),
                                      (["--profile", "us-passport-2021", "--passport", "Fixtures/passports/utopia-td3-jpeg.json"], "exactly one of"),
                                      (["--profile", "us-passport-2021", "--bit-rate", "100"], "--bit-rate"),
                                      (["--profile", "us-passport-2021", "--bit-rate", "106", "--frame-size", "8"], "--frame-size"),
                                      (["--profile", "us-passport-2021", "--latency", "-1"], "--latency")] {
            let outcome = try await runCommand(GBGBridgeBinary.path, ["emulate"] + arguments, timeout: .seconds(20))
            #expect(outcome.status != 0, "\(arguments)")
            #expect(outcome.standardError.contains(mentions), "\(arguments): \(outcome.standardError)")
        }
    }

    @Test("bad quirk values are refused with the flag's name, exit 64-style usage error")
    func badQuirkValues() async throws {
        for (arguments, mentions) in [(["--no-short-file-identifier", "9000"], "--no-short-file-identifier"),
                                      (["--select-le", "sometimes"], "--select-le"),
                                      (["--plain-errors-end-session"], "--plain-errors"),
                                      (["--tag-loss-after-apdus", "0"], "--tag-loss-after-apdus")] {
            let outcome = try await runCommand(GBGBridgeBinary.path, ["emulate", "--passport", "Fixtures/passports/utopia-td3-jpeg.json"] + arguments,
                                               timeout: .seconds(20))
            #expect(outcome.status != 0, "\(arguments)")
            #expect(outcome.standardError.contains(mentions), "\(arguments): \(outcome.standardError)")
        }
    }
}
