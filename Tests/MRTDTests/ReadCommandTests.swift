import Foundation
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
