import TextSanitizing
import COpenSSL
import COpenSSLShim

/// A parsed CMS SignedData (RFC 5652), BER or DER: EF.SOD, EF.CardSecurity, master lists.
public final class CMSSignedData: @unchecked Sendable {
    // Immutable after init; only read by OpenSSL afterwards.
    let pointer: OpaquePointer

    /// Parses a ContentInfo holding SignedData.
    public init(bytes: [UInt8]) throws(CryptoError) {
        let parsed: OpaquePointer? = try withMemoryBIO(bytes) { bio in d2i_CMS_bio(bio, nil) }
        guard let parsed else { throw CryptoError(.malformedData, "not a CMS ContentInfo (\(bytes.count) bytes; \(CryptoError.openSSL("decoding").reason))") }
        guard let type = CMS_get0_type(parsed), OBJ_obj2nid(type) == NID_pkcs7_signed else {
            CMS_ContentInfo_free(parsed)
            throw CryptoError(.malformedData, "the CMS content is not SignedData")
        }
        pointer = parsed
    }

    deinit { CMS_ContentInfo_free(pointer) }

    /// The encapsulated content type (dotted OID).
    public var contentType: String { objectText(CMS_get0_eContentType(pointer)) }

    /// The encapsulated content, when present.
    public var content: [UInt8]? {
        guard let slot = CMS_get0_content(pointer), let octets = slot.pointee else { return nil }
        let length = Int(ASN1_STRING_length(octets))
        guard length > 0, let data = ASN1_STRING_get0_data(octets) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    /// Certificates carried in the SignedData.
    public var certificates: [Certificate] {
        guard let stack = CMS_get1_certs(pointer) else { return [] }
        defer { COpenSSLShim_x509_stack_free(stack) }
        return (0..<COpenSSLShim_x509_stack_count(stack)).compactMap { index in
            guard let cert = COpenSSLShim_x509_stack_value(stack, index), X509_up_ref(cert) == 1 else { return nil }
            return Certificate(taking: cert)
        }
    }

    /// Facts about the (first) signer.
    public struct SignerInfo: Sendable, Hashable {
        /// Digest algorithm, e.g. `SHA-256` (or the OID when unknown).
        public var digestAlgorithm: String
        /// Signature algorithm, e.g. `ecdsa-with-SHA256`, `RSASSA-PSS`, `sha256WithRSAEncryption`.
        public var signatureAlgorithm: String
        /// The signing-time signed attribute, as text (`YYMMDDhhmmssZ`), when present.
        public var signingTime: String?
    }

    public var signerInfo: SignerInfo? {
        guard let infos = CMS_get0_SignerInfos(pointer), OPENSSL_sk_num(infos) > 0,
              let raw = OPENSSL_sk_value(infos, 0) else { return nil }
        let info = OpaquePointer(raw)
        var digest: UnsafeMutablePointer<X509_ALGOR>?
        var signature: UnsafeMutablePointer<X509_ALGOR>?
        CMS_SignerInfo_get0_algs(info, nil, nil, &digest, &signature)
        func algorithmName(_ algorithm: UnsafeMutablePointer<X509_ALGOR>?) -> String {
            var object: OpaquePointer?
            X509_ALGOR_get0(&object, nil, nil, algorithm)
            let dotted = objectText(object)
            if let known = DigestAlgorithm(oid: dotted) { return known.rawValue }
            return objectText(object, numeric: false)
        }
        var signingTime: String?
        let index = CMS_signed_get_attr_by_NID(info, NID_pkcs9_signingTime, -1)
        if index >= 0, let attribute = CMS_signed_get_attr(info, index),
           let type = X509_ATTRIBUTE_get0_type(attribute, 0), type.pointee.type == V_ASN1_UTCTIME || type.pointee.type == V_ASN1_GENERALIZEDTIME,
           let string = type.pointee.value.asn1_string {
            let length = Int(ASN1_STRING_length(string))
            if let data = ASN1_STRING_get0_data(string) {
                signingTime = String(decoding: UnsafeBufferPointer(start: data, count: length), as: UTF8.self)
            }
        }
        return SignerInfo(digestAlgorithm: algorithmName(digest), signatureAlgorithm: algorithmName(signature),
                          signingTime: signingTime)
    }

    /// Checks the signature over the content and signed attributes (message digest included),
    /// without judging the signer's certificate: that is `TrustStore`'s job. Returns the signer
    /// certificate; throws when no certificate matches the signer or the signature does not verify.
    ///
    /// The signer is looked for among the certificates the SignedData carries, then among
    /// `extraCertificates` (a trust store's document signers). It is matched as issuers do name it
    /// in the field, not only byte for byte: by subject key identifier, or by serial number and an
    /// issuer name compared canonically (attribute order, string types, case and spacing do not
    /// matter). OpenSSL's own matching, used by `CMS_verify`, refuses such EF.SODs.
    public func verifySignature(extraCertificates: [Certificate] = []) throws(CryptoError) -> Certificate {
        guard let infos = CMS_get0_SignerInfos(pointer), OPENSSL_sk_num(infos) > 0 else {
            throw CryptoError(.invalidInput, "the SignedData has no signer")
        }
        let candidates = certificates + extraCertificates
        var signer: Certificate?
        for index in 0..<OPENSSL_sk_num(infos) {
            guard let raw = OPENSSL_sk_value(infos, index) else { continue }
            let info = OpaquePointer(raw)
            guard let certificate = candidates.first(where: { Self.signer(info, matches: $0) }) else {
                throw CryptoError(.invalidInput, "signer certificate not found (\(Self.signerDescription(info)))")
            }
            if let refusal = certificate.publicKeySizeRefusal {
                throw CryptoError(.invalidKey, "the signer certificate's key is refused (\(refusal)): nothing is verified with it")
            }
            CMS_SignerInfo_set1_signer_cert(info, certificate.pointer)
            ERR_clear_error()
            if CMS_signed_get_attr_count(info) >= 0 {
                // Signed attributes: the signature covers them (the message digest is checked below).
                guard CMS_SignerInfo_verify(info) == 1 else {
                    throw CryptoError(.invalidInput, "the signature does not verify: \(CryptoError.openSSL("CMS_SignerInfo_verify").reason)")
                }
            }
            signer = signer ?? certificate
        }
        // The content through the digests: the message-digest attribute, or the signature itself
        // when there are no signed attributes.
        guard let data = CMS_dataInit(pointer, nil) else { throw CryptoError.openSSL("CMS_dataInit") }
        defer { BIO_free_all(data) }
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while BIO_read(data, &buffer, Int32(buffer.count)) > 0 {}
        for index in 0..<OPENSSL_sk_num(infos) {
            guard let raw = OPENSSL_sk_value(infos, index) else { continue }
            ERR_clear_error()
            guard CMS_SignerInfo_verify_content(OpaquePointer(raw), data) == 1 else {
                throw CryptoError(.invalidInput, "the content does not match the signature: \(CryptoError.openSSL("CMS_SignerInfo_verify_content").reason)")
            }
        }
        guard let signer else { throw CryptoError(.invalidInput, "the SignedData names no signer certificate") }
        return signer
    }

    /// Whether `certificate` is the one `info` names.
    static func signer(_ info: OpaquePointer, matches certificate: Certificate) -> Bool {
        var keyIdentifier: UnsafeMutablePointer<ASN1_OCTET_STRING>?
        var issuer: OpaquePointer?
        var serial: UnsafeMutablePointer<ASN1_INTEGER>?
        guard CMS_SignerInfo_get0_signer_id(info, &keyIdentifier, &issuer, &serial) == 1 else { return false }
        if let keyIdentifier {
            guard let subjectKeyIdentifier = certificate.subjectKeyIdentifier else { return false }
            return asn1Bytes(keyIdentifier) == subjectKeyIdentifier
        }
        guard let issuer, let serial, ASN1_INTEGER_cmp(serial, X509_get0_serialNumber(certificate.pointer)) == 0,
              let certificateIssuer = X509_get_issuer_name(certificate.pointer) else { return false }
        return DistinguishedName(issuer) == DistinguishedName(certificateIssuer)
    }

    /// How the signer is named, for an error text.
    static func signerDescription(_ info: OpaquePointer) -> String {
        var keyIdentifier: UnsafeMutablePointer<ASN1_OCTET_STRING>?
        var issuer: OpaquePointer?
        var serial: UnsafeMutablePointer<ASN1_INTEGER>?
        guard CMS_SignerInfo_get0_signer_id(info, &keyIdentifier, &issuer, &serial) == 1 else { return "no signer identifier" }
        if let keyIdentifier {
            return "subject key identifier " + Formatting.hex(asn1Bytes(keyIdentifier))
        }
        let serialText = serial.map { Formatting.hex(asn1Bytes($0)) } ?? "?"
        return "issuer \(issuer.map { Certificate.name($0) } ?? "?"), serial \(serialText)"
    }
}

/// A distinguished name as a multiset of (attribute type, value) pairs with values compared the
/// way RFC 4518 compares directory strings (caseIgnoreMatch): Unicode case folded, leading and
/// trailing space removed and inner runs of space collapsed, whatever the string type.
struct DistinguishedName: Equatable {
    private let attributes: [String]

    init(_ name: OpaquePointer) {
        var attributes: [String] = []
        for index in 0..<X509_NAME_entry_count(name) {
            guard let entry = X509_NAME_get_entry(name, index) else { continue }
            let type = objectText(X509_NAME_ENTRY_get_object(entry))
            var value = ""
            if let data = X509_NAME_ENTRY_get_data(entry) {
                var utf8: UnsafeMutablePointer<UInt8>?
                let length = ASN1_STRING_to_UTF8(&utf8, data)
                if length >= 0, let utf8 {
                    value = String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
                    COpenSSLShim_free(utf8)
                }
            }
            let normalised = value.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
            attributes.append(type + "=" + normalised)
        }
        self.attributes = attributes.sorted()
    }
}

func asn1Bytes(_ string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
    let length = Int(ASN1_STRING_length(string))
    guard length > 0, let data = ASN1_STRING_get0_data(string) else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: length))
}

func objectText(_ object: OpaquePointer?, numeric: Bool = true) -> String {
    guard let object else { return "" }
    var buffer = [CChar](repeating: 0, count: 128)
    let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, numeric ? 1 : 0)
    guard length > 0 else { return "" }
    return String(decoding: buffer.prefix(Int(min(length, 127))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
