import Foundation
import MRTD
import MRTDCrypto
import MRTDEmulator
import TestSupport
import Testing

/// The red team's attacks on `trust refresh` (issue 49), replayed against the real loopback
/// servers: after every hostile refresh, a chip the attacker signed reads `untrusted`, a revoked
/// one `revoked`, and the genuine CSCA is never removed. The verdicts come from passive
/// authentication of chips the emulator builds (the very code a read runs) over the store on disk
/// as the refresh left it.
@Suite("trust refresh: what only the trusted may change", .serialized)
struct TrustRefreshAttackTests {
    struct Attack {
        let setup: TrustRefreshTests.Setup
        let files: URL

        static func make() async throws -> Attack {
            let setup = try await TrustRefreshTests.Setup.make()
            let outcome = try await runCommand("/usr/bin/python3", [
                TestFixtures.url("trust-refresh/attacks.py").path, TestFixtures.url("pki/csca.cert.pem").path,
                TestFixtures.url("pki/csca.key.pem").path, TestFixtures.url("pki/ds.cert.pem").path, setup.files.path,
            ], timeout: .seconds(60))
            try #require(outcome.status == 0, "attacks.py: \(outcome.standardError)")
            return Attack(setup: setup, files: setup.files)
        }

        func fingerprint(_ name: String) throws -> String {
            try String(contentsOf: files.appendingPathComponent("\(name).sha256"), encoding: .utf8)
        }

        /// Passive authentication of the specimen chip signed by `signer` (a `PREFIX-ds.pem/.key`
        /// of attacks.py, or the genuine test signer), over the store as it is on disk now.
        func verdict(signer prefix: String?) throws -> PassiveAuthenticationResult {
            let signer = try prefix.map {
                try DocumentSigner.load(certificate: files.appendingPathComponent("\($0)-ds.pem"), key: files.appendingPathComponent("\($0)-ds.key"))
            } ?? TestFixtures.documentSigner()
            let passport = try EmulatedPassport(description: try TestFixtures.description("utopia-td3-jpeg"),
                                                baseDirectory: TestFixtures.url("passports"), signer: signer)
            let sod = try SecurityObject(bytes: try #require(passport.applicationFiles[EmulatedPassport.efSOD]))
            var groups: [Int: [UInt8]] = [:]
            for number in 1...16 { if let file = passport.applicationFiles[EmulatedPassport.dataGroupFID(number)] { groups[number] = file } }
            var trust = TrustStore()
            try trust.add(path: URL(fileURLWithPath: setup.store))
            return PassiveAuthentication.verify(sod: sod, dataGroups: groups, trustStore: trust)
        }

        func genuineCSCAStored() throws -> Bool {
            let genuine = try Certificate(bytes: [UInt8](Data(contentsOf: TestFixtures.url("pki/csca.cert.der")))).keyIdentity
            var trust = TrustStore()
            try trust.add(path: URL(fileURLWithPath: setup.store))
            return trust.certificates.contains { $0.keyIdentity == genuine }
        }
    }

