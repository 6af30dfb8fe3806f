import MRTDCrypto

/// The signature algorithms of Terminal Authentication (BSI TR-03110-3 A.6.4): the OID in a CV
/// public key names how its holder signs.
public enum CVSignatureAlgorithm: String, Sendable, Hashable, CaseIterable {
    case rsaPKCS1v15SHA1 = "0.4.0.127.0.7.2.2.2.1.1"
    case rsaPKCS1v15SHA256 = "0.4.0.127.0.7.2.2.2.1.2"
    case rsaPSSSHA1 = "0.4.0.127.0.7.2.2.2.1.3"
    case rsaPSSSHA256 = "0.4.0.127.0.7.2.2.2.1.4"
    case rsaPKCS1v15SHA512 = "0.4.0.127.0.7.2.2.2.1.5"
    case rsaPSSSHA512 = "0.4.0.127.0.7.2.2.2.1.6"
    case ecdsaSHA1 = "0.4.0.127.0.7.2.2.2.2.1"
    case ecdsaSHA224 = "0.4.0.127.0.7.2.2.2.2.2"
    case ecdsaSHA256 = "0.4.0.127.0.7.2.2.2.2.3"
    case ecdsaSHA384 = "0.4.0.127.0.7.2.2.2.2.4"
    case ecdsaSHA512 = "0.4.0.127.0.7.2.2.2.2.5"

    /// The dotted OID.
    public var oid: String { rawValue }

    public var isRSA: Bool { rawValue.hasPrefix("0.4.0.127.0.7.2.2.2.1.") }

    public var hash: DigestAlgorithm {
        switch self {
        case .rsaPKCS1v15SHA1, .rsaPSSSHA1, .ecdsaSHA1: return .sha1
        case .ecdsaSHA224: return .sha224
        case .rsaPKCS1v15SHA256, .rsaPSSSHA256, .ecdsaSHA256: return .sha256
        case .ecdsaSHA384: return .sha384
        case .rsaPKCS1v15SHA512, .rsaPSSSHA512, .ecdsaSHA512: return .sha512
        }
    }

    /// The RSA padding; `nil` for ECDSA.
    public var rsaPadding: RSAPadding? {
        switch self {
        case .rsaPKCS1v15SHA1, .rsaPKCS1v15SHA256, .rsaPKCS1v15SHA512: return .pkcs1v15
        case .rsaPSSSHA1, .rsaPSSSHA256, .rsaPSSSHA512: return .pss
        default: return nil
        }
    }

    /// The name OpenPACE's `cvc-create --scheme` uses (`ECDSA_SHA_256`, `RSA_PSS_SHA_1` …).
    public var schemeName: String {
        switch self {
        case .rsaPKCS1v15SHA1: return "RSA_v1_5_SHA_1"
        case .rsaPKCS1v15SHA256: return "RSA_v1_5_SHA_256"
        case .rsaPKCS1v15SHA512: return "RSA_v1_5_SHA_512"
        case .rsaPSSSHA1: return "RSA_PSS_SHA_1"
        case .rsaPSSSHA256: return "RSA_PSS_SHA_256"
        case .rsaPSSSHA512: return "RSA_PSS_SHA_512"
        case .ecdsaSHA1: return "ECDSA_SHA_1"
        case .ecdsaSHA224: return "ECDSA_SHA_224"
        case .ecdsaSHA256: return "ECDSA_SHA_256"
        case .ecdsaSHA384: return "ECDSA_SHA_384"
        case .ecdsaSHA512: return "ECDSA_SHA_512"
        }
    }

    /// Signs `message` (hashed here) with `key`: plain `r ‖ s` for ECDSA (TR-03111), RSA as named.
    public func sign(_ message: [UInt8], with key: PrivateKey) throws(CVCertificateError) -> [UInt8] {
        let digest = hash.hash(message)
        do {
            if let padding = rsaPadding { return try key.rsaSign(digest: digest, hash: hash, padding: padding) }
            return try key.ecdsaSignPlain(digest: digest)
        } catch {
            throw CVCertificateError(.unsupportedAlgorithm, field: "signature", "signing with \(schemeName) failed: \(error.reason)")
        }
    }

    /// Whether `signature` over `message` verifies with `key`.
    public func verify(_ signature: [UInt8], over message: [UInt8], with key: PublicKey) -> Bool {
        let digest = hash.hash(message)
        if let padding = rsaPadding { return key.rsaVerify(digest: digest, signature: signature, hash: hash, padding: padding) }
        return key.keyType == .ec && key.ecdsaVerifyPlain(digest: digest, signature: signature)
    }
}
