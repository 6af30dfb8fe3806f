import Foundation
import MRTDCrypto
import SmartCard
import TestSupport
import TestTraits
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

@Suite("Passive authentication with real-world data")
struct PassiveAuthenticationTests {
    static let realSODs = ["AT", "DE", "FI", "FR", "NZ", "UK", "US"]

    /// The German and Dutch master lists of `../shared/fixtures/trust`, loaded once.
    static let loadedMasterLists = Result { () throws -> TrustStore in
        var store = TrustStore()
        try store.add(path: TestFixtures.sharedURL("trust/DE_ML_2026-05-28.ml"))
        try store.add(path: TestFixtures.sharedURL("trust/NL_ML_2026-07-22.ml"))
        return store
    }

    static var masterLists: TrustStore { get throws { try loadedMasterLists.get() } }

    func bytes(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

    @Test(.needsSharedFixtures) func masterListsLoad() throws {
        #expect(try Self.masterLists.certificates.count > 300)
        #expect(try Self.masterLists.sources.count == 2)
    }

    @Test("every real EF.SOD verifies: signature valid and chained to a CSCA", .needsSharedFixtures, arguments: realSODs)
    func realSOD(country: String) throws {
        let sod = try SecurityObject(bytes: try bytes(TestFixtures.sharedURL("real-sod/\(country).EF_SOD.bin")))
        #expect(!sod.dataGroupHashes.isEmpty)
        let result = PassiveAuthentication.verify(sod: sod, dataGroups: [:], trustStore: try Self.masterLists)
        #expect(result.signature == .valid, "\(country): \(result.signatureDetail)")
        #expect(result.chain == .trusted, "\(country): \(result.chainDetail)")
        #expect(result.status == .valid)
        #expect(result.documentSigner != nil && result.csca != nil)
        #expect(result.dataGroups.values.allSatisfy { $0 == .notRead })
    }

    @Test("the real EF.CardSecurity signatures verify too", .needsSharedFixtures, arguments: ["DE", "FI"])
    func cardSecurity(country: String) throws {
        let signed = try CMSSignedData(bytes: try bytes(TestFixtures.sharedURL("real-sod/\(country).EF_CardSecurity.bin")))
        let signer = try signed.verifySignature()
        let (chain, detail, csca) = PassiveAuthentication.chain(signer, trustStore: try Self.masterLists, at: signer.notBefore!)
        #expect(chain == .trusted, "\(country): \(detail)")
        #expect(csca != nil)
    }

    @Test(.needsSharedFixtures) func realSODWithoutTrustIsUntrusted() throws {
        let sod = try SecurityObject(bytes: try bytes(TestFixtures.sharedURL("real-sod/DE.EF_SOD.bin")))
        let result = PassiveAuthentication.verify(sod: sod, dataGroups: [:], trustStore: TrustStore())
        #expect(result.signature == .valid)
        #expect(result.chain == .untrusted)
        #expect(result.status == .untrusted)
    }

    @Test(.needsSharedFixtures) func bsi2008TestPassport() throws {
        let dir = TestFixtures.sharedURL("lds/bsi2008")
        let sod = try SecurityObject(bytes: try bytes(dir.appendingPathComponent("EF_SOD.bin")))
        var groups: [Int: [UInt8]] = [:]
        for n in [1, 2, 3, 4, 14, 15] { groups[n] = try bytes(dir.appendingPathComponent("Datagroup\(n).bin")) }
        let result = PassiveAuthentication.verify(sod: sod, dataGroups: groups, trustStore: try Self.masterLists)
        #expect(result.signature == .valid)
        #expect(result.chain == .untrusted)
        // DG4 and DG15 are on the chip but not in EF.SOD: not part of the signed document, so the
        // whole is invalid, whatever the chain (ICAO 9303-10: EF.SOD hashes every group present).
        #expect(result.status == .invalid)
        #expect(result.detail.hasPrefix("DG4, DG15 are present but not covered by EF.SOD"), "\(result.detail)")
        for name in ["DG1", "DG2", "DG3", "DG14"] { #expect(result.dataGroups[name] == .matched, "\(name)") }
        #expect(result.dataGroups["DG4"] == .notCovered)
        #expect(result.dataGroups["DG15"] == .notCovered)
        #expect(result.documentSigner != nil)
    }

    @Test(.needsSharedFixtures) func loes2006TestPassport() throws {
        let dir = TestFixtures.sharedURL("lds/loes2006")
        let sod = try SecurityObject(bytes: try bytes(dir.appendingPathComponent("ef011D.bin")))
        let groups = [1: try bytes(dir.appendingPathComponent("ef0101.bin")), 2: try bytes(dir.appendingPathComponent("ef0102.bin")),
                      15: try bytes(dir.appendingPathComponent("ef010F.bin"))]
        let result = PassiveAuthentication.verify(sod: sod, dataGroups: groups, trustStore: try Self.masterLists)
        #expect(result.signature == .valid)
        #expect(result.chain == .untrusted)
        #expect(result.dataGroups == ["DG1": .matched, "DG2": .matched, "DG15": .matched])
        #expect(result.documentSigner?.contains("DS Test") == true)
    }

    @Test func emulatedPassportIsTrustedByTheTestCSCA() throws {
        let passport = try TestFixtures.passport("utopia-td3-jpeg2000")
        let sod = try SecurityObject(bytes: passport.applicationFiles[0x011D]!)
        #expect(sod.digestAlgorithm == .sha512)
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        var groups: [Int: [UInt8]] = [:]
        for (fid, content) in passport.applicationFiles where (0x0101...0x0110).contains(fid) { groups[Int(fid - 0x0100)] = content }
        let result = PassiveAuthentication.verify(sod: sod, dataGroups: groups, trustStore: trust)
        #expect(result.status == .valid, "\(result.detail)")
        #expect(result.csca?.contains("GBGBridge Test CSCA") == true)

        // One altered byte in DG1 is caught.
        groups[1]![10] ^= 1
        let tampered = PassiveAuthentication.verify(sod: sod, dataGroups: groups, trustStore: trust)
        #expect(tampered.status == .invalid)
        #expect(tampered.dataGroups["DG1"] == .mismatched)

        // A directory of trust anchors works too (the DER copy and the PEM are both found).
        var directory = TrustStore()
        try directory.add(path: TestFixtures.url("pki"))
        #expect(directory.certificates.count >= 3)
    }

    @Test(.needsSharedFixtures) func malformedSODsAreTypedErrors() throws {
        #expect(throws: MRTDError.self) { _ = try SecurityObject(bytes: []) }
        #expect(throws: MRTDError.self) { _ = try SecurityObject(bytes: [0x77, 0x03, 0x30, 0x01, 0x00]) }
        var real = try bytes(TestFixtures.sharedURL("real-sod/FR.EF_SOD.bin"))
        real.removeLast(100)
        #expect(throws: MRTDError.self) { _ = try SecurityObject(bytes: real) }
        // A master list that is not one.
        var store = TrustStore()
        #expect(throws: MRTDError.self) { try store.add(bytes: try bytes(TestFixtures.sharedURL("real-sod/DE.EF_CardSecurity.bin"))) }
        #expect(throws: MRTDError.self) { try store.add(path: URL(fileURLWithPath: "/nonexistent/trust")) }
    }
}

@Suite("Revocation")
struct RevocationTests {
    func verify(crl: String?) throws -> PassiveAuthenticationResult {
        let passport = try TestFixtures.passport("utopia-td3-jpeg")
        let sod = try SecurityObject(bytes: passport.applicationFiles[0x011D]!)
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        if let crl { try trust.add(path: TestFixtures.url("crl/\(crl)")) }
        return PassiveAuthentication.verify(sod: sod, dataGroups: [1: passport.applicationFiles[0x0101]!], trustStore: trust)
    }

    @Test func emptyCRLChangesNothing() throws {
        #expect(try verify(crl: "csca-empty.crl.pem").status == .valid)
    }

    @Test func revokedDocumentSignerIsInvalid() throws {
        let result = try verify(crl: "csca-revokes-ds.crl.pem")
        #expect(result.chain == .revoked)
        #expect(result.status == .invalid)
        #expect(result.signature == .valid)
    }
}

@Suite("EF.SOD encodings")
struct SODEncodingTests {
    @Test func indefiniteLengthWrapperAndBareCMS() throws {
        let passport = try TestFixtures.passport("utopia-td3-jpeg")
        let sod = passport.applicationFiles[0x011D]!
        let header = try BERTLV.header(sod)
        let cms = Array(sod[header.headerLength...])
        // 77 with an indefinite length (as some issuers write it), the bare CMS, and trailing padding.
        for variant in [[0x77, 0x80] + cms + [0x00, 0x00], cms, sod + [0xFF, 0xFF, 0x00]] {
            let parsed = try SecurityObject(bytes: variant)
            #expect(parsed.dataGroupHashes.keys.sorted() == [1, 2, 11, 12])
            var trust = TrustStore()
            try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
            let result = PassiveAuthentication.verify(sod: parsed, dataGroups: [1: passport.applicationFiles[0x0101]!], trustStore: trust)
            #expect(result.status == .valid)
        }
    }
}

@Suite("Real EF.CardSecurity content")
struct RealCardSecurityTests {
    @Test("the chip keys of the DE and FI ID cards are found, on standard curves", .needsSharedFixtures, arguments: ["DE", "FI"])
    func chipKeys(country: String) throws {
        let signed = try CMSSignedData(bytes: Array(try Data(contentsOf: TestFixtures.sharedURL("real-sod/\(country).EF_CardSecurity.bin"))))
        #expect(signed.contentType == ChipAuthentication.cardSecurityContentType)
        let infos = try SecurityInfos(bytes: try #require(signed.content))
        let paceInfos = PACEInfo.all(in: infos)
        #expect(!paceInfos.isEmpty)
        let keys = ChipAuthentication.chipKeys(in: infos).compactMap { entry -> (EllipticCurve, [UInt8])? in
            guard case .ec(let curve, let point) = entry.key else { return nil }
            return (curve, point)
        }
        #expect(!keys.isEmpty, "\(country): no usable chip key")
        for (curve, point) in keys { #expect(curve.isValidPoint(point)) }
    }
}

/// Master lists are trusted only when their own signature holds.
@Suite("Master list signatures")
struct MasterListSignatureTests {
    /// A master list of `certificates`, signed with the test document signer (issued by the test CSCA).
    func masterList(_ certificates: [Certificate]) throws -> [UInt8] {
        let signer = try TestFixtures.documentSigner()
        let content = DER.sequence(DER.integer(0), DER.set(certificates.map(\.derBytes)))
        return try CMSSigner.sign(content: content, contentType: TrustStore.masterListOID, certificate: signer.certificate, key: signer.key)
    }

    @Test func aListSignedUnderACSCAItCarriesLoads() throws {
        let csca = try Certificate.all(bytes: Array(try Data(contentsOf: TestFixtures.url("pki/csca.cert.pem"))))
        var store = TrustStore()
        try store.add(bytes: try masterList(csca), name: "test.ml")
        #expect(store.certificates.count == 1)
    }

    @Test(.needsSharedFixtures) func aListWhoseSignerNoCSCAVouchesForIsRefused() throws {
        // Signed by the test document signer, but the list holds only a real country's CSCA.
        var real = TrustStore()
        try real.add(path: TestFixtures.sharedURL("trust/NL_ROOT_CA.cer"))
        var store = TrustStore()
        #expect {
            try store.add(bytes: try masterList(real.certificates), name: "foreign.ml")
        } throws: { ($0 as? MRTDError)?.code == .trustStore && "\($0)".contains("not issued by a CSCA") }
        #expect(store.certificates.isEmpty)
    }

    @Test(.needsSharedFixtures) func anAlteredListIsRefused() throws {
        // One byte changed inside a certificate of the signed content.
        var bytes = Array(try Data(contentsOf: TestFixtures.sharedURL("trust/NL_ML_2026-07-22.ml")))
        bytes[bytes.count / 2] ^= 0x01
        var store = TrustStore()
        #expect {
            try store.add(bytes: bytes, name: "altered.ml")
        } throws: { ($0 as? MRTDError)?.code == .trustStore && "\($0)".contains("signature does not verify") }
        #expect(store.certificates.isEmpty)
    }
}
