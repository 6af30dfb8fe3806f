import Foundation
import MRTDCrypto
import MRTDEmulator
import SmartCard
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// EF.SODs as issuers make them, not as OpenSSL's `CMS_verify` expects them: the signer named by
/// an issuer whose encoding differs from the certificate's (attribute order, string types, case),
/// by subject key identifier, RSASSA-PSS, SHA-1 to SHA-512, with or without signed attributes, with
/// the document signer certificate left out.
@Suite("Awkward EF.SODs")
struct AwkwardSODTests {
    static let trust = TestFixtures.testTrustStore

    /// A fixture passport's data groups and its LDS security object (the content to sign).
    static let fixture: (content: [UInt8], dataGroups: [Int: [UInt8]]) = {
        let passport = try! TestFixtures.passport("utopia-td3-jpeg")
        let sod = try! SecurityObject(bytes: passport.applicationFiles[0x011D]!)
        var groups: [Int: [UInt8]] = [:]
        for (fid, content) in passport.applicationFiles where (0x0101...0x0110).contains(fid) { groups[Int(fid - 0x0100)] = content }
        return (sod.signedData.content!, groups)
    }()

    enum Signer: String, CaseIterable, Sendable { case ecdsa = "ECDSA P-256", rsa = "RSA PKCS #1", rsaPSS = "RSASSA-PSS" }

    static func signer(_ kind: Signer) throws -> (Certificate, PrivateKey) {
        let name = kind == .ecdsa ? "ds" : "ds-rsa"
        let certificate = try Certificate(bytes: Array(try Data(contentsOf: TestFixtures.url("pki/\(name).cert.pem"))))
        let key = try PrivateKey(bytes: Array(try Data(contentsOf: TestFixtures.url("pki/\(name).key.pem"))))
        return (certificate, key)
    }

    /// EF.SOD (with its 77 wrapper) signed as told.
    static func sod(_ kind: Signer, digest: DigestAlgorithm = .sha256, byKeyIdentifier: Bool = false,
                    withoutSignedAttributes: Bool = false) throws -> [UInt8] {
        let (certificate, key) = try signer(kind)
        var options = CMSSigner.Options()
        options.digest = digest
        options.signerBySubjectKeyIdentifier = byKeyIdentifier
        options.withoutSignedAttributes = withoutSignedAttributes
        options.rsaPSS = kind == .rsaPSS
        let signed = try CMSSigner.sign(content: fixture.content, contentType: SecurityObject.ldsSecurityObjectOID,
                                        certificate: certificate, key: key, options: options)
        return BERTLV.encode(tag: 0x77, value: signed)
    }

    func verify(_ bytes: [UInt8], trust: TrustStore = trust) throws -> PassiveAuthenticationResult {
        PassiveAuthentication.verify(sod: try SecurityObject(bytes: bytes), dataGroups: Self.fixture.dataGroups, trustStore: trust)
    }

    @Test("every signature scheme and digest verifies", arguments: Signer.allCases,
          [DigestAlgorithm.sha1, .sha224, .sha256, .sha384, .sha512])
    func schemesAndDigests(signer: Signer, digest: DigestAlgorithm) throws {
        let result = try verify(try Self.sod(signer, digest: digest))
        #expect(result.status == .valid, "\(signer.rawValue) \(digest): \(result.detail)")
        #expect(result.chain == .trusted)
        if signer == .rsaPSS { #expect(result.signatureAlgorithm?.lowercased().contains("pss") == true, "\(result.signatureAlgorithm ?? "")") }
    }

    @Test("signer by subject key identifier, and without signed attributes", arguments: Signer.allCases)
    func keyIdentifierAndNoAttributes(signer: Signer) throws {
        #expect(try verify(try Self.sod(signer, byKeyIdentifier: true)).status == .valid)
        let bare = try verify(try Self.sod(signer, withoutSignedAttributes: true))
        #expect(bare.status == .valid, "\(bare.detail)")
        #expect(bare.signingTime == nil)
    }

    @Test("an issuer that differs from the certificate's in attribute order, string types and case", arguments: Signer.allCases,
          [IssuerRewrite.reversedOrder, .otherStringTypes, .otherCase, .all])
    func canonicalIssuerMatch(signer: Signer, rewrite: IssuerRewrite) throws {
        let original = try Self.sod(signer)
        let rewritten = try rewrite.apply(toSOD: original)
        #expect(rewritten != original)
        let result = try verify(rewritten)
        #expect(result.status == .valid, "\(rewrite): \(result.detail)")
        #expect(result.documentSigner?.contains("GBGBridge Test Document Signer") == true)
    }

    @Test("the document signer left out of EF.SOD is taken from the trust store's document signers")
    func signerFromTheTrustStore() throws {
        let withoutCertificate = try IssuerRewrite.removeCertificates(fromSOD: try Self.sod(.rsaPSS))
        #expect(try verify(withoutCertificate).signature == .invalid)  // no signer known: not trusted blindly
        var trust = Self.trust
        try trust.add(path: TestFixtures.url("pki/ds-rsa.cert.pem"))
        let result = try verify(withoutCertificate, trust: trust)
        #expect(result.status == .valid, "\(result.detail)")
    }

    @Test("a changed byte anywhere in content or signature is caught; a wrong serial finds no signer")
    func tamperingIsCaught() throws {
        let good = try Self.sod(.rsaPSS)
        let content = try verify(try IssuerRewrite.flipContentByte(inSOD: good))
        #expect(content.signature == .invalid)
        var signature = good
        signature[signature.count - 5] ^= 0x01  // inside the signature value, the last field of the SignerInfo
        #expect(try verify(signature).signature == .invalid)
        let serial = try verify(try IssuerRewrite.changeSerial(inSOD: good))
        #expect(serial.signature == .invalid)
        #expect(serial.signatureDetail.contains("signer certificate not found"), "\(serial.signatureDetail)")
    }
}

/// Rewrites of a SignedData's first SignerInfo, the way issuers' encodings differ from the
/// certificate they name. The signature does not cover the signer identifier, so it still holds.
enum IssuerRewrite: String, CustomTestStringConvertible, Sendable {
    case reversedOrder, otherStringTypes, otherCase, all

