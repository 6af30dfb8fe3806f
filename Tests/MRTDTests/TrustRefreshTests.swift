import Foundation
import MRTDCrypto
import TestSupport
import Testing

/// `gbgbridge trust refresh` against real servers (issue 45): Python's http.server + ssl on
/// loopback with a test CA of its own (Fixtures/trust-refresh/server.py), serving CRLs made for the
/// test PKI by Python's cryptography, the real DE and NL master lists from ../shared, and every
/// misbehaviour a careful client must survive. Each failure leaves the store byte for byte as it was.
@Suite("gbgbridge trust refresh", .serialized)
struct TrustRefreshTests {
    static let hasPython = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    /// A served directory with the test PKI's CRLs and CSCA, a store holding the CSCA and the
    /// older CRL (`mid.crl`), and the servers.
    struct Setup {
        let root: URL
        let server: TrustRefreshServer
        var store: String { root.appendingPathComponent("store").path }
        var files: URL { server.files }

        static func make() async throws -> Setup {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("trust-refresh-\(UUID().uuidString)")
            let files = root.appendingPathComponent("served")
            let store = root.appendingPathComponent("store")
            try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
            try await TrustRefreshServer.writeTestCRLs(into: files)
            try FileManager.default.copyItem(at: TestFixtures.url("pki/csca.cert.pem"), to: files.appendingPathComponent("csca.pem"))
            try FileManager.default.copyItem(at: TestFixtures.url("pki/csca.cert.der"), to: store.appendingPathComponent("csca.der"))
            try FileManager.default.copyItem(at: files.appendingPathComponent("mid.crl"), to: store.appendingPathComponent("csca.crl"))
            return Setup(root: root, server: try await TrustRefreshServer.start(files: files))
        }

        func remove() {
            server.stop()
            try? FileManager.default.removeItem(at: root)
        }

        /// `gbgbridge trust refresh --store STORE --ca-file CA --json ARGUMENTS`.
        func refresh(_ arguments: [String], caFile: Bool = true) async throws -> CommandOutcome {
            try await runCommand(GBGBridgeBinary.path, ["trust", "refresh", "--config", "/dev/null", "--store", store, "--json"]
                                 + (caFile ? ["--ca-file", server.caFile] : []) + arguments, timeout: .seconds(180))
        }
    }

    /// Every file under `path` (hidden ones too) and its SHA-256.
    static func hashes(_ path: String) throws -> [String: String] {
        var result: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let relative = enumerator?.nextObject() as? String {
            let full = URL(fileURLWithPath: path).appendingPathComponent(relative)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: full.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            result[relative] = DigestAlgorithm.sha256.hash(try [UInt8](Data(contentsOf: full))).map { String(format: "%02x", $0) }.joined()
        }
        return result
    }

    static func sources(_ outcome: CommandOutcome) throws -> [[String: Any]] {
        try #require(try TrustCommandTests.json(outcome)["sources"] as? [[String: Any]], "\(outcome.standardOutput) \(outcome.standardError)")
    }

    /// The CRLs the store holds.
    static func storedCRLs(_ store: String) throws -> [RevocationList] {
        try FileManager.default.contentsOfDirectory(atPath: store).filter { $0.hasSuffix(".crl") }.map {
            try RevocationList(bytes: [UInt8](Data(contentsOf: URL(fileURLWithPath: store).appendingPathComponent($0))))
        }
    }

