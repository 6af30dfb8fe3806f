import CBORCoding
import COSE
import MRTDCrypto

/// A Verified Issuer Certificate Authority List (ISO 18013-5 Annex C; AAMVA publishes one): a
/// COSE_Sign1 over the list of IACA certificates, signed by a VICAL signer whose certificate is in
/// x5chain. The list is trusted only through an anchor named beforehand (`--anchor-sha256`, a
/// refresh source's `anchor-sha256`): the signer certificate itself, or a certificate in x5chain
/// that issued it.
public struct VICAL: Sendable {
    public struct Entry: Sendable {
        public let certificate: [UInt8]
        public let docTypes: [String]
        public let issuingCountry: String?
        public let issuingAuthority: String?
    }

    public let provider: String
    public let date: Double?
    public let issueID: Int?
    public let entries: [Entry]
    public let signature: COSESign1

    public static let limits = CBORLimits(maximumBytes: 16 << 20, maximumDepth: 12, maximumItems: 500_000, maximumStringBytes: 1 << 20)
    /// The most IACAs one list may carry.
    public static let maximumEntries = 10_000

    /// Whether `bytes` look like a COSE_Sign1 (tag 18, or an array of 4), not a certificate.
    public static func looksLikeVICAL(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: [0xD2, 0x84]) || bytes.first == 0x84
    }

    public init(bytes: [UInt8]) throws(MdocError) {
        let item = try CBOR.decode(bytes, as: "the VICAL", limits: Self.limits)
        do { signature = try COSESign1(cbor: item) } catch { throw MdocError(error, in: "the VICAL") }
        guard let payload = signature.payload else { throw .malformed("the VICAL's payload is detached") }
        var content = try CBOR.decode(payload, as: "the VICAL's payload", limits: Self.limits)
        if let embedded = content.embeddedValue { content = try CBOR.decode(embedded.content, as: "the VICAL's payload", limits: Self.limits) }
        let map = try content.requireMap("the VICAL")
        provider = try map.required("vicalProvider", in: "the VICAL").requireText("vicalProvider")
        date = try? MdocTime.seconds(map["date"], "date")
        issueID = map["vicalIssueID"]?.intValue
        let infos = try map.required("certificateInfos", in: "the VICAL").requireArray("certificateInfos")
        guard infos.count <= Self.maximumEntries else { throw MdocError(.limitExceeded, "a VICAL of \(infos.count) certificates; at most \(Self.maximumEntries)") }
        var entries: [Entry] = []
        for info in infos {
            let entry = try info.requireMap("a CertificateInfo")
            let certificate = try entry.required("certificate", in: "a CertificateInfo").requireBytes("certificate")
            let docTypes = (entry["docType"]?.arrayValue ?? []).compactMap(\.textValue)
            entries.append(Entry(certificate: certificate, docTypes: docTypes, issuingCountry: entry["issuingCountry"]?.textValue,
                                 issuingAuthority: entry["issuingAuthority"]?.textValue))
        }
        self.entries = entries
    }

    /// Verifies the list's signature and that an anchor vouches for its signer; returns the signer.
    public func verify(anchors: Set<String>) throws(MdocError) -> Certificate {
        let chain: [[UInt8]]
        do { chain = try signature.headers.x5chain() } catch { throw MdocError(error, in: "the VICAL's x5chain") }
        guard let leafBytes = chain.first else { throw .malformed("the VICAL carries no signer certificate (x5chain)") }
        let signer: Certificate
        let key: PublicKey
        do {
            signer = try Certificate(bytes: leafBytes)
            key = try PublicKey(subjectPublicKeyInfo: signer.subjectPublicKeyInfo)
        } catch { throw .malformed("the VICAL signer's certificate: \(error.reason)") }
        do { try signature.verify(key: key) } catch { throw MdocError(.malformed, "the VICAL's signature: \(error.reason)") }
        let others = chain.dropFirst().compactMap { try? Certificate(bytes: $0) }
        let vouched = anchors.contains(Self.fingerprint(signer))
            || others.contains { anchors.contains(Self.fingerprint($0)) && signer.isIssued(byNameOf: $0) && signer.isSignatureValid(issuer: $0) }
        guard vouched else {
            throw MdocError(.untrustedList, "no anchor names the VICAL's signer (SHA-256 \(Self.fingerprint(signer))) or the certificate that issued it")
        }
        return signer
    }

    /// SHA-256 of a certificate's DER, upper-case hex.
    public static func fingerprint(_ certificate: Certificate) -> String {
        DigestAlgorithm.sha256.hash(certificate.derBytes).map { String($0, radix: 16, uppercase: true).leftPadded(2) }.joined()
    }
}
