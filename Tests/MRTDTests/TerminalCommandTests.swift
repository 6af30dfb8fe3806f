import CVCertificates
import Foundation
import MRTDCrypto
import TestSupport
import Testing

/// `gbgbridge terminal check | print | request` as an operator runs them, on the test chain in
/// Fixtures/cvc (made with OpenPACE's cvc-create).
@Suite("gbgbridge terminal", .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
struct TerminalCommandTests {
    static let cvc = TestFixtures.url("cvc").path

    static func run(_ arguments: [String]) async throws -> CommandOutcome {
        try await runCommand(GBGBridgeBinary.path, ["terminal"] + arguments, timeout: .seconds(60))
    }

    static func json(_ outcome: CommandOutcome) throws -> [String: Any] {
        try #require((try? JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8))) as? [String: Any],
                     "not JSON (exit \(outcome.status)): \(outcome.standardOutput) \(outcome.standardError)")
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("terminal-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("check: a good chain and key is usable; verified from the CVCA when it is given")
    func checkGood() async throws {
        let plain = try await Self.run(["check", "--terminal-certificates", "\(Self.cvc)/UTDVIS00001.cvcert", "--terminal-certificates",
                                        "\(Self.cvc)/UTIS0000001.cvcert", "--terminal-key", "\(Self.cvc)/UTIS0000001.pkcs8", "--date", "270101"])
        #expect(plain.status == 0, "\(plain.standardOutput) \(plain.standardError)")
        #expect(plain.standardOutput.contains("UTCVCA00001 → UTDVIS00001 → UTIS0000001") && plain.standardOutput.contains("OK:"))
        let verified = try await Self.run(["check", "--terminal-certificates", "\(Self.cvc)/UTDVIS00001.cvcert", "--terminal-certificates",
                                           "\(Self.cvc)/UTIS0000001.cvcert", "--terminal-key", "\(Self.cvc)/UTIS0000001.pkcs8",
                                           "--cvca", "\(Self.cvc)/UTCVCA00001.cvcert", "--date", "270101", "--json"])
        #expect(verified.status == 0)
        let report = try Self.json(verified)
        #expect(report["status"] as? String == "ok")
        let chain = try #require((report["chains"] as? [[String: Any]])?.first)
        #expect(chain["verified"] as? Bool == true && chain["rights"] as? [String] == ["DG3", "DG4"])
        #expect((report["key"] as? [String: Any])?["status"] as? String == "matches")
    }

    @Test("check: another key, an expired certificate, a missing DV are problems (exit 1), each said")
    func checkProblems() async throws {
        let wrongKey = try await Self.run(["check", "--terminal-certificates", Self.cvc, "--terminal-key", "\(Self.cvc)/UTDVIS00001.pkcs8", "--json"])
        #expect(wrongKey.status == 1)
        #expect((try Self.json(wrongKey)["key"] as? [String: Any])?["status"] as? String == "mismatch")
        let expired = try await Self.run(["check", "--terminal-certificates", Self.cvc, "--terminal-key", "\(Self.cvc)/UTIS0000001.pkcs8",
                                          "--cvca", "\(Self.cvc)/UTCVCA00001.cvcert", "--date", "370101"])
        #expect(expired.status == 1)
        #expect(expired.standardOutput.contains("UTIS0000001 is not valid on 2037-01-01"), "\(expired.standardOutput)")
        let noDV = try await Self.run(["check", "--terminal-certificates", "\(Self.cvc)/UTIS0000001.cvcert", "--terminal-key",
                                       "\(Self.cvc)/UTIS0000001.pkcs8", "--cvca", "\(Self.cvc)/UTCVCA00001.cvcert"])
        #expect(noDV.status == 1)
        #expect(noDV.standardOutput.contains("chain to UTCVCA00001"), "\(noDV.standardOutput)")
        let badArguments = try await Self.run(["check", "--terminal-certificates", Self.cvc])
        #expect(badArguments.status == 2)
        // A token that is not there: said, and the PIN given in the URI is nowhere in what is printed.
        let noToken = try await Self.run(["check", "--terminal-certificates", Self.cvc, "--terminal-key",
                                          "pkcs11:token=absent;object=is?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value=SECRET-4711", "--json"])
        #expect(noToken.status == 1)
        #expect(!(noToken.standardOutput + noToken.standardError).contains("SECRET-4711"))
        #expect((try Self.json(noToken)["key"] as? [String: Any])?["status"] as? String == "error")
    }

    @Test("request: a new key's request, plain and authenticated by the current IS key, and with the key behind exec:")
    func request() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("new.pkcs8")
        let generated = try await runCommand("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:brainpoolP256r1",
                                                                 "-outform", "DER", "-out", keyFile.path])
        try #require(generated.status == 0, "\(generated.standardError)")
        let key = try PrivateKey(bytes: [UInt8](try Data(contentsOf: keyFile)))
        let plainFile = directory.appendingPathComponent("plain.cvreq").path
        let plain = try await Self.run(["request", "--key", keyFile.path, "--chr", "UTIS0000002", "--car", "UTDVIS00001", "--out", plainFile])
        #expect(plain.status == 0, "\(plain.standardError)")
        let request = try CVCertificateRequest(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: plainFile))))
        #expect(request.holderReference == "UTIS0000002" && request.authorityReference == "UTDVIS00001" && request.outerSignature == nil)
        #expect(request.publicKey.algorithm == .ecdsaSHA256 && request.publicKey.domainParameters != nil)
        try request.verifyInnerSignature()

        let renewalFile = directory.appendingPathComponent("renewal.cvreq").path
        let renewal = try await Self.run(["request", "--key", keyFile.path, "--chr", "UTIS0000002", "--out", renewalFile,
                                          "--authenticate-key", "\(Self.cvc)/UTIS0000001.pkcs8", "--authenticate-as", "\(Self.cvc)/UTIS0000001.cvcert"])
        #expect(renewal.status == 0, "\(renewal.standardError)")
        let authenticated = try CVCertificateRequest(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: renewalFile))))
        #expect(authenticated.outerAuthorityReference == "UTIS0000001")
        let cvca = try CVCertificate(bytes: [UInt8](try Data(contentsOf: TestFixtures.url("cvc/UTCVCA00001.cvcert"))))
        let current = try CVCertificate(bytes: [UInt8](try Data(contentsOf: TestFixtures.url("cvc/UTIS0000001.cvcert"))))
        try authenticated.verifyOuterSignature(with: current.publicKey.inheriting(from: cvca.publicKey))

        // A key the host cannot load: its public half from a file, the signing by a command.
        let publicKeyFile = directory.appendingPathComponent("new.spki.der")
        try Data(key.subjectPublicKeyInfo).write(to: publicKeyFile)
        let signer = directory.appendingPathComponent("sign.py")
        try Data("""
            import sys
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec, utils
            key = serialization.load_der_private_key(open(sys.argv[1], "rb").read(), None)
            r, s = utils.decode_dss_signature(key.sign(sys.stdin.buffer.read(), ec.ECDSA(hashes.SHA256())))
            print((r.to_bytes(32, "big") + s.to_bytes(32, "big")).hex())
            """.utf8).write(to: signer)
        let execFile = directory.appendingPathComponent("exec.cvreq").path
        let exec = try await Self.run(["request", "--key", "exec:/usr/bin/python3 \(signer.path) \(keyFile.path)", "--public-key", publicKeyFile.path,
                                       "--chr", "UTIS0000004", "--out", execFile])
        #expect(exec.status == 0, "\(exec.standardError)")
        try CVCertificateRequest(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: execFile)))).verifyInnerSignature()

        // Bad arguments are refused before anything is signed.
        for arguments in [["--chr", "U"], ["--chr", "UTIS0000005", "--scheme", "MD5"], ["--chr", "UTIS0000005", "--authenticate-key", keyFile.path],
                          ["--chr", "UTIS00000\u{301}5"], ["--chr", "UTIS\u{FF10}000005"], ["--chr", "UTIS0000005", "--car", "UTDV\tIS00001"]] {
            let refused = try await Self.run(["request", "--key", keyFile.path, "--out", directory.appendingPathComponent("x").path] + arguments)
            #expect(refused.status == 2, "\(arguments): \(refused.standardError)")
        }
        let noPublicKey = try await Self.run(["request", "--key", "pkcs11:token=x;object=y", "--chr", "UTIS0000005", "--out", "/tmp/never"])
        #expect(noPublicKey.status == 2 && noPublicKey.standardError.contains("--public-key"))
    }

    @Test("print: certificates and requests in words and JSON; a file that is neither is named with the field")
    func print() async throws {
        let printed = try await Self.run(["print", "\(Self.cvc)/UTCVCA00001.cvcert", "\(Self.cvc)/UTIS0000001.cvcert", "--json"])
        #expect(printed.status == 0)
        let objects = try #require((try? JSONSerialization.jsonObject(with: Data(printed.standardOutput.utf8))) as? [[String: Any]])
        #expect(objects.map { $0["chr"] as? String } == ["UTCVCA00001", "UTIS0000001"])
        #expect(objects[0]["role"] as? String == "cvca" && objects[1]["rights"] as? [String] == ["DG3", "DG4"])
        #expect((objects[0]["key"] as? String)?.contains("brainpoolP256r1") == true)
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let garbage = directory.appendingPathComponent("garbage.cvcert")
        var truncated = [UInt8](try Data(contentsOf: TestFixtures.url("cvc/UTIS0000001.cvcert")))
        truncated.removeLast(20)
        try Data(truncated).write(to: garbage)
        let refused = try await Self.run(["print", garbage.path])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("garbage.cvcert: certificate"), "\(refused.standardError)")
    }
}
