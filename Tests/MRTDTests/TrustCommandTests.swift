import Foundation
import MRTDCrypto
import TestSupport
import Testing

/// `gbgbridge trust import` and `trust status` against a PKI written by Python's cryptography
/// (independent of our OpenSSL wrappers): CSCAs, a re-issued CSCA, a link certificate, a document
/// signer, a tampered certificate, CRLs old and new, and a CRL from nobody we trust.
@Suite("gbgbridge trust", .serialized)
struct TrustCommandTests {
    /// Python that writes certificates with the cryptography package (an independent issuer).
    static let pythonCertificates = """
        import datetime, sys, subprocess
        from cryptography import x509
        from cryptography.x509.oid import NameOID
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        now = datetime.datetime.now(datetime.timezone.utc)
        def name(cn, c="ZY"):
            return x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, c), x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        def cert(subject, subject_key, issuer, issuer_key, days, serial, ca=True):
            b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(subject_key.public_key())
                 .serial_number(serial).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=days))
                 .add_extension(x509.SubjectKeyIdentifier.from_public_key(subject_key.public_key()), critical=False))
            if ca:
                b = b.add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                b = b.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            else:
                b = b.add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
            return b.sign(issuer_key, hashes.SHA256())

        """

    static let pkiScript = pythonCertificates + """
        out = sys.argv[1]
        def write(file, c):
            open(out + "/" + file, "wb").write(c.public_bytes(serialization.Encoding.PEM))
        def crl(issuer, key, days_ago):
            return (x509.CertificateRevocationListBuilder().issuer_name(issuer)
                    .last_update(now - datetime.timedelta(days=days_ago)).next_update(now + datetime.timedelta(days=30 - days_ago))
                    .sign(key, hashes.SHA256()))
        k1, k2, kd, kx = (ec.generate_private_key(ec.SECP256R1()) for _ in range(4))
        csca = name("Test CSCA 1")
        write("csca.pem", cert(csca, k1, csca, k1, 3650, 1))
        write("csca-reissued.pem", cert(csca, k1, csca, k1, 7300, 2))
        write("link.pem", cert(name("Test CSCA 2"), k2, csca, k1, 3650, 3))
        write("ds.pem", cert(name("Test DS"), kd, csca, k1, 365, 4, ca=False))
        stranger = name("Stranger CSCA", "ZX")
        write("crl-old.crl.pem", crl(csca, k1, 20))
        write("crl-new.crl.pem", crl(csca, k1, 2))
        write("crl-stranger.crl.pem", crl(stranger, kx, 2))
        der = bytearray(cert(name("Tampered CSCA", "ZW"), kx, name("Tampered CSCA", "ZW"), kx, 3650, 5).public_bytes(serialization.Encoding.DER))
        der[-5] ^= 0x01
        open(out + "/tampered.der", "wb").write(bytes(der))
        import hashlib
        def fingerprint(file):
            return hashlib.sha256(x509.load_pem_x509_certificate(open(out + "/" + file, "rb").read()).public_bytes(serialization.Encoding.DER)).hexdigest().upper()
        open(out + "/csca.sha256", "w").write(fingerprint("csca.pem"))
        """

