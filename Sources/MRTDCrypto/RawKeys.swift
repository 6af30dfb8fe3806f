import COpenSSL
import COpenSSLShim

/// Keys from their raw parts, as COSE_Key carries them (ISO 18013-5, RFC 9053): an EC point or
/// scalar on a named curve, an Ed25519/Ed448 key's raw bytes.
extension PublicKey {
    /// The EC public key `point` (uncompressed, checked to lie on `curve`).
    public static func ec(curve: EllipticCurve, point: [UInt8]) throws(CryptoError) -> PublicKey {
        guard point.count == 1 + 2 * curve.fieldSize, let key = COpenSSLShim_ec_public_key(curve.nid, point, point.count) else {
            ERR_clear_error()
            throw CryptoError(.invalidKey, "not a point on \(curve.name)")
        }
        return PublicKey(taking: key)
    }

    /// An Edwards-curve public key (Ed25519: 32 bytes, Ed448: 57 bytes).
    public static func edwards(_ curve: EdwardsCurve, raw: [UInt8]) throws(CryptoError) -> PublicKey {
        guard raw.count == curve.keyLength, let key = EVP_PKEY_new_raw_public_key(curve.openSSLType, nil, raw, raw.count) else {
            ERR_clear_error()
            throw CryptoError(.invalidKey, "not an \(curve.rawValue) public key (\(raw.count) bytes)")
        }
        return PublicKey(taking: key)
    }

    /// The Edwards curve of an EdDSA key; nil for other keys.
    public var edwardsCurve: EdwardsCurve? {
        switch EVP_PKEY_get_base_id(pointer) {
        case EVP_PKEY_ED25519: return .ed25519
        case EVP_PKEY_ED448: return .ed448
        default: return nil
        }
    }

    /// Verifies a COSE-style signature over `message`: ECDSA as plain `r ‖ s` over `hash(message)`,
    /// or EdDSA over the message itself (`hash` ignored). False for any failure.
    public func verify(signature: [UInt8], message: [UInt8], hash: DigestAlgorithm) -> Bool {
        if edwardsCurve != nil {
            guard let context = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(context); ERR_clear_error() }
            return EVP_DigestVerifyInit_ex(context, nil, nil, nil, nil, pointer, nil) == 1
                && EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        }
        guard keyType == .ec, signature.count == 2 * byteSize else { return false }
        return ecdsaVerifyPlain(digest: hash.hash(message), signature: signature)
    }
}

/// The Edwards curves of EdDSA (RFC 8032).
public enum EdwardsCurve: String, Sendable, Hashable {
    case ed25519 = "Ed25519"
    case ed448 = "Ed448"

    public var keyLength: Int { self == .ed25519 ? 32 : 57 }
    var openSSLType: Int32 { self == .ed25519 ? EVP_PKEY_ED25519 : EVP_PKEY_ED448 }
}

extension PrivateKey {
    /// The EC private key with scalar `scalar` on `curve` (its public point computed).
    public static func ec(curve: EllipticCurve, scalar: [UInt8]) throws(CryptoError) -> PrivateKey {
        guard !scalar.isEmpty, scalar.count <= curve.fieldSize + 1, let key = COpenSSLShim_ec_private_key(curve.nid, scalar, scalar.count) else {
            ERR_clear_error()
            throw CryptoError(.invalidKey, "not a private scalar on \(curve.name)")
        }
        return PrivateKey(taking: key)
    }

    /// A fresh Edwards-curve key.
    public static func generateEdwards(_ curve: EdwardsCurve) throws(CryptoError) -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, curve.rawValue, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &key) == 1, let key else { throw CryptoError.openSSL("\(curve.rawValue) key generation") }
        return PrivateKey(taking: key)
    }

    /// The public half.
    public var publicKey: PublicKey {
        get throws(CryptoError) { try PublicKey(subjectPublicKeyInfo: subjectPublicKeyInfo) }
    }

    /// The raw public key of an Edwards-curve key; nil for other keys.
    public var edwardsPublicKey: [UInt8]? {
        var length = 0
        guard EVP_PKEY_get_raw_public_key(pointer, nil, &length) == 1 else { ERR_clear_error(); return nil }
        var raw = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_get_raw_public_key(pointer, &raw, &length) == 1 else { ERR_clear_error(); return nil }
        return Array(raw.prefix(length))
    }

    /// A COSE-style signature over `message`: ECDSA as plain `r ‖ s` over `hash(message)`, or
    /// EdDSA over the message itself.
    public func sign(message: [UInt8], hash: DigestAlgorithm) throws(CryptoError) -> [UInt8] {
        let base = EVP_PKEY_get_base_id(pointer)
        if base == EVP_PKEY_ED25519 || base == EVP_PKEY_ED448 {
            guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(context) }
            var length = 0
            guard EVP_DigestSignInit_ex(context, nil, nil, nil, nil, pointer, nil) == 1,
                  EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { throw CryptoError.openSSL("EdDSA signing") }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { throw CryptoError.openSSL("EdDSA signing") }
            return Array(signature.prefix(length))
        }
        return try ecdsaSignPlain(digest: hash.hash(message))
    }
}
