import Foundation
import MRTD
import MRTDCrypto
import TestSupport
import TestTraits
import Testing

/// `gbgbridge mdoc read|verify` and `trust import --iaca` as users run them: exit statuses, JSON,
/// and what each refuses.
@Suite("gbgbridge mdoc and trust import --iaca", .serialized, .enabled(if: GBGBridgeBinary.isBuilt, "needs swift build (the gbgbridge binary)"))
struct MdocCommandTests {
    static let binary = GBGBridgeBinary.path
    static let iaca = TestFixtures.url("mdoc/iaca.cert.pem").path

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text.prefix(300))")
    }

    static func read(_ emulator: [String], _ arguments: [String]) async throws -> CommandOutcome {
        try await PCSCDHarness.withEmulatorCommand(emulator) {
            try await runCommand(binary, ["mdoc", "read", "--reader", PCSCDHarness.vpcdReaderName, "--timeout", "15", "--json"] + arguments, timeout: .seconds(90))
        }
    }

    @Test func readsAndVerifiesWithExitZero() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("mdoc-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let outcome = try await Self.read(["--mdoc-profile", "utopia-mdl", "--handover", "negotiated", "--device-auth", "mac"],
                                          ["--trust", Self.iaca, "--request", "age-over-18", "--save-session", work.path,
                                           "--portrait", work.appendingPathComponent("portrait.jpg").path])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try Self.json(outcome.standardOutput)
        #expect(report["issuer"] as? String == "valid")
        #expect(report["device"] as? String == "valid")
        #expect(report["verified"] as? Bool == true)
        let elements = try #require((report["elements"] as? [String: Any])?["org.iso.18013.5.1"] as? [String: Any])
        #expect(elements.keys.sorted() == ["age_over_18"])
        #expect(elements["age_over_18"] as? Bool == true)
        let portrait = try #require(report["portrait"] as? [String: Any])
        #expect(portrait["mimeType"] as? String == "image/jpeg")
        let saved = try Data(contentsOf: work.appendingPathComponent("portrait.jpg"))
        #expect(saved.starts(with: [0xFF, 0xD8]))
        // What was saved verifies again offline, and only with the reader's key for the MAC.
        let verify = try await runCommand(Self.binary, ["mdoc", "verify", "--device-response", work.appendingPathComponent("device-response.cbor").path,
                                                        "--session-transcript", work.appendingPathComponent("session-transcript.cbor").path,
                                                        "--ephemeral-reader-key", work.appendingPathComponent("ephemeral-reader-key.cbor").path,
                                                        "--trust", Self.iaca, "--json"])
        #expect(verify.status == 0, "\(verify.standardError)")
        let withoutKey = try await runCommand(Self.binary, ["mdoc", "verify", "--device-response", work.appendingPathComponent("device-response.cbor").path,
                                                            "--session-transcript", work.appendingPathComponent("session-transcript.cbor").path,
                                                            "--trust", Self.iaca, "--json"])
        #expect(withoutKey.status == 1)
        #expect(try Self.json(withoutKey.standardOutput)["device"] as? String == "invalid")
    }

    @Test func withoutItsIACATheReadIsUntrustedAndExitsOne() async throws {
        let outcome = try await Self.read(["--mdoc-profile", "utopia-mdl"], ["--trust", TestFixtures.url("mdoc/reader-root.cert.pem").path])
        #expect(outcome.status == 1)
        #expect(try Self.json(outcome.standardOutput)["issuer"] as? String == "untrusted")
    }

    @Test func aHolderThatDeclinesExitsFive() async throws {
        let outcome = try await Self.read(["--mdoc-profile", "utopia-mdl", "--hostile", "decline"], ["--trust", Self.iaca])
        #expect(outcome.status == 5, "\(outcome.standardError)")
        #expect(((try Self.json(outcome.standardOutput))["error"] as? [String: Any])?["code"] as? String == "MDOC_NO_DOCUMENT")
    }

    @Test func aPassportIsNoMdoc() async throws {
        let outcome = try await Self.read(["--passport", "utopia-td3-jpeg"], ["--trust", Self.iaca])
        #expect(outcome.status == 5, "\(outcome.standardError)")
    }

    @Test func badArgumentsExitTwo() async throws {
        let outcome = try await runCommand(Self.binary, ["mdoc", "read", "--request", "nosuch-preset", "--doctype", "x"])
        #expect(outcome.status == 2)
        let bad = try await runCommand(Self.binary, ["mdoc", "read", "--reader-key", "/nonexistent"])
        #expect(bad.status == 2)
        // The emulated wallet's BLE options: only for an mdoc holder, only nfc or ble, and BLE says
        // why it cannot start without BlueZ (no system bus here).
        let passport = try await runCommand(Self.binary, ["emulate", "--profile", "de-passport-2023", "--transport", "ble"])
        #expect(passport.status != 0 && passport.standardError.contains("go with an mdoc holder"), "\(passport.standardError)")
        let unknown = try await runCommand(Self.binary, ["emulate", "--mdoc-profile", "utopia-mdl", "--transport", "wifi"])
        #expect(unknown.status != 0 && unknown.standardError.contains("--transport is nfc or ble"), "\(unknown.standardError)")
        let noBus = try await runCommand(Self.binary, ["emulate", "--mdoc-profile", "utopia-mdl", "--transport", "ble"],
                                         environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/gbg-bus"])
        #expect(noBus.status == 2 && noBus.standardError.contains("--transport ble needs BlueZ"), "\(noBus.standardError)")
    }

    @Test(.needsSharedFixtures) func annexDVerifiesAndOneChangedByteWithholdsOneElement() async throws {
        let data = try Data(contentsOf: TestFixtures.sharedURL("mdoc-annex-d/vectors.json"))
        let vectors = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String]).compactMapValues(hexBytes)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("annex-d-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        func write(_ name: String, _ bytes: [UInt8]) throws -> String {
            let url = work.appendingPathComponent(name)
            try Data(bytes).write(to: url)
            return url.path
        }
        let key = try COSEKeyFile.encode(curve: .nistP256, point: [0x04] + (try #require(vectors["EPHEMERAL_READER_KEY_X"])) + (try #require(vectors["EPHEMERAL_READER_KEY_Y"])),
                                         scalar: try #require(vectors["EPHEMERAL_READER_KEY_D"]))
        let transcript = try write("transcript.cbor", try #require(vectors["SESSION_TRANSCRIPT_BYTES"]))
        let iaca = try write("iaca.der", try #require(vectors["IACA_CERT"]))
        let keyPath = try write("key.cbor", key)
        var response = try #require(vectors["DEVICE_RESPONSE"])
        let arguments = { (file: String) in ["mdoc", "verify", "--device-response", file, "--session-transcript", transcript,
                                             "--ephemeral-reader-key", keyPath, "--trust", iaca, "--at", "2020-10-01T14:00:00Z", "--json"] }
        let good = try await runCommand(Self.binary, arguments(try write("response.cbor", response)))
        #expect(good.status == 0, "\(good.standardError)")
        let at = try #require(response.firstRange(of: Array("Doe".utf8)))
        response[at.lowerBound] = UInt8(ascii: "R")
        let changed = try await runCommand(Self.binary, arguments(try write("changed.cbor", response)))
        #expect(changed.status == 1)
        let report = try Self.json(changed.standardOutput)
        #expect(report["issuer"] as? String == "valid")
        let withheld = try #require(report["withheld"] as? [[String: Any]])
        #expect(withheld.count == 1 && withheld.first?["element"] as? String == "family_name" && withheld.first?["reason"] as? String == "digest-mismatch")
        // Outside the signer's validity: expired.
        let later = try await runCommand(Self.binary, ["mdoc", "verify", "--device-response", try write("r2.cbor", try #require(vectors["DEVICE_RESPONSE"])),
                                                       "--session-transcript", transcript, "--ephemeral-reader-key", keyPath, "--trust", iaca, "--json"])
        #expect(later.status == 1)
        #expect(try Self.json(later.standardOutput)["issuer"] as? String == "expired")
    }

    @Test(.enabled(if: IndependentPython.available)) func trustImportTakesAnAnchoredIACAOrVICALIntoIacaOnly() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("iaca-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: store) }
        let unanchored = try await runCommand(Self.binary, ["trust", "import", "--iaca", "--store", store.path, Self.iaca])
        #expect(unanchored.status == 1)
        #expect(unanchored.standardOutput.contains("unanchored-iaca"))
        // A VICAL listing the IACA, signed by a VICAL signer whose CA is the anchor.
        let vical = store.deletingLastPathComponent().appendingPathComponent("\(UUID().uuidString).vical")
        let vicalCA = store.deletingLastPathComponent().appendingPathComponent("\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: vical); try? FileManager.default.removeItem(at: vicalCA) }
        let made = try await runCommand(IndependentPython.path, [MdocInteropTests.directory.appendingPathComponent("make_vical.py").path, vical.path, vicalCA.path, Self.iaca],
                                        directory: MdocInteropTests.directory)
        let fingerprint = made.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0 && fingerprint.count == 64, "\(made.standardError)")
        let refused = try await runCommand(Self.binary, ["trust", "import", "--iaca", "--store", store.path, vical.path])
        #expect(refused.status == 1 && refused.standardOutput.contains("unanchored-vical"))
        let taken = try await runCommand(Self.binary, ["trust", "import", "--iaca", "--store", store.path, "--anchor-sha256", fingerprint, vical.path])
        #expect(taken.status == 0, "\(taken.standardOutput)\(taken.standardError)")
        let files = try FileManager.default.contentsOfDirectory(atPath: store.appendingPathComponent("iaca").path)
        #expect(files.count == 1 && files.first?.hasPrefix("IACA-UT-") == true)
        // A passport never trusts an IACA: the store's CSCAs exclude iaca/.
        var passports = TrustStore()
        try passports.add(path: store)
        #expect(passports.certificates.isEmpty)
        // A changed byte in the VICAL's list: refused.
        var bytes = Array(try Data(contentsOf: vical))
        bytes[bytes.count / 2] ^= 0x01
        try Data(bytes).write(to: vical)
        let tampered = try await runCommand(Self.binary, ["trust", "import", "--iaca", "--store", store.path, "--anchor-sha256", fingerprint, vical.path])
        #expect(tampered.status == 1)
    }
}
