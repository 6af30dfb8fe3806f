import COpenSSL
import COpenSSLShim

/// A parsed CMS SignedData (RFC 5652), BER or DER: EF.SOD, EF.CardSecurity, master lists.
public final class CMSSignedData: @unchecked Sendable {
    // Immutable after init; only read by OpenSSL afterwards.
    let pointer: OpaquePointer

    /// Parses a ContentInfo holding SignedData.
    public init(bytes: [UInt8]) throws(CryptoError) {
        let parsed: OpaquePointer? = try withMemoryBIO(bytes) { bio in d2i_CMS_bio(bio, nil) }
        guard let parsed else { throw CryptoError(.malformedData, "not a CMS ContentInfo: \(CryptoError.openSSL("d2i_CMS_bio").reason)") }
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

    /// Checks the signature(s) over the content and signed attributes (message digest included),
    /// without judging the signer's certificate: that is `TrustStore`'s job. `extraCertificates`
    /// are used when the SignedData does not carry its signer's certificate. Returns the signer
    /// certificate; throws when the signature does not verify.
    public func verifySignature(extraCertificates: [Certificate] = []) throws(CryptoError) -> Certificate {
        guard let stack = COpenSSLShim_x509_stack_new() else { throw CryptoError.openSSL("sk_X509_new") }
        defer { COpenSSLShim_x509_stack_free(stack) }
        for certificate in extraCertificates where X509_up_ref(certificate.pointer) == 1 {
            _ = COpenSSLShim_x509_stack_push(stack, certificate.pointer)
        }
        let flags = UInt32(CMS_NO_SIGNER_CERT_VERIFY | CMS_BINARY)
        ERR_clear_error()
        guard CMS_verify(pointer, stack, nil, nil, nil, flags) == 1 else {
            throw CryptoError(.invalidInput, CryptoError.openSSL("CMS_verify").reason)
        }
        guard let signers = CMS_get0_signers(pointer) else { throw CryptoError.openSSL("CMS_get0_signers") }
        defer { OPENSSL_sk_free(signers) }
        guard COpenSSLShim_x509_stack_count(signers) > 0, let first = COpenSSLShim_x509_stack_value(signers, 0),
              X509_up_ref(first) == 1 else {
            throw CryptoError(.invalidInput, "the SignedData names no signer certificate")
        }
        return Certificate(taking: first)
    }
}

func objectText(_ object: OpaquePointer?, numeric: Bool = true) -> String {
    guard let object else { return "" }
    var buffer = [CChar](repeating: 0, count: 128)
    let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, numeric ? 1 : 0)
    guard length > 0 else { return "" }
    return String(decoding: buffer.prefix(Int(min(length, 127))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
