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
    /// How the SignedData is made; the defaults are what most issuers do.
    public struct Options: Sendable, Hashable {
        /// The digest of the content and of the signed attributes.
        public var digest: DigestAlgorithm = .sha256
        /// Name the signer by subject key identifier instead of issuer and serial number.
        public var signerBySubjectKeyIdentifier = false
        /// Sign the content directly, without signed attributes.
        public var withoutSignedAttributes = false
        /// RSASSA-PSS (salt as long as the digest, MGF1 with the same digest) instead of PKCS #1 v1.5
        /// (RSA keys only).
        public var rsaPSS = false
        public init() {}
    }

    /// Signs `content` as an encapsulated SignedData of `contentType` (an OID such as
    /// `2.23.136.1.1.1` for an LDS security object) with signed attributes, including the
    /// signer's certificate. Returns the DER ContentInfo.
    public static func sign(content: [UInt8], contentType: String, certificate: Certificate, key: PrivateKey,
                            digest: DigestAlgorithm = .sha256) throws(CryptoError) -> [UInt8] {
        var options = Options()
        options.digest = digest
        return try sign(content: content, contentType: contentType, certificate: certificate, key: key, options: options)
    }

    /// Signs `content` with the given options (for tests and emulated chips that reproduce how
    /// issuers sign).
    public static func sign(content: [UInt8], contentType: String, certificate: Certificate, key: PrivateKey,
                            options: Options) throws(CryptoError) -> [UInt8] {
        try withMemoryBIO(content) { input throws(CryptoError) -> [UInt8] in
            let flags = UInt32(CMS_PARTIAL | CMS_BINARY | CMS_NOSMIMECAP)
            guard let cms = CMS_sign(nil, nil, nil, nil, flags) else { throw CryptoError.openSSL("CMS_sign") }
            defer { CMS_ContentInfo_free(cms) }
            guard let type = OBJ_txt2obj(contentType, 1) else {
                throw CryptoError(.invalidInput, "'\(contentType)' is not an OID")
            }
            defer { ASN1_OBJECT_free(type) }
            guard CMS_set1_eContentType(cms, type) == 1 else { throw CryptoError.openSSL("CMS_set1_eContentType") }
            var signerFlags = flags
            if options.signerBySubjectKeyIdentifier { signerFlags |= UInt32(CMS_USE_KEYID) }
            if options.withoutSignedAttributes { signerFlags |= UInt32(CMS_NOATTR) }
            if options.rsaPSS { signerFlags |= UInt32(CMS_KEY_PARAM) }
            guard let signer = CMS_add1_signer(cms, certificate.pointer, key.pointer, options.digest.evp, signerFlags) else {
                throw CryptoError.openSSL("CMS_add1_signer")
            }
            if options.rsaPSS {
                guard let context = CMS_SignerInfo_get0_pkey_ctx(signer),
                      EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) > 0,
                      EVP_PKEY_CTX_set_rsa_pss_saltlen(context, RSA_PSS_SALTLEN_DIGEST) > 0 else {
                    throw CryptoError.openSSL("RSASSA-PSS parameters")
                }
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

extension Certificate {
    /// The subject's country (its first `C=` attribute), as issuing states name themselves.
    public var country: String? {
        subject.split(separator: ",").lazy.map { $0.drop { $0 == " " } }
            .first { $0.hasPrefix("C=") }.map { String($0.dropFirst(2)) }
    }

    /// Validity start, as seconds since 1970.
    public var notBefore: Double? { Self.seconds(X509_get0_notBefore(pointer)) }
    /// Validity end, as seconds since 1970.
    public var notAfter: Double? { Self.seconds(X509_get0_notAfter(pointer)) }

    static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Double? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Double(timegm(&parts))
    }

    /// Whether `instant` (seconds since 1970) lies in the validity period.
    public func isValid(at instant: Double) -> Bool {
        guard let notBefore, let notAfter else { return false }
        return notBefore <= instant && instant <= notAfter
    }

    /// Whether this certificate's issuer name equals `other`'s subject name.
    public func isIssued(byNameOf other: Certificate) -> Bool {
        guard let issuer = X509_get_issuer_name(pointer), let subject = X509_get_subject_name(other.pointer) else { return false }
        return X509_NAME_cmp(issuer, subject) == 0
    }

    /// Whether `issuer`'s public key verifies this certificate's signature (explicit EC domain
    /// parameters included: this checks the signature only, not OpenSSL's chain policy).
    public func isSignatureValid(issuer: Certificate) -> Bool {
        // An issuer key above KeySizeLimits verifies nothing (its cost is the attacker's choice).
        guard let key = X509_get0_pubkey(issuer.pointer), issuer.publicKeySizeRefusal == nil else { return false }
        ERR_clear_error()
        let ok = X509_verify(pointer, key) == 1
        ERR_clear_error()
        return ok
    }

    /// Whether the subject and issuer names are the same.
    public var isSelfIssued: Bool { isIssued(byNameOf: self) }

    /// Whether the certificate may issue others (basicConstraints cA, keyCertSign when keyUsage is
    /// present): a CSCA or link certificate, never a document signer.
    public var isCertificateAuthority: Bool { X509_check_ca(pointer) == 1 }

    /// Whether the certificate says it signs certificates: a CA by basic constraints, or a key
    /// usage that names keyCertSign. Wider than `isCertificateAuthority`: real CSCAs in national
    /// master lists (Turkey's, Belgium's 03) carry keyCertSign with CA:FALSE or no basic
    /// constraints at all. A document signer has neither.
    public var signsCertificates: Bool {
        if X509_check_ca(pointer) == 1 { return true }
        let flags = X509_get_extension_flags(pointer)
        return flags & UInt32(EXFLAG_KUSAGE) != 0 && X509_get_key_usage(pointer) & UInt32(KU_KEY_CERT_SIGN) != 0
    }

    /// The serial number in hex.
    public var serialNumber: String {
        guard let serial = X509_get0_serialNumber(pointer), let number = ASN1_INTEGER_to_BN(serial, nil) else { return "" }
        defer { BN_free(number) }
        guard let text = BN_bn2hex(number) else { return "" }
        defer { COpenSSLShim_free(text) }
        return String(cString: text)
    }

    /// The subject public key's algorithm and size, e.g. `EC 256` / `RSA 2048`, plus whether an EC
    /// key carries explicit domain parameters.
    public var publicKeyDescription: String {
        guard let key = X509_get0_pubkey(pointer) else { return "unknown" }
        let bits = EVP_PKEY_get_bits(key)
        let type = EVP_PKEY_get_base_id(key)
        let name = type == EVP_PKEY_RSA ? "RSA" : type == EVP_PKEY_RSA_PSS ? "RSA-PSS" : type == EVP_PKEY_EC ? "EC"
            : type == EVP_PKEY_DSA ? "DSA" : "key type \(type)"
        return "\(name) \(bits)"
    }

    /// The subject key identifier extension, when present.
    public var subjectKeyIdentifier: [UInt8]? {
        guard let ski = X509_get0_subject_key_id(pointer) else { return nil }
        let length = Int(ASN1_STRING_length(ski))
        guard let data = ASN1_STRING_get0_data(ski) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    /// The URIs of its CRL distribution points (at most 8, each under 512 bytes; printable ASCII).
    public var crlDistributionURIs: [String] {
        let count = 8, length = 512
        var buffer = [CChar](repeating: 0, count: count * length)
        let written = Int(COpenSSLShim_crl_distribution_uris(pointer, &buffer, Int32(count), Int32(length)))
        return (0..<max(0, written)).compactMap { index in
            let bytes = buffer[(index * length)..<((index + 1) * length)].prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The authority key identifier's key id, when present.
    public var authorityKeyIdentifier: [UInt8]? {
        guard let aki = X509_get0_authority_key_id(pointer) else { return nil }
        let length = Int(ASN1_STRING_length(aki))
        guard let data = ASN1_STRING_get0_data(aki) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }
}

/// A certificate revocation list (owning an OpenSSL `X509_CRL`).
public final class RevocationList: @unchecked Sendable {
    let pointer: OpaquePointer

    public init(bytes: [UInt8]) throws(CryptoError) {
        let isPEM = bytes.starts(with: Array("-----BEGIN".utf8))
        let parsed: OpaquePointer? = try withMemoryBIO(bytes) { bio in
            isPEM ? PEM_read_bio_X509_CRL(bio, nil, nil, nil) : d2i_X509_CRL_bio(bio, nil)
        }
        guard let parsed else { throw CryptoError.openSSL("parsing a CRL") }
        pointer = parsed
    }

    deinit { X509_CRL_free(pointer) }

    /// The issuer as RFC 2253 text.
    public var issuer: String { Certificate.name(X509_CRL_get_issuer(pointer)) }

    /// When the CRL was issued (seconds since 1970).
    public var thisUpdate: Double? { Certificate.seconds(X509_CRL_get0_lastUpdate(pointer)) }

    /// The CRL as DER.
    public var derBytes: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509_CRL(pointer, &out)
        guard length > 0, let out else { return [] }
        defer { COpenSSLShim_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// When the issuer promises the next CRL (seconds since 1970); nil when the CRL names none.
    public var nextUpdate: Double? { Certificate.seconds(X509_CRL_get0_nextUpdate(pointer)) }

    /// Whether `issuer` signed this CRL (its name and key).
    public func isIssued(by issuer: Certificate) -> Bool {
        guard let name = X509_CRL_get_issuer(pointer), let subject = X509_get_subject_name(issuer.pointer),
              X509_NAME_cmp(name, subject) == 0, let key = X509_get0_pubkey(issuer.pointer) else { return false }
        ERR_clear_error()
        defer { ERR_clear_error() }
        return X509_CRL_verify(pointer, key) == 1
    }

    /// Whether `certificate`'s serial number is listed.
    public func revokes(_ certificate: Certificate) -> Bool {
        guard let serial = X509_get0_serialNumber(certificate.pointer) else { return false }
        var entry: OpaquePointer?
        return X509_CRL_get0_by_serial(pointer, &entry, UnsafeMutablePointer(mutating: serial)) == 1
    }
}

extension Certificate {
    /// Every certificate in a PEM bundle, or the one certificate of a DER file.
    public static func all(bytes: [UInt8]) throws(CryptoError) -> [Certificate] {
        guard String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN CERTIFICATE") else {
            return [try Certificate(bytes: bytes)]
        }
        return try withMemoryBIO(bytes) { bio in
            var result: [Certificate] = []
            while let cert = PEM_read_bio_X509(bio, nil, nil, nil) { result.append(Certificate(taking: cert)) }
            ERR_clear_error()
            return result
        }
    }
}

/// A public key (owning an OpenSSL `EVP_PKEY`), from a SubjectPublicKeyInfo.
public final class PublicKey: @unchecked Sendable, CustomStringConvertible {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }
    /// Shares a key another object owns (a certificate's).
    convenience init(borrowing pointer: OpaquePointer) {
        EVP_PKEY_up_ref(pointer)
        self.init(taking: pointer)
    }
    deinit { EVP_PKEY_free(pointer) }

    /// Parses a DER SubjectPublicKeyInfo (explicit EC domain parameters included). Refuses one
    /// larger than `KeySizeLimits.maxSubjectPublicKeyInfoBytes` before parsing it, and a key above
    /// `KeySizeLimits` (`sizeRefusal`) after: nothing is computed with such a key.
    public convenience init(subjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
        guard der.count <= KeySizeLimits.maxSubjectPublicKeyInfoBytes else {
            throw CryptoError(.invalidKey, "the public key is \(der.count) bytes of DER, more than the \(KeySizeLimits.maxSubjectPublicKeyInfoBytes) a key this reader accepts takes")
        }
        var cursor: UnsafePointer<UInt8>?
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw CryptoError(.malformedData, "not a SubjectPublicKeyInfo: \(CryptoError.openSSL("d2i_PUBKEY").reason)") }
        self.init(taking: parsed)
        if let refusal = sizeRefusal { throw CryptoError(.invalidKey, "refused: \(refusal)") }
    }

    public enum KeyType: String, Sendable { case rsa = "RSA", ec = "EC", dh = "DH", dsa = "DSA", other = "other" }

    public var keyType: KeyType {
        switch EVP_PKEY_get_base_id(pointer) {
        case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS: return .rsa
        case EVP_PKEY_EC: return .ec
        case EVP_PKEY_DH, EVP_PKEY_DHX: return .dh
        case EVP_PKEY_DSA: return .dsa
        default: return .other
        }
    }

    public var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }
    public var description: String { "\(keyType.rawValue) \(bits)" }
}
