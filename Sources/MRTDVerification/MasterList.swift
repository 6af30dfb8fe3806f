import MRTDCrypto
import SmartCardCore

/// An ICAO CSCA master list (ICAO 9303-12 §8.2): CMS SignedData over `CscaMasterList`, signed by a
/// master-list signer whose certificate a country's CSCA issued. Parsed within bounds (at most
/// `maxCertificates`, counted before any certificate is parsed), its signature checked, and each
/// certificate it carries judged on its own (`problem(with:trusting:)`).
///
/// What a list is worth is a question of who vouches for its signer: a certificate inside the list
/// vouches for nothing by itself (an attacker's list carries the CSCA that issued its signer).
/// `trust import` accepts a list only when its signer is issued by a CSCA trusted before the list
/// was read (Docs/kiosk-deployment.md, "Trust anchors").
package struct MasterList: Sendable {
    /// Lists larger than this are refused whole (the biggest national lists hold a few hundred
    /// CSCAs; ICAO's collection of every country's a few thousand).
    package static let maxCertificates = 10_000

    /// The signer certificate, whose CMS signature over the list verifies.
    package let signer: Certificate
    /// The certificates the list carries (damaged ones left out).
    package let certificates: [Certificate]

    /// Parses `bytes` (a master list file) and checks its CMS signature; throws naming what is wrong.
    package init(bytes: [UInt8]) throws(MRTDError) {
        let signed: CMSSignedData
        do {
            signed = try CMSSignedData(bytes: bytes)
        } catch {
            throw MRTDError(.malformedData, "not a CMS SignedData: \(error.reason)")
        }
        try self.init(signed)
    }

    init(_ signed: CMSSignedData) throws(MRTDError) {
        guard signed.contentType == TrustStore.masterListOID, let content = signed.content else {
            throw MRTDError(.malformedData, "CMS content \(signed.contentType) is not a CSCA master list")
        }
        certificates = try Self.certificates(content)
        do {
            signer = try signed.verifySignature()
        } catch {
            throw MRTDError(.trustStore, "the master list's signature does not verify (\(error.reason)); it may have been altered")
        }
    }

    /// CscaMasterList ::= SEQUENCE { version INTEGER, certList SET OF Certificate }
    static func certificates(_ der: [UInt8]) throws(MRTDError) -> [Certificate] {
        let root = try parseLDS(der, expecting: 0x30, "CSCA master list")
        let fields = try children(of: root, "CSCA master list")
        guard fields.count == 2, fields[0].tag == 0x02, fields[1].tag == 0x31 else {
            throw MRTDError(.malformedData, "CSCA master list does not have a version and a certificate set")
        }
        let entries = try children(of: fields[1], "CSCA master list certificates").filter { $0.tag == 0x30 }
        guard entries.count <= maxCertificates else {
            throw MRTDError(.trustStore, "the master list holds \(entries.count) certificates, more than the \(maxCertificates) a list may hold: refused whole")
        }
        // A damaged certificate in a master list is skipped, not fatal.
        return entries.compactMap { try? Certificate(bytes: $0.encoded()) }
    }

    /// Whether `anchors` (CSCAs trusted before this list was read) issued the list's signer.
    package func signerIsIssued(byOneOf anchors: [Certificate]) -> Bool {
        anchors.contains { signer.isIssued(byNameOf: $0) && signer.isSignatureValid(issuer: $0) }
    }

    /// The certificates in the list that claim to have issued its signer (same name): those whose
    /// fingerprint an operator compares with what the country publishes.
    package var claimedSignerIssuers: [Certificate] {
        certificates.filter { candidate in
            guard signer.isIssued(byNameOf: candidate) else { return false }
            if let aki = signer.authorityKeyIdentifier, let ski = candidate.subjectKeyIdentifier { return aki == ski }
            return true
        }
    }

    /// Why `certificate` does not belong in a trust store, or `nil`: it must sign certificates (a CA
    /// by basic constraints, or keyCertSign in its key usage), its key within `KeySizeLimits`, and
    /// either self-signed with a signature that verifies (a CSCA) or issued by one of `issuers`
    /// (a link certificate — which may carry its issuer's very name, when a CSCA renews its key).
    package static func problem(with certificate: Certificate, trusting issuers: [Certificate]) -> String? {
        guard certificate.signsCertificates else {
            return "neither a CA nor allowed to sign certificates (key usage): a document signer? Only CSCA and link certificates belong in the trust store"
        }
        if let refusal = certificate.publicKeySizeRefusal { return "its key is refused (\(refusal))" }
        if certificate.isSelfIssued, certificate.isSignatureValid(issuer: certificate) { return nil }
        let issued = issuers.contains { $0 !== certificate && certificate.isIssued(byNameOf: $0) && certificate.isSignatureValid(issuer: $0) }
        if issued { return nil }
        return certificate.isSelfIssued
            ? "its signature verifies neither with its own key nor with a trusted CSCA of its name"
            : "not self-signed, and not issued by a trusted CSCA (a link certificate needs its issuer)"
    }
}

extension Certificate {
    /// The SHA-256 of the DER certificate, upper-case hex: the fingerprint countries publish for
    /// their CSCAs.
    package var sha256Fingerprint: String {
        DigestAlgorithm.sha256.hash(derBytes).map { hexByte($0) }.joined()
    }

    private func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