    @Test("a newer CRL is applied (dry run first), a second run is 304 unchanged, the state is kept beside the store",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func appliedThenUnchanged() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        let ds = try Certificate(bytes: [UInt8](Data(contentsOf: TestFixtures.url("pki/ds.cert.pem"))))
        #expect(try Self.storedCRLs(setup.store).contains { $0.revokes(ds) } == false)
        let before = try Self.hashes(setup.store)
        let url = setup.server.https("/files/new.crl")

        let dry = try await setup.refresh(["--dry-run", "--source", "crl=\(url)"])
        #expect(dry.status == 0, "\(dry.standardOutput) \(dry.standardError)")
        #expect(try Self.sources(dry).first?["outcome"] as? String == "updated")
        #expect(try TrustCommandTests.json(dry)["dryRun"] as? Bool == true)
        #expect(try Self.hashes(setup.store) == before, "a dry run writes nothing")

        let applied = try await setup.refresh(["--source", "crl=\(url)"])
        #expect(applied.status == 0, "\(applied.standardOutput) \(applied.standardError)")
        let entry = try #require(try Self.sources(applied).first)
        #expect(entry["url"] as? String == url)
        #expect(entry["kind"] as? String == "crl")
        #expect(entry["outcome"] as? String == "updated")
        #expect(entry["httpStatus"] as? Int == 200)
        #expect(entry["bytes"] as? Int == (try Data(contentsOf: setup.files.appendingPathComponent("new.crl"))).count)
        #expect((entry["changes"] as? [String] ?? []).contains { $0.contains("CRL") }, "\(entry)")
        #expect(try TrustCommandTests.json(applied)["storeChanged"] as? Bool == true)
        let crls = try Self.storedCRLs(setup.store)
        #expect(crls.count == 1)
        #expect(crls.first?.revokes(ds) == true, "the store holds the new CRL")
        // The state (validators, last success) lives beside the store, not in it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.store).allSatisfy { !$0.hasPrefix(".") })
        let statePath = setup.root.appendingPathComponent(".store.refresh.json").path
        let state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: statePath))) as? [String: Any])
        #expect(state["lastSuccess"] != nil && (state["validators"] as? [String: Any])?[url] != nil, "\(state)")
        // No working copy left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.root.path).sorted() == [".store.refresh.json", "served", "store"])

        let after = try Self.hashes(setup.store)
        let again = try await setup.refresh(["--source", "crl=\(url)"])
        #expect(again.status == 0)
        let second = try #require(try Self.sources(again).first)
        #expect(second["outcome"] as? String == "unchanged")
        #expect(second["httpStatus"] as? Int == 304, "a conditional request answered 304: \(second)")
        #expect(try TrustCommandTests.json(again)["storeChanged"] as? Bool == false)
        #expect(try Self.hashes(setup.store) == after)

        // `trust status` and `doctor`'s trust check see the refresh.
        let text = try await runCommand(GBGBridgeBinary.path, ["trust", "refresh", "--config", "/dev/null", "--store", setup.store,
                                                               "--ca-file", setup.server.caFile, "--source", "crl=\(url)"])
        #expect(text.standardOutput.contains("unchanged") && text.standardOutput.contains("is unchanged"), "\(text.standardOutput)")
    }

    /// One failing source per run: the reason in --json, exit 1, the store's files unchanged.
    @Test("each failure kind: exit 1, its reason, the store byte for byte as it was",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func failuresLeaveTheStore() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        let server = setup.server
        let cases: [(name: String, arguments: [String], reason: String, detail: String)] = [
            ("404", ["--source", "crl=" + server.https("/status/404")], "http-status", "404"),
            ("500", ["--source", "crl=" + server.https("/status/500")], "http-status", "500"),
            ("3 GB announced", ["--source", "crl=" + server.https("/huge")], "too-large", "3221225472"),
            ("64 MiB unannounced", ["--source", "crl=" + server.https("/huge-chunked")], "too-large", "MiB"),
            ("slow drip", ["--timeout", "3", "--source", "crl=" + server.https("/drip")], "timeout", "time"),
            ("CRL signed by another key", ["--source", "crl=" + server.https("/files/forged.crl")], "verification", "not signed"),
            ("older CRL", ["--source", "crl=" + server.https("/files/old.crl")], "verification", "older"),
            ("CRL issued in the future", ["--source", "crl=" + server.https("/files/future.crl")], "verification", "future"),
            ("a CSCA served as a CRL", ["--source", "crl=" + server.https("/files/csca.pem")], "wrong-kind", "not a CRL"),
            ("redirect to file:", ["--source", "crl=" + server.https("/redirect-file")], "redirect", "file:"),
            ("redirect from https to http", ["--source", "crl=" + server.https("/redirect-http/new.crl")], "redirect", "https down to http"),
            ("redirect loop", ["--source", "crl=" + server.https("/redirect-loop")], "redirect", "more than 3"),
            ("master list over plain http, unanchored", ["--source", "master-list=" + server.http("/files/list.ml")], "insecure-transport", "https"),
            ("TLS to a plain http server", ["--source", "master-list=https://127.0.0.1:\(server.httpPort)/files/list.ml"], "tls", "TLS"),
            ("connection refused", ["--source", "crl=https://127.0.0.1:1/x.crl"], "network", "connection refused"),
            ("not a URL", ["--source", "crl=ftp://127.0.0.1/x.crl"], "bad-url", "ftp"),
        ]
        let before = try Self.hashes(setup.store)
        try #require(before.count == 2)
        for (name, arguments, reason, detail) in cases {
            let outcome = try await setup.refresh(arguments)
            #expect(outcome.status == 1, "\(name): exit \(outcome.status) \(outcome.standardError)")
            let entry = try #require(try Self.sources(outcome).first, "\(name)")
            #expect(entry["outcome"] as? String == "failed", "\(name): \(entry)")
            #expect(entry["reason"] as? String == reason, "\(name): \(entry)")
            #expect((entry["detail"] as? String ?? "").contains(detail), "\(name): \(entry)")
            #expect(!(entry["detail"] as? String ?? "").contains(".refresh-"), "\(name): the working copy's name leaked: \(entry)")
            #expect(try Self.hashes(setup.store) == before, "\(name) changed the store")
        }
        // An untrusted server certificate (the system's CAs do not know the test CA).
        let untrusted = try await setup.refresh(["--source", "crl=" + server.https("/files/new.crl")], caFile: false)
        #expect(untrusted.status == 1)
        #expect(try Self.sources(untrusted).first?["reason"] as? String == "tls")
        #expect((try Self.sources(untrusted).first?["detail"] as? String ?? "").contains("CERTIFICATE_VERIFY_FAILED"))
        #expect(try Self.hashes(setup.store) == before)

        // Several sources at once: the good one is applied, the failing one reported (exit 1).
        let mixed = try await setup.refresh(["--source", "crl=" + server.https("/status/404"), "--source", "crl=" + server.http("/files/new.crl")])
        #expect(mixed.status == 1)
        let outcomes = try Self.sources(mixed).map { $0["outcome"] as? String ?? "" }
        #expect(outcomes == ["failed", "updated"], "\(mixed.standardOutput)")
        #expect(try Self.hashes(setup.store) != before)
        let ds = try Certificate(bytes: [UInt8](Data(contentsOf: TestFixtures.url("pki/ds.cert.pem"))))
        #expect(try Self.storedCRLs(setup.store).first?.revokes(ds) == true, "a CRL over plain http is signed: taken")
        // Failures are counted in the state beside the store (the metrics read it).
        let state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: setup.root.appendingPathComponent(".store.refresh.json")))
                                 as? [String: Any])
        let failures = state["failures"] as? [String: Int] ?? [:]
        #expect(failures["redirect"] == 3 && failures["verification"] == 3 && failures["tls"] == 2, "\(failures)")
    }

    @Test("usage: no source, a bad --source, a store that is a file, a missing --ca-file: exit 2",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
    func usage() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("refresh-usage-\(UUID().uuidString)")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let store = file.path + "-store"
        let runs: [([String], String)] = [
            (["--store", store], "no source"),
            (["--store", store, "--source", "/etc/passwd"], "--source takes"),
            (["--store", store, "--source", "https://127.0.0.1:1/x.crl", "--list-anchor-sha256", "xyz"], "64 hex digits"),
            (["--store", file.path, "--source", "https://127.0.0.1:1/x.crl"], "not a directory"),
            (["--store", store, "--source", "https://127.0.0.1:1/x.crl", "--ca-file", "/nonexistent.pem"], "--ca-file"),
            (["--store", store, "--source", "https://127.0.0.1:1/x.crl", "--timeout", "0"], "--timeout"),
        ]
        for (arguments, expected) in runs {
            let outcome = try await runCommand(GBGBridgeBinary.path, ["trust", "refresh", "--config", "/dev/null"] + arguments, timeout: .seconds(60))
            #expect(outcome.status == 2, "\(arguments): \(outcome.status) \(outcome.standardError)")
            #expect(outcome.standardError.contains(expected), "\(arguments): \(outcome.standardError)")
        }
        #expect(!FileManager.default.fileExists(atPath: store), "a failed run creates no store")
    }

    @Test("sources from the configuration file, and the CRL a stored CSCA's distribution point names",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func configurationAndDistributionPoints() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        // A second CSCA (Python's cryptography) naming the server's http URL as its CRL
        // distribution point, and its CRL there.
        let script = TrustCommandTests.pythonCertificates + """
            from cryptography.x509.oid import ExtensionOID
            store, served, url = sys.argv[1], sys.argv[2], sys.argv[3]
            key = ec.generate_private_key(ec.SECP256R1())
            subject = name("Distribution Point CSCA", "ZD")
            c = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                 .serial_number(7).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
                 .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                 .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                 .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
                 .add_extension(x509.CRLDistributionPoints([x509.DistributionPoint([x509.UniformResourceIdentifier(url)], None, None, None)]), critical=False)
                 .sign(key, hashes.SHA256()))
            open(store + "/zd.pem", "wb").write(c.public_bytes(serialization.Encoding.PEM))
            crl = (x509.CertificateRevocationListBuilder().issuer_name(subject).last_update(now - datetime.timedelta(hours=1))
                   .next_update(now + datetime.timedelta(days=20)).sign(key, hashes.SHA256()))
            open(served + "/zd.crl", "wb").write(crl.public_bytes(serialization.Encoding.DER))
            """
        let python = try await runCommand("/usr/bin/python3", ["-c", script, setup.store, setup.files.path, setup.server.http("/files/zd.crl")])
        try #require(python.status == 0, "\(python.standardError)")
        let config = setup.root.appendingPathComponent("gbgbridge.conf")
        try Data("""
            trust-refresh:
              crl-distribution-points: true
              sources:
                - url: \(setup.server.https("/files/new.crl"))
                  kind: crl
            """.utf8).write(to: config)
        let outcome = try await runCommand(GBGBridgeBinary.path, ["trust", "refresh", "--config", config.path, "--store", setup.store,
                                                                  "--ca-file", setup.server.caFile, "--json"], timeout: .seconds(120))
        #expect(outcome.status == 0, "\(outcome.standardOutput) \(outcome.standardError)")
        let entries = try Self.sources(outcome)
        #expect(entries.map { $0["url"] as? String ?? "" } == [setup.server.https("/files/new.crl"), setup.server.http("/files/zd.crl")], "\(entries)")
        #expect(entries.allSatisfy { $0["outcome"] as? String == "updated" }, "\(entries)")
        #expect(try Self.storedCRLs(setup.store).count == 2)

        // A configuration that does not parse: exit 2 with the line.
        try Data("trust-refresh:\n  sources:\n    - url: https://x.example/a.crl\n      kind: certificate\n".utf8).write(to: config)
        let bad = try await runCommand(GBGBridgeBinary.path, ["trust", "refresh", "--config", config.path, "--store", setup.store])
        #expect(bad.status == 2, "\(bad.standardError)")
        #expect(bad.standardError.contains("kind"), "\(bad.standardError)")
    }

    @Test("the real DE and NL master lists over HTTPS: anchored, applied, then 304; unanchored, refused",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"),
          .enabled(if: FileManager.default.fileExists(atPath: TestFixtures.sharedURL("trust/DE_ML_2026-05-28.ml").path),
                   "needs ../shared/fixtures/trust (real master lists)"))
    func realMasterLists() async throws {
        let setup = try await Setup.make()
        defer { setup.remove() }
        for name in ["DE_ML_2026-05-28.ml", "NL_ML_2026-07-22.ml"] {
            try FileManager.default.copyItem(at: TestFixtures.sharedURL("trust/\(name)"), to: setup.files.appendingPathComponent(name))
        }
        let roots = try ["DE_ROOT_CA_CSCA07.cer", "NL_ROOT_CA.cer"].map { name in
            DigestAlgorithm.sha256.hash(try [UInt8](Data(contentsOf: TestFixtures.sharedURL("trust/\(name)")))).map { String(format: "%02X", $0) }.joined()
        }
        let before = try Self.hashes(setup.store)
        // No anchor: the list's signer is vouched for by nothing the store trusts.
        let unanchored = try await setup.refresh(["--source", setup.server.https("/files/DE_ML_2026-05-28.ml")])
        #expect(unanchored.status == 1)
        let refusal = try #require(try Self.sources(unanchored).first)
        #expect(refusal["reason"] as? String == "verification", "\(refusal)")
        #expect((refusal["detail"] as? String ?? "").contains(roots[0]), "the refusal names the fingerprint to compare: \(refusal)")
        #expect(try Self.hashes(setup.store) == before)

        // Anchored, from the configuration (DE over https, NL anchored over plain http: allowed).
        let config = setup.root.appendingPathComponent("gbgbridge.conf")
        try Data("""
            trust-refresh:
              sources:
                - url: \(setup.server.https("/files/DE_ML_2026-05-28.ml"))
                  kind: master-list
                  anchor-sha256: [\(roots[0])]
                - url: \(setup.server.http("/files/NL_ML_2026-07-22.ml"))
                  kind: master-list
                  anchor-sha256:
                    - \(roots[1])
            """.utf8).write(to: config)
        let arguments = ["trust", "refresh", "--config", config.path, "--store", setup.store, "--ca-file", setup.server.caFile, "--json"]
        let applied = try await runCommand(GBGBridgeBinary.path, arguments, timeout: .seconds(300))
        #expect(applied.status == 0, "\(applied.standardOutput.prefix(2000)) \(applied.standardError)")
        let entries = try Self.sources(applied)
        #expect(entries.map { $0["outcome"] as? String ?? "" } == ["updated", "updated"], "\(applied.standardOutput.prefix(2000))")
        #expect((entries.first?["changes"] as? [String] ?? []).count > 10)
        let files = try FileManager.default.contentsOfDirectory(atPath: setup.store)
        #expect(files.count > 300, "\(files.count) files in the store")
        #expect(files.contains { $0.contains("DE") } && files.contains { $0.contains("NL") }, "\(files.prefix(20))")

        let after = try Self.hashes(setup.store)
        let again = try await runCommand(GBGBridgeBinary.path, arguments, timeout: .seconds(300))
        #expect(again.status == 0)
        #expect(try Self.sources(again).map { $0["httpStatus"] as? Int ?? 0 } == [304, 304])
        #expect(try Self.hashes(setup.store) == after)
    }
}
