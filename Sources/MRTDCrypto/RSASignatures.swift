import COpenSSL
import COpenSSLShim

/// RSA signatures over a digest, PKCS#1 v1.5 or PSS (salt as long as the digest, MGF1 with the
/// same hash), as BSI TR-03110's id-TA-RSA-* algorithms use them.
public enum RSAPadding: String, Sendable, Hashable {
    case pkcs1v15 = "PKCS#1 v1.5"
    case pss = "PSS"
}

extension PrivateKey {
    /// The modulus and public exponent of an RSA key (big-endian, unpadded).
    public var rsaComponents: (modulus: [UInt8], exponent: [UInt8])? {
        guard let modulus = bigNumberParameter(pointer, "n"), let exponent = bigNumberParameter(pointer, "e") else { return nil }
        return (modulus, exponent)
    }

    /// An RSA signature over `digest` (made with `hash`).
    public func rsaSign(digest: [UInt8], hash: DigestAlgorithm, padding: RSAPadding) throws(CryptoError) -> [UInt8] {
        try privateKeySign(digest, what: "RSA \(padding.rawValue) signing with \(hash.rawValue)") { context in
            configure(context, hash: hash, padding: padding)
        }
    }
}

extension PublicKey {
    /// Whether `signature` is an RSA signature over `digest` (made with `hash`).
    public func rsaVerify(digest: [UInt8], signature: [UInt8], hash: DigestAlgorithm, padding: RSAPadding) -> Bool {
        guard keyType == .rsa, let context = EVP_PKEY_CTX_new(pointer, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        defer { ERR_clear_error() }
        // PSS: any salt length is accepted (signers use the hash length or the maximum; OpenPACE the latter).
        return EVP_PKEY_verify_init(context) == 1 && configure(context, hash: hash, padding: padding, verifying: true)
            && EVP_PKEY_verify(context, signature, signature.count, digest, digest.count) == 1
    }

    /// The modulus and public exponent of an RSA key (big-endian, unpadded).
    public var rsaComponents: (modulus: [UInt8], exponent: [UInt8])? {
        guard keyType == .rsa, let modulus = bigNumberParameter(pointer, "n"), let exponent = bigNumberParameter(pointer, "e") else { return nil }
        return (modulus, exponent)
    }
}

private func configure(_ context: OpaquePointer, hash: DigestAlgorithm, padding: RSAPadding, verifying: Bool = false) -> Bool {
    switch padding {
    case .pkcs1v15:
        return EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1 && EVP_PKEY_CTX_set_signature_md(context, hash.evp) == 1
    case .pss:
        return EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) == 1 && EVP_PKEY_CTX_set_signature_md(context, hash.evp) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(context, hash.evp) == 1 && EVP_PKEY_CTX_set_rsa_pss_saltlen(context, verifying ? RSA_PSS_SALTLEN_AUTO : Int32(hash.outputLength)) == 1
    }
}

/// A big-number parameter of a key (`n`, `e` …) as unpadded big-endian bytes.
func bigNumberParameter(_ key: OpaquePointer, _ name: String) -> [UInt8]? {
    var number: OpaquePointer?
    guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let number else {
        ERR_clear_error()
        return nil
    }
    defer { BN_free(number) }
    var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
    guard BN_bn2bin(number, &bytes) == Int32(bytes.count) else { return nil }
    return bytes
}
