import Foundation
import TestSupport
import Testing

/// The acceptance path for Extended Access Control, as an operator runs it: a CVCA → DV → IS chain
/// made with OpenPACE's cvc-create, the CVCA put on `gbgbridge emulate --eac-cvca`, and `gbgbridge
/// read --terminal-certificates … --terminal-key …` through pcscd — with the key in a PKCS#8 file
/// and behind an external signer command — and the refusals.
@Suite("gbgbridge read with Terminal Authentication", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cvc-create"), "needs cvc-create (package openpace)"),
       .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
struct ReadTerminalCommandTests {
    static func run(_ tool: String, _ arguments: [String], in directory: URL) async throws {
        let outcome = try await runCommand("/usr/bin/env", ["-C", directory.path, tool] + arguments, timeout: .seconds(60))
        try #require(outcome.status == 0, "\(tool): \(outcome.standardError)")
    }

    /// A chain in a fresh directory: CVCA (DG3+DG4), DV, and an IS with `rights`; brainpoolP256r1
    /// keys with ECDSA SHA-256, or RSA keys (`rsaBits`) with PKCS#1 v1.5 SHA-256.
    static func chain(isRights: [String] = ["--read-finger", "--read-iris"], rsaBits: Int? = nil) async throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ta-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("terminal"), withIntermediateDirectories: true)
        let scheme = rsaBits == nil ? "--scheme=ECDSA_SHA_256" : "--scheme=RSA_v1_5_SHA_256"
        let keyOptions = rsaBits.map { ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\($0)"] }
            ?? ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:brainpoolP256r1"]
        try await run("openssl", ["genpkey"] + keyOptions + ["-outform", "DER", "-out", "cvca.pkcs8"], in: directory)
        try await run("cvc-create", ["--role=cvca", "--type=is", "--chr=UTCVCA00007", "--expires=401231", "--sign-with=cvca.pkcs8",
                                     scheme, "--read-finger", "--read-iris"], in: directory)
        try await run("cvc-create", ["--role=dv_domestic", "--chr=UTDVIS00007", "--expires=391231", "--sign-with=cvca.pkcs8",
                                     "--sign-as=UTCVCA00007.cvcert", "--read-finger", "--read-iris", "--out-key=dv.pkcs8",
                                     "--out-cert=terminal/UTDVIS00007.cvcert", scheme], in: directory)
        try await run("cvc-create", ["--role=terminal", "--chr=UTIS0000007", "--expires=351231", "--sign-with=dv.pkcs8",
                                     "--sign-as=terminal/UTDVIS00007.cvcert", "--out-key=is.pkcs8", "--out-cert=terminal/UTIS0000007.cvcert",
                                     scheme] + isRights, in: directory)
        return directory
    }

    static func read(_ extra: [String], environment: [String: String] = [:],
                     key: [String] = ["--document-number", "L898902C3", "--birth-date", "740812", "--expiry-date", "120415"]) async throws -> CommandOutcome {
        try await runCommand(GBGBridgeBinary.path, ["read"] + key + ["--trust", "Fixtures/pki/csca.cert.pem", "--timeout", "10", "--json"] + extra,
                             environment: environment)
    }

    @Test("field profiles: a DE passport (PACE-CAM, then CA for TA) and an FI passport (PACE-CAM only, short APDUs, an RSA chain sent in command chains)")
    func fieldProfiles() async throws {
        let ecdsa = try await Self.chain()
        let rsa = try await Self.chain(rsaBits: 2048)
        defer {
            try? FileManager.default.removeItem(at: ecdsa)
            try? FileManager.default.removeItem(at: rsa)
        }
        for (profile, directory, short, key) in [
            ("de-passport-2023", ecdsa, false, ["--document-number", "FDE1296", "--birth-date", "780909", "--expiry-date", "330615"]),
            ("fi-passport-2024", rsa, true, ["--document-number", "FFI1185", "--birth-date", "750606", "--expiry-date", "340615"]),
        ] {
            let outcome = try await PCSCDHarness.withEmulatorCommand(
                ["--profile", profile, "--eac-cvca", directory.appendingPathComponent("UTCVCA00007.cvcert").path] + (short ? ["--no-extended-length"] : [])
            ) {
                try await Self.read(["--terminal-certificates", directory.appendingPathComponent("terminal").path,
                                     "--terminal-key", directory.appendingPathComponent("is.pkcs8").path], key: key)
            }
            #expect(outcome.status == 0, "\(profile): \(outcome.standardError)")
            let (terminal, groups) = try Self.report(outcome)
            #expect(terminal["status"] as? String == "valid", "\(profile): \(terminal)")
            #expect(groups.contains("DG3") && groups.contains("DG4"), "\(profile): \(groups)")
        }
    }

    static func report(_ outcome: CommandOutcome) throws -> (terminal: [String: Any], groups: [String]) {
        let report = try #require((try? JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8))) as? [String: Any],
                                  "not a JSON report (exit \(outcome.status)): \(outcome.standardOutput) \(outcome.standardError)")
        let terminal = try #require((report["verification"] as? [String: Any])?["terminal"] as? [String: Any])
        return (terminal, report["dataGroupsRead"] as? [String] ?? [])
    }

    @Test("a valid chain reads DG3 and DG4: key in a PKCS#8 file, and behind exec:")
    func validChain() async throws {
        let directory = try await Self.chain()
        defer { try? FileManager.default.removeItem(at: directory) }
        let dump = directory.appendingPathComponent("dump")
        // An external signer: Python's cryptography signs (plain r‖s, hex), the host never sees the key.
        let signer = directory.appendingPathComponent("sign.py")
        try Data("""
            import sys
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec, utils
            key = serialization.load_der_private_key(open(sys.argv[1], "rb").read(), None)
            r, s = utils.decode_dss_signature(key.sign(sys.stdin.buffer.read(), ec.ECDSA(hashes.SHA256())))
            size = (key.curve.key_size + 7) // 8
            print((r.to_bytes(size, "big") + s.to_bytes(size, "big")).hex())
            """.utf8).write(to: signer)
        let (file, exec) = try await PCSCDHarness.withEmulatorCommand([
            "--passport", "Fixtures/passports/utopia-demo.json", "--eac-cvca", directory.appendingPathComponent("UTCVCA00007.cvcert").path,
        ]) {
            let file = try await Self.read(["--terminal-certificates", directory.appendingPathComponent("terminal").path,
                                            "--terminal-key", directory.appendingPathComponent("is.pkcs8").path, "--dump", dump.path])
            let exec = try await Self.read(["--terminal-certificates", directory.appendingPathComponent("terminal").path,
                                            "--terminal-key", "exec:/usr/bin/python3 \(signer.path) \(directory.appendingPathComponent("is.pkcs8").path)"])
            return (file, exec)
        }
        for outcome in [file, exec] {
            #expect(outcome.status == 0, "\(outcome.standardError)")
            let (terminal, groups) = try Self.report(outcome)
            #expect(terminal["status"] as? String == "valid", "\(terminal)")
            #expect(groups.contains("DG3") && groups.contains("DG4"), "\(groups)")
        }
        #expect(FileManager.default.fileExists(atPath: dump.appendingPathComponent("DG3.bin").path))
        #expect(FileManager.default.fileExists(atPath: dump.appendingPathComponent("DG4.bin").path))
    }

    @Test("the text summary names the fingerprints and irises read")
    func textSummary() async throws {
        let directory = try await Self.chain()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outcome = try await PCSCDHarness.withEmulatorCommand([
            "--passport", "Fixtures/passports/utopia-demo.json", "--eac-cvca", directory.appendingPathComponent("UTCVCA00007.cvcert").path,
        ]) {
            try await runCommand(GBGBridgeBinary.path, ["read", "--document-number", "L898902C3", "--birth-date", "740812", "--expiry-date", "120415",
                                                        "--trust", "Fixtures/pki/csca.cert.pem", "--timeout", "10",
                                                        "--terminal-certificates", directory.appendingPathComponent("terminal").path,
                                                        "--terminal-key", directory.appendingPathComponent("is.pkcs8").path])
        }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput.contains("Fingerprints   right index finger (raw 64×64), left index finger (raw 64×64)"), "\(outcome.standardOutput)")
        #expect(outcome.standardOutput.contains("Irises         right eye (raw"), "\(outcome.standardOutput)")
        #expect(outcome.standardOutput.contains("Terminal       valid"), "\(outcome.standardOutput)")
    }

    @Test("refusals: an IS without finger rights, a chain to another CVCA, a signer that fails; the rest is read")
    func refusals() async throws {
        let directory = try await Self.chain(isRights: ["--read-iris"])
        let other = try await Self.chain()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: other)
        }
        let outcomes = try await PCSCDHarness.withEmulatorCommand([
            "--passport", "Fixtures/passports/utopia-demo.json", "--eac-cvca", directory.appendingPathComponent("UTCVCA00007.cvcert").path,
        ]) {
            [
                try await Self.read(["--terminal-certificates", directory.appendingPathComponent("terminal").path,
                                     "--terminal-key", directory.appendingPathComponent("is.pkcs8").path]),
                // Same names, another CVCA's keys: the chip's signature checks fail.
                try await Self.read(["--terminal-certificates", other.appendingPathComponent("terminal").path,
                                     "--terminal-key", other.appendingPathComponent("is.pkcs8").path]),
                try await Self.read(["--terminal-certificates", directory.appendingPathComponent("terminal").path,
                                     "--terminal-key", "exec:echo 'the HSM is offline' >&2; exit 3"]),
            ]
        }
        let (irisOnly, irisGroups) = try Self.report(outcomes[0])
        #expect(irisOnly["status"] as? String == "valid")
        #expect(irisGroups.contains("DG4") && !irisGroups.contains("DG3"), "\(irisGroups)")
        let (wrongCVCA, wrongGroups) = try Self.report(outcomes[1])
        #expect(wrongCVCA["status"] as? String == "invalid")
        #expect((wrongCVCA["detail"] as? String)?.contains("PSO:Verify Certificate") == true, "\(wrongCVCA)")
        #expect(!wrongGroups.contains("DG3") && wrongGroups.contains("DG1") && wrongGroups.contains("DG2"))
        let (failedSigner, _) = try Self.report(outcomes[2])
        #expect(failedSigner["status"] as? String == "invalid")
        #expect((failedSigner["detail"] as? String)?.contains("the HSM is offline") == true, "\(failedSigner)")
        for outcome in outcomes { #expect(outcome.status == 0, "TA refused is reported, not a failed read: \(outcome.standardError)") }
    }

    @Test("bad terminal options are refused before any card is touched")
    func badOptions() async throws {
        let onlyKey = try await runCommand(GBGBridgeBinary.path, ["read", "--can", "123456", "--terminal-key", "x.pkcs8"])
        #expect(onlyKey.status != 0 && onlyKey.standardError.contains("--terminal-certificates and --terminal-key go together"))
        let missing = try await runCommand(GBGBridgeBinary.path, ["read", "--can", "123456", "--terminal-certificates", "/nonexistent.cvcert",
                                                                   "--terminal-key", "x.pkcs8", "--timeout", "1"])
        #expect(missing.status == 2, "\(missing.standardError)")
        #expect(missing.standardError.contains("/nonexistent.cvcert does not exist"), "\(missing.standardError)")
        let noCVCA = try await runCommand(GBGBridgeBinary.path, ["emulate", "--passport", "Fixtures/passports/utopia-demo.json",
                                                                  "--eac-cvca", "Fixtures/cvc/UTIS0000001.cvcert"])
        #expect(noCVCA.status != 0 && noCVCA.standardError.contains("not a CVCA's"), "\(noCVCA.standardError)")
    }

    static let softHSM = "/usr/lib/softhsm/libsofthsm2.so"

    @Test("the key in a PKCS#11 token (SoftHSM2), named by a pkcs11: URI; a wrong PIN is refused",
          .enabled(if: FileManager.default.fileExists(atPath: softHSM) && FileManager.default.isExecutableFile(atPath: "/usr/bin/softhsm2-util"),
                   "needs SoftHSM2 (package softhsm2; scripts/install-deps.sh)"))
    func keyInSoftHSM() async throws {
        let directory = try await Self.chain()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A private SoftHSM2 token store for this test.
        let tokens = directory.appendingPathComponent("tokens")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: true)
        let conf = directory.appendingPathComponent("softhsm2.conf")
        try Data("directories.tokendir = \(tokens.path)\nobjectstore.backend = file\nlog.level = ERROR\n".utf8).write(to: conf)
        let environment = ["SOFTHSM2_CONF": conf.path]
        try await Self.run("openssl", ["pkey", "-inform", "DER", "-in", "is.pkcs8", "-out", "is.pem"], in: directory)
        for arguments in [["--init-token", "--free", "--label", "kiosk", "--pin", "4321", "--so-pin", "87654321"],
                          ["--import", directory.appendingPathComponent("is.pem").path, "--token", "kiosk", "--label", "is", "--id", "01", "--pin", "4321"]] {
            let outcome = try await runCommand("/usr/bin/softhsm2-util", arguments, environment: environment)
            try #require(outcome.status == 0, "softhsm2-util \(arguments.first ?? ""): \(outcome.standardOutput) \(outcome.standardError)")
        }
        let uri = "pkcs11:token=kiosk;object=is?module-path=\(Self.softHSM)&pin-value=4321"
        let wrongPIN = "pkcs11:token=kiosk;id=%01?module-path=\(Self.softHSM)&pin-value=0000"
        let outcomes = try await PCSCDHarness.withEmulatorCommand([
            "--passport", "Fixtures/passports/utopia-demo.json", "--eac-cvca", directory.appendingPathComponent("UTCVCA00007.cvcert").path,
        ]) {
            [
                try await Self.read(["--terminal-certificates", directory.appendingPathComponent("terminal").path, "--terminal-key", uri],
                                    environment: environment),
                try await Self.read(["--terminal-certificates", directory.appendingPathComponent("terminal").path, "--terminal-key", wrongPIN],
                                    environment: environment),
            ]
        }
        let (terminal, groups) = try Self.report(outcomes[0])
        #expect(terminal["status"] as? String == "valid", "\(terminal)")
        #expect(groups.contains("DG3") && groups.contains("DG4"))
        let (refused, _) = try Self.report(outcomes[1])
        #expect(refused["status"] as? String == "invalid")
        #expect((refused["detail"] as? String)?.contains("PIN") == true, "\(refused)")
        for outcome in outcomes {
            #expect(!outcome.standardOutput.contains("4321") && !outcome.standardError.contains("4321"), "the PIN never appears")
        }
        // URI mistakes are refused before any card is touched, naming the attribute.
        for (bad, says) in [("pkcs11:token=kiosk;object=is", "module-path is required"),
                            ("pkcs11:token=kiosk;colour=blue?module-path=/x.so", "unknown path attribute 'colour'"),
                            ("pkcs11:token=kiosk?module-path=/x.so", "name the key with object= or id="),
                            ("pkcs11:object=is;id=%0?module-path=/x.so", "bad percent-encoding in id")] {
            let outcome = try await runCommand(GBGBridgeBinary.path, ["read", "--can", "123456", "--timeout", "1",
                                                                       "--terminal-certificates", directory.appendingPathComponent("terminal").path,
                                                                       "--terminal-key", bad])
            #expect(outcome.status == 2 && outcome.standardError.contains(says), "\(bad): \(outcome.standardError)")
        }
    }
}
