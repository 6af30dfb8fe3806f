import COpenSSL
import COpenSSLShim

/// Reads OpenSSL's memory BIO out as bytes.
func bioBytes(_ bio: OpaquePointer) -> [UInt8] {
    var pointer: UnsafeMutablePointer<CChar>?
    let length = COpenSSLShim_bio_mem_data(bio, &pointer)
    guard let pointer, length > 0 else { return [] }
    return UnsafeRawBufferPointer(start: pointer, count: length).map { $0 }
}

func withMemoryBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) throws(CryptoError) -> T) throws(CryptoError) -> T {
    guard let bio = bytes.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
        throw CryptoError.openSSL("BIO_new_mem_buf")
    }
    defer { BIO_free(bio) }
    return try body(bio)
}

/// An X.509 certificate (owning an OpenSSL `X509`).
public final class Certificate: @unchecked Sendable, CustomStringConvertible {
    // Immutable after init; OpenSSL's X509 is safe for concurrent reads.
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { X509_free(pointer) }

    /// Parses DER or PEM.
    public convenience init(bytes: [UInt8]) throws(CryptoError) {
        let isPEM = bytes.starts(with: Array("-----BEGIN".utf8))
        let parsed: OpaquePointer? = try withMemoryBIO(bytes) { bio in
            isPEM ? PEM_read_bio_X509(bio, nil, nil, nil) : d2i_X509_bio(bio, nil)
        }
        guard let parsed else { throw CryptoError.openSSL("parsing a certificate") }
        self.init(taking: parsed)
    }

    /// The DER encoding.
    public var derBytes: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(pointer, &out)
        guard length > 0, let out else { return [] }
        defer { COpenSSLShim_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The subject as a one-line RFC 2253 string (`CN=…,O=…,C=…`).
    public var subject: String { Self.name(X509_get_subject_name(pointer)) }
    /// The issuer as a one-line RFC 2253 string.
    public var issuer: String { Self.name(X509_get_issuer_name(pointer)) }

    static func name(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, name, 0, COpenSSLShim_name_flags_rfc2253())
        return String(decoding: bioBytes(bio), as: UTF8.self)
    }

    public var description: String { subject }
}

/// A private key (owning an OpenSSL `EVP_PKEY`).
public final class PrivateKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// Parses a PEM (PKCS#8 or traditional) or DER private key.
    public convenience init(bytes: [UInt8]) throws(CryptoError) {
        let isPEM = bytes.starts(with: Array("-----BEGIN".utf8))
        let parsed: OpaquePointer? = try withMemoryBIO(bytes) { bio in
            isPEM ? PEM_read_bio_PrivateKey(bio, nil, nil, nil) : d2i_PrivateKey_bio(bio, nil)
        }
        guard let parsed else { throw CryptoError.openSSL("parsing a private key") }
        self.init(taking: parsed)
    }
}

/// CMS SignedData (RFC 5652), as EF.SOD and master lists use it.
public enum CMSSigner {
    /// Signs `content` as an encapsulated SignedData of `contentType` (an OID such as
    /// `2.23.136.1.1.1` for an LDS security object) with signed attributes, including the
    /// signer's certificate. Returns the DER ContentInfo.
    public static func sign(content: [UInt8], contentType: String, certificate: Certificate, key: PrivateKey,
                            digest: DigestAlgorithm = .sha256) throws(CryptoError) -> [UInt8] {
        try withMemoryBIO(content) { input throws(CryptoError) -> [UInt8] in
            let flags = UInt32(CMS_PARTIAL | CMS_BINARY | CMS_NOSMIMECAP)
            guard let cms = CMS_sign(nil, nil, nil, nil, flags) else { throw CryptoError.openSSL("CMS_sign") }
            defer { CMS_ContentInfo_free(cms) }
            guard let type = OBJ_txt2obj(contentType, 1) else {
                throw CryptoError(.invalidInput, "'\(contentType)' is not an OID")
            }
            defer { ASN1_OBJECT_free(type) }
            guard CMS_set1_eContentType(cms, type) == 1 else { throw CryptoError.openSSL("CMS_set1_eContentType") }
            guard CMS_add1_signer(cms, certificate.pointer, key.pointer, digest.evp, flags) != nil else {
                throw CryptoError.openSSL("CMS_add1_signer")
            }
            guard CMS_final(cms, input, nil, flags) == 1 else { throw CryptoError.openSSL("CMS_final") }
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_CMS_ContentInfo(cms, &out)
            guard length > 0, let out else { throw CryptoError.openSSL("i2d_CMS_ContentInfo") }
            defer { COpenSSLShim_free(out) }
            return Array(UnsafeBufferPointer(start: out, count: Int(length)))
        }
    }
}
