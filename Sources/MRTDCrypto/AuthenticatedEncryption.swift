import COpenSSLShim

/// AES-GCM with a 16-byte tag (ISO 18013-5 §9.1.1.5 session encryption).
public enum AESGCM {
    /// `ciphertext ‖ tag`.
    public static func seal(key: [UInt8], iv: [UInt8], plaintext: [UInt8], additionalData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try run(encrypt: true, key: key, iv: iv, input: plaintext, additionalData: additionalData)
    }

    /// The plaintext of `ciphertext ‖ tag`; an `AUTHENTICATION_FAILED` error when the tag does not verify.
    public static func open(key: [UInt8], iv: [UInt8], sealed: [UInt8], additionalData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try run(encrypt: false, key: key, iv: iv, input: sealed, additionalData: additionalData)
    }

    private static func run(encrypt: Bool, key: [UInt8], iv: [UInt8], input: [UInt8], additionalData: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard [16, 24, 32].contains(key.count) else { throw CryptoError(.invalidKey, "an AES key of \(key.count) bytes") }
        guard encrypt || input.count >= 16 else { throw CryptoError(.malformedData, "\(input.count) bytes cannot hold a GCM tag") }
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var length = 0
        let status = COpenSSLShim_aes_gcm(encrypt ? 1 : 0, key, key.count, iv, iv.count, additionalData, additionalData.count,
                                          input, input.count, &output, &length)
        switch status {
        case 0: return Array(output.prefix(length))
        case -2: throw CryptoError(.authenticationFailed, "the GCM tag does not verify: the data was changed or the key is wrong")
        default: throw CryptoError.openSSL("AES-GCM")
        }
    }
}

/// HKDF (RFC 5869) and HMAC.
public enum KeyedHash {
    /// HKDF with `hash` (SHA-256 in ISO 18013-5): extract with `salt`, expand with `info` to `length` bytes.
    public static func hkdf(_ hash: DigestAlgorithm = .sha256, inputKey: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws(CryptoError) -> [UInt8] {
        guard length > 0, length <= 255 * hash.outputLength else { throw CryptoError(.invalidInput, "HKDF output of \(length) bytes") }
        var output = [UInt8](repeating: 0, count: length)
        guard COpenSSLShim_hkdf(hash.hmacName, inputKey, inputKey.count, salt, salt.count, info, info.count, &output, length) == 0 else {
            throw CryptoError.openSSL("HKDF")
        }
        return output
    }

    /// HMAC with `hash` over `data`.
    public static func hmac(_ hash: DigestAlgorithm = .sha256, key: [UInt8], _ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 64)
        var length = 0
        guard COpenSSLShim_hmac(hash.hmacName, key, key.count, data, data.count, &output, &length) == 0 else {
            throw CryptoError.openSSL("HMAC")
        }
        return Array(output.prefix(length))
    }

    /// Compares two MACs in time independent of where they differ.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

extension DigestAlgorithm {
    /// The name OpenSSL's HKDF and HMAC take for the digest.
    var hmacName: String {
        switch self {
        case .sha1: return "SHA1"
        case .sha224: return "SHA2-224"
        case .sha256: return "SHA2-256"
        case .sha384: return "SHA2-384"
        case .sha512: return "SHA2-512"
        }
    }
}