    static func pki() async throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trust-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let python = try await runCommand("/usr/bin/python3", ["-c", pkiScript, directory.path], timeout: .seconds(60))
        try #require(python.status == 0, "python3 with cryptography is needed (scripts/install-deps.sh): \(python.standardError)")
        return directory
    }

    static func gbgbridge(_ arguments: [String]) async throws -> CommandOutcome {
        try await runCommand(GBGBridgeBinary.path, arguments, timeout: .seconds(120))
    }

    static func json(_ outcome: CommandOutcome) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any],
                     "not JSON: \(outcome.standardOutput) \(outcome.standardError)")
    }

    @Test("import verifies, de-duplicates, replaces and reports; status shows the store",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
    func importAndStatus() async throws {
        let pki = try await Self.pki()
        defer { try? FileManager.default.removeItem(at: pki) }
        let store = pki.appendingPathComponent("store").path
        func file(_ name: String) -> String { pki.appendingPathComponent(name).path }

        // The CSCA's fingerprint, as its country would publish it: a self-signed CSCA is taken only anchored.
        let anchor = try String(contentsOfFile: file("csca.sha256"), encoding: .utf8)
        let unanchored = try await Self.gbgbridge(["trust", "import", "--store", store, "--json", "--dry-run", file("csca.pem")])
        #expect(unanchored.status == 1, "\(unanchored.standardOutput)")
        let refusal = try #require((try Self.json(unanchored)["refused"] as? [[String: Any]])?.first)
        #expect(refusal["code"] as? String == "unanchored-csca", "\(refusal)")
        #expect((refusal["reason"] as? String ?? "").contains(anchor) && (refusal["reason"] as? String ?? "").contains("--anchor-sha256"), "\(refusal)")

        // A dry run writes nothing.
        let dry = try await Self.gbgbridge(["trust", "import", "--store", store, "--dry-run", "--anchor-sha256", anchor, file("csca.pem")])
        #expect(dry.status == 0, "\(dry.standardError)")
        #expect(!FileManager.default.fileExists(atPath: store))

        let first = try await Self.gbgbridge(["trust", "import", "--store", store, "--json", "--anchor-sha256", anchor, file("csca.pem"), file("link.pem"),
                                              file("ds.pem"), file("tampered.der"), file("crl-old.crl.pem"), file("crl-stranger.crl.pem")])
        #expect(first.status == 1, "refusals make exit 1: \(first.standardOutput)")
        let report = try Self.json(first)
        let added = report["added"] as? [[String: Any]] ?? []
        #expect(added.count == 2, "the CSCA and the link certificate: \(added)")
        #expect(report["countriesAdded"] as? [String] == ["ZY"])
        #expect((report["crlsAdded"] as? [Any])?.count == 1)
        let refused = (report["refused"] as? [[String: Any]] ?? []).map { "\($0["file"] ?? ""): \($0["reason"] ?? "")" }
        #expect(refused.count == 3, "\(refused)")
        #expect(refused.contains { $0.contains("ds.pem") && $0.contains("neither a CA nor allowed to sign certificates") })
        #expect(refused.contains { $0.contains("tampered.der") })
        #expect(refused.contains { $0.contains("crl-stranger") && $0.contains("not signed by a CSCA") })
        // Written 0644 (others may read public certificates), named by country and hash.
        let files = try FileManager.default.contentsOfDirectory(atPath: store).sorted()
        #expect(files.filter { $0.hasPrefix("ZY-") && $0.hasSuffix(".pem") }.count == 2, "\(files)")
        #expect(files.filter { $0.hasPrefix("crl-ZY-") }.count == 1, "\(files)")
        for name in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: store + "/" + name)
            #expect((attributes[.posixPermissions] as? Int) == 0o644, "\(name)")
        }

        // Again: nothing new. A re-issued CSCA (same key, later expiry) replaces the first; a newer CRL the older.
        let again = try await Self.gbgbridge(["trust", "import", "--store", store, "--json", file("csca.pem"), file("csca-reissued.pem"),
                                              file("crl-new.crl.pem"), file("crl-old.crl.pem")])
        #expect(again.status == 0, "\(again.standardOutput) \(again.standardError)")
        let second = try Self.json(again)
        #expect((second["added"] as? [Any])?.isEmpty == true)
        #expect((second["replaced"] as? [Any])?.count == 1, "\(second)")
        #expect((second["crlsReplaced"] as? [Any])?.count == 1, "\(second)")
        #expect((second["alreadyPresent"] as? [Any])?.count ?? 0 >= 2, "\(second)")
        let after = try FileManager.default.contentsOfDirectory(atPath: store)
        #expect(after.filter { $0.hasPrefix("ZY-") }.count == 2, "the replaced file is gone: \(after)")
        #expect(after.filter { $0.hasPrefix("crl-ZY-") }.count == 1, "\(after)")

        // status: the store by country, the CRL current.
        let status = try await Self.gbgbridge(["trust", "status", "--trust", store, "--json"])
        #expect(status.status == 0, "\(status.standardError)")
        let state = try Self.json(status)
        let countries = state["countries"] as? [[String: Any]] ?? []
        #expect(countries.first?["country"] as? String == "ZY" && countries.first?["cscas"] as? Int == 2, "\(countries)")
        #expect((state["crls"] as? [[String: Any]])?.first?["status"] as? String == "current")
        let text = try await Self.gbgbridge(["trust", "status", "--trust", store])
        #expect(text.standardOutput.contains("ZY") && text.standardOutput.contains("CRLs"), "\(text.standardOutput)")
    }

    @Test("an empty or missing store is an error for status; a store that is not a directory is refused",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
    func emptyStore() async throws {
        let status = try await Self.gbgbridge(["trust", "status", "--trust", "/nonexistent-gbg-trust"])
        #expect(status.status == 1)
        #expect(status.standardOutput.contains("ERROR"), "\(status.standardOutput)")
        let bad = try await Self.gbgbridge(["trust", "import", "--store", "/dev/null", "Fixtures/pki/csca.cert.pem"])
        #expect(bad.status == 2)
        #expect(bad.standardError.contains("/dev/null is not a directory"), "\(bad.standardError)")
    }

    @Test("real master lists: verified and imported certificate by certificate, duplicates across lists found",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: FileManager.default.fileExists(atPath: TestFixtures.sharedURL("trust/DE_ML_2026-05-28.ml").path),
                   "needs ../shared/fixtures/trust (real master lists)"))
    func realMasterLists() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("trust-ml-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: store) }
        let lists = ["DE_ML_2026-05-28.ml", "NL_ML_2026-07-22.ml"].map { TestFixtures.sharedURL("trust/\($0)").path }
        // Into an empty store, nothing vouches for the lists' signers: both refused, the refusal
        // naming the fingerprint of the CSCA each list claims (DE's is its root CSCA's).
        let roots = try ["DE_ROOT_CA_CSCA07.cer", "NL_ROOT_CA.cer"].map { name in
            DigestAlgorithm.sha256.hash(try [UInt8](Data(contentsOf: TestFixtures.sharedURL("trust/\(name)")))).map { String(format: "%02X", $0) }.joined()
        }
        let unanchored = try await Self.gbgbridge(["trust", "import", "--store", store, "--json"] + lists)
        #expect(unanchored.status == 1)
        let refusals = (try Self.json(unanchored)["refused"] as? [[String: Any]] ?? []).compactMap { $0["reason"] as? String }
        #expect(refusals.count == 2, "\(refusals)")
        #expect(refusals.contains { $0.contains(roots[0]) && $0.contains("--list-anchor-sha256") }, "\(refusals)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []).isEmpty)
        // With the fingerprints the countries publish, both are imported, certificate by certificate.
        let outcome = try await Self.gbgbridge(["trust", "import", "--store", store, "--json",
                                                "--list-anchor-sha256", roots[0], "--list-anchor-sha256", roots[1]] + lists)
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try Self.json(outcome)
        #expect((report["masterLists"] as? [Any])?.count == 2)
        // A few certificates of a real list are links whose issuer the list lacks, or do not verify:
        // named one by one, the rest imported.
        let notTaken = report["refusedFromLists"] as? [[String: Any]] ?? []
        #expect(notTaken.count < 30, "\(notTaken.count) certificates of the real lists refused")
        let added = (report["added"] as? [Any])?.count ?? 0
        let present = (report["alreadyPresent"] as? [Any])?.count ?? 0
        #expect(added > 300 && present > 100, "added \(added), present \(present)")
        #expect((report["countriesAdded"] as? [String] ?? []).contains("DE"))
        let files = try FileManager.default.contentsOfDirectory(atPath: store)
        #expect(files.count == added)
        // A master list altered after signing is refused as a whole.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: lists[0])))
        bytes[bytes.count / 2] ^= 0x01
        let altered = store + "-altered.ml"
        try Data(bytes).write(to: URL(fileURLWithPath: altered))
        defer { try? FileManager.default.removeItem(atPath: altered) }
        let refused = try await Self.gbgbridge(["trust", "import", "--store", store, "--json", altered])
        #expect(refused.status == 1)
        #expect((try Self.json(refused)["refused"] as? [Any])?.count == 1)
        // The store now vouches for the DE list on its own, and the root files do as well.
        let again = try await Self.gbgbridge(["trust", "import", "--store", store + "-roots", "--json", "--anchor-sha256", roots[0],
                                              TestFixtures.sharedURL("trust/DE_ROOT_CA_CSCA07.cer").path, lists[0]])
        defer { try? FileManager.default.removeItem(atPath: store + "-roots") }
        #expect(again.status == 0, "\(again.standardError) \(again.standardOutput.prefix(800))")
    }

    /// An attacker's master list, written with Python's cryptography and signed with `openssl cms`:
    /// CSCAs whose signatures do not verify, and the list's signer issued by one of them.
    static let hostileListScript = pythonCertificates + """
        out, count = sys.argv[1], int(sys.argv[2])
        def broken(c):
            der = bytearray(c.public_bytes(serialization.Encoding.DER)); der[-5] ^= 0x01; return bytes(der)
        def tlv(tag, body):
            n = len(body)
            length = bytes([n]) if n < 0x80 else (lambda b: bytes([0x80 | len(b)]) + b)(n.to_bytes((n.bit_length() + 7) // 8, "big"))
            return bytes([tag]) + length + body
        kc, ks = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        evil = name("Evil CSCA", "ZQ")
        issuer_of_signer = cert(evil, kc, evil, kc, 3650, 1)
        signer = cert(name("Evil Master List Signer", "ZQ"), ks, evil, kc, 3650, 2, ca=False)
        # The CSCA that issued the signer, broken too (first), then broken CSCAs up to `count`.
        members = [broken(issuer_of_signer)]
        filler = broken(cert(name("Broken CSCA", "ZR"), kc, name("Broken CSCA", "ZR"), kc, 3650, 3))
        members += [filler] * (count - 1)
        content = tlv(0x30, tlv(0x02, b"\\x00") + tlv(0x31, b"".join(members)))
        open(out + "/content.der", "wb").write(content)
        open(out + "/signer.pem", "wb").write(signer.public_bytes(serialization.Encoding.PEM))
        open(out + "/signer.key", "wb").write(ks.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        open(out + "/evil.pem", "wb").write(issuer_of_signer.public_bytes(serialization.Encoding.PEM))
        subprocess.run(["openssl", "cms", "-sign", "-binary", "-nodetach", "-in", out + "/content.der", "-signer", out + "/signer.pem",
                        "-inkey", out + "/signer.key", "-econtent_type", "2.23.136.1.1.2", "-outform", "DER", "-out", out + "/evil.ml"], check=True)
        """

    @Test("an attacker's master list is refused: its signer vouched for only by a certificate of the list, its CSCAs broken, or too many",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
    func hostileMasterList() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("evil-ml-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let python = try await runCommand("/usr/bin/python3", ["-c", Self.hostileListScript, directory.path, "50"], timeout: .seconds(60))
        try #require(python.status == 0, "python3 with cryptography and openssl are needed: \(python.standardError)")
        let store = directory.appendingPathComponent("store").path
        let list = directory.appendingPathComponent("evil.ml").path
        let refused = try await Self.gbgbridge(["trust", "import", "--store", store, "--json", list])
        #expect(refused.status == 1)
        let reasons = (try Self.json(refused)["refused"] as? [[String: Any]] ?? []).compactMap { $0["reason"] as? String }
        #expect(reasons.count == 1 && reasons[0].contains("never vouches for the list"), "\(reasons)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []).isEmpty)
        // Naming the CSCA that issued the signer does not help: its own signature does not verify.
        let evil = try [UInt8](Data(contentsOf: directory.appendingPathComponent("evil.pem")))
        let fingerprint = reasons.first?.firstMatch(of: /SHA-256 ([0-9A-F]{64})/).map { String($0.1) } ?? ""
        #expect(!fingerprint.isEmpty && !evil.isEmpty)
        let named = try await Self.gbgbridge(["trust", "import", "--store", store, "--json", "--list-anchor-sha256", fingerprint, list])
        #expect(named.status == 1, "\(named.standardOutput.prefix(600))")
        #expect((try Self.json(named)["added"] as? [Any])?.isEmpty == true)
        // trust status stays quick and calls nothing valid: there is nothing in the store.
        let status = try await Self.gbgbridge(["trust", "status", "--trust", store, "--json"])
        #expect(status.status != 0 || !status.standardOutput.contains("Evil"))

        // Over the certificate ceiling: refused whole, without judging one certificate.
        let big = directory.appendingPathComponent("big")
        try FileManager.default.createDirectory(at: big, withIntermediateDirectories: true)
        let python2 = try await runCommand("/usr/bin/python3", ["-c", Self.hostileListScript, big.path, "10001"], timeout: .seconds(120))
        try #require(python2.status == 0, "\(python2.standardError)")
        let tooMany = try await Self.gbgbridge(["trust", "import", "--store", store, "--json", big.appendingPathComponent("evil.ml").path])
        #expect(tooMany.status == 1)
        let why = (try Self.json(tooMany)["refused"] as? [[String: Any]] ?? []).compactMap { $0["reason"] as? String }
        #expect(why.first?.contains("10001 certificates, more than the 10000") == true, "\(why)")
    }
}