    var testDescription: String { rawValue }

    func apply(toSOD sod: [UInt8]) throws -> [UInt8] {
        try Self.editSignerInfo(inSOD: sod) { fields in
            // SignerInfo: version, sid (IssuerAndSerialNumber: Name, serial), …
            var sid = try BERTLV.parseAll(fields[1].value)
            var rdns = try BERTLV.parseAll(sid[0].value)
            if self == .reversedOrder || self == .all { rdns.reverse() }
            if self == .otherStringTypes || self == .otherCase || self == .all {
                rdns = try rdns.map { rdn in
                    var attributes = try BERTLV.parseAll(rdn.value)
                    attributes = try attributes.map { attribute in
                        var parts = try BERTLV.parseAll(attribute.value)  // type, value
                        if self != .otherCase { parts[1].tag = parts[1].tag == 0x13 ? 0x0C : (parts[1].tag == 0x0C ? 0x13 : parts[1].tag) }
                        if self != .otherStringTypes { parts[1].value = Array(String(decoding: parts[1].value, as: UTF8.self).uppercased().utf8) }
                        return TLV(tag: 0x30, children: parts)
                    }
                    return TLV(tag: 0x31, children: attributes)
                }
            }
            sid[0] = TLV(tag: 0x30, children: rdns)
            fields[1] = TLV(tag: 0x30, children: sid)
        }
    }

    static func changeSerial(inSOD sod: [UInt8]) throws -> [UInt8] {
        try editSignerInfo(inSOD: sod) { fields in
            var sid = try BERTLV.parseAll(fields[1].value)
            sid[1].value[sid[1].value.count - 1] ^= 0x01
            fields[1] = TLV(tag: 0x30, children: sid)
        }
    }

    static func flipContentByte(inSOD sod: [UInt8]) throws -> [UInt8] {
        try editSignedData(inSOD: sod) { fields in
            // encapContentInfo: SEQ { OID, [0] { OCTET STRING } }
            let index = fields.firstIndex { $0.tag == 0x30 && (try? BERTLV.parseAll($0.value).first?.tag) == 0x06 }!
            var encapsulated = try BERTLV.parseAll(fields[index].value)
            var octets = try BERTLV.parseSingle(encapsulated[1].value)
            octets.value[octets.value.count / 2] ^= 0x01
            encapsulated[1] = TLV(tag: encapsulated[1].tag, value: octets.encoded())
            fields[index] = TLV(tag: 0x30, children: encapsulated)
        }
    }

    static func removeCertificates(fromSOD sod: [UInt8]) throws -> [UInt8] {
        try editSignedData(inSOD: sod) { fields in fields.removeAll { $0.tag == 0xA0 } }
    }

    /// Edits the SignedData's fields: version, digestAlgorithms, encapContentInfo, [0] certificates, …, signerInfos.
    static func editSignedData(inSOD sod: [UInt8], _ edit: (inout [TLV]) throws -> Void) throws -> [UInt8] {
        let wrapper = try BERTLV.parseSingle(sod)                      // 77
        var contentInfo = try BERTLV.parseAll(try BERTLV.parseSingle(wrapper.value).value)  // OID, [0]
        var signedData = try BERTLV.parseAll(try BERTLV.parseSingle(contentInfo[1].value).value)
        try edit(&signedData)
        contentInfo[1] = TLV(tag: 0xA0, value: BERTLV.encode(tag: 0x30, value: signedData.flatMap { $0.encoded() }))
        return BERTLV.encode(tag: 0x77, value: BERTLV.encode(tag: 0x30, value: contentInfo.flatMap { $0.encoded() }))
    }

    static func editSignerInfo(inSOD sod: [UInt8], _ edit: @escaping (inout [TLV]) throws -> Void) throws -> [UInt8] {
        try editSignedData(inSOD: sod) { fields in
            var infos = try BERTLV.parseAll(fields[fields.count - 1].value)
            var first = try BERTLV.parseAll(infos[0].value)
            try edit(&first)
            infos[0] = TLV(tag: 0x30, children: first)
            fields[fields.count - 1] = TLV(tag: 0x31, children: infos)
        }
    }
}