    @Test("an attacker's self-signed CSCA is refused as unanchored-csca over http and https; the forged chip stays untrusted",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func unanchoredCSCA() async throws {
        let attack = try await Attack.make()
        defer { attack.setup.remove() }
        #expect(try attack.verdict(signer: nil).status == .valid, "the genuine chip reads valid before")
        #expect(try attack.verdict(signer: "mitm").status == .untrusted)
        let before = try TrustRefreshTests.hashes(attack.setup.store)
        for url in [attack.setup.server.http("/files/mitm-csca.cer"), attack.setup.server.https("/files/mitm-csca.cer")] {
            for kind in ["csca=", ""] {
                let outcome = try await attack.setup.refresh(["--source", kind + url])
                #expect(outcome.status == 1, "\(url): \(outcome.standardOutput)")
                let entry = try #require(try TrustRefreshTests.sources(outcome).first)
                #expect(entry["reason"] as? String == "unanchored-csca", "\(entry)")
                #expect((entry["detail"] as? String ?? "").contains(try attack.fingerprint("mitm")), "the refusal names the fingerprint: \(entry)")
                #expect(try TrustRefreshTests.hashes(attack.setup.store) == before)
            }
        }
        #expect(try attack.verdict(signer: "mitm").status == .untrusted, "the forged chip after every refusal")
        #expect(try attack.verdict(signer: nil).status == .valid)

        // The operator who names its fingerprint takes it (anchored: the operator's decision).
        let anchored = try await attack.setup.refresh(["--anchor-sha256", try attack.fingerprint("mitm"),
                                                       "--source", "csca=" + attack.setup.server.http("/files/mitm-csca.cer")])
        #expect(anchored.status == 0, "\(anchored.standardOutput)")
        #expect(try TrustRefreshTests.sources(anchored).first?["outcome"] as? String == "updated")
        #expect(try attack.genuineCSCAStored())
    }

    @Test("a twin CSCA (same subject and key identifier, another key) never removes the genuine one",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func twinNeverReplaces() async throws {
        let attack = try await Attack.make()
        defer { attack.setup.remove() }
        // Unanchored: refused like any self-signed CSCA.
        let refused = try await attack.setup.refresh(["--source", "csca=" + attack.setup.server.https("/files/twin-csca.cer")])
        #expect(refused.status == 1)
        #expect(try TrustRefreshTests.sources(refused).first?["reason"] as? String == "unanchored-csca")
        #expect(try attack.verdict(signer: "twin").status == .untrusted)
        // Even anchored (an operator fooled into naming it), it is another key: added beside, never in place of.
        let anchored = try await attack.setup.refresh(["--anchor-sha256", try attack.fingerprint("twin"),
                                                       "--source", "csca=" + attack.setup.server.https("/files/twin-csca.cer")])
        #expect(anchored.status == 0, "\(anchored.standardOutput)")
        let changes = try TrustRefreshTests.sources(anchored).first?["changes"] as? [String] ?? []
        #expect(changes.allSatisfy { !$0.contains("replaced") }, "\(changes)")
        #expect(try attack.genuineCSCAStored(), "the genuine CSCA is still in the store")
        #expect(try attack.verdict(signer: nil).status == .valid, "genuine chips still read valid")
        // And through `trust import` alike.
        let store = attack.setup.store
        let imported = try await runCommand(GBGBridgeBinary.path, ["trust", "import", "--store", store, "--json", "--anchor-sha256",
                                                                   try attack.fingerprint("twin"), attack.files.appendingPathComponent("twin-csca.cer").path])
        #expect(imported.status == 0, "\(imported.standardOutput) \(imported.standardError)")
        #expect(try attack.genuineCSCAStored())
    }

    @Test("a link certificate from the trusted CSCA is taken; each key keeps its own CRL, and the revoked signer stays revoked",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: TrustRefreshTests.hasPython, "needs python3 with cryptography (scripts/install-deps.sh)"))
    func crlPerKey() async throws {
        let attack = try await Attack.make()
        defer { attack.setup.remove() }
        let server = attack.setup.server
        // Key 1's CRL that revokes the genuine document signer.
        let revoking = try await attack.setup.refresh(["--source", "crl=" + server.https("/files/new.crl")])
        #expect(revoking.status == 0, "\(revoking.standardOutput)")
        #expect(try attack.verdict(signer: nil).chain == .revoked)
        // The second key arrives as a link certificate from the trusted key (over plain http: verified on arrival).
        let link = try await attack.setup.refresh(["--source", "csca=" + server.http("/files/link-csca.cer")])
        #expect(link.status == 0, "a link certificate from a trusted CSCA is accepted: \(link.standardOutput)")
        #expect(try TrustRefreshTests.sources(link).first?["outcome"] as? String == "updated")
        #expect(try attack.verdict(signer: "link").status == .valid, "a chip signed under the second key")
        // Key 2's empty CRL, newer and under the same issuer name: added beside key 1's, never in its place.
        let empty = try await attack.setup.refresh(["--source", "crl=" + server.https("/files/key2-empty.crl")])
        #expect(empty.status == 0, "\(empty.standardOutput)")
        let changes = try TrustRefreshTests.sources(empty).first?["changes"] as? [String] ?? []
        #expect(changes.contains { $0.contains("added the CRL") }, "\(changes)")
        #expect(try TrustRefreshTests.storedCRLs(attack.setup.store).count == 2)
        #expect(try attack.verdict(signer: nil).chain == .revoked, "the revoked document signer stays revoked")
        #expect(try attack.verdict(signer: nil).status == .invalid)
        // Key 1's older CRL (nothing revoked) is still refused: a replay would un-revoke.
        let replay = try await attack.setup.refresh(["--source", "crl=" + server.https("/files/mid.crl")])
        #expect(replay.status == 1)
        #expect(try attack.verdict(signer: nil).chain == .revoked)
    }
}
