import COpenSSL
import COpenSSLShim

extension PrivateKey {
    /// A fresh RSA key of `bits`.
    public static func generateRSA(bits: Int = 2048) throws(CryptoError) -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else { throw CryptoError.openSSL("RSA key generation") }
        return PrivateKey(taking: key)
    }

    /// A fresh EC key on a named curve (`prime256v1`, `brainpoolP256r1`, …).
    public static func generateEC(curveName: String) throws(CryptoError) -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        let ok = EVP_PKEY_keygen_init(context) == 1 && curveName.withCString { name in
            EVP_PKEY_CTX_set_group_name(context, name) == 1
        } && EVP_PKEY_keygen(context, &key) == 1
        guard ok, let key else { throw CryptoError.openSSL("EC key generation on \(curveName)") }
        return PrivateKey(taking: key)
    }

    /// The DER SubjectPublicKeyInfo of the public half.
    public var subjectPublicKeyInfo: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pointer, &out)
        guard length > 0, let out else { return [] }
        defer { COpenSSLShim_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The RSA private operation without padding (ISO 9796-2 signatures build their own block).
    public func rsaRawPrivate(_ block: [UInt8]) throws(CryptoError) -> [UInt8] {
        try rawOperation(block, sign: true)
    }

    private func rawOperation(_ input: [UInt8], sign: Bool) throws(CryptoError) -> [UInt8] {
        try privateKeySign(input, what: "RSA raw private operation") { context in EVP_PKEY_CTX_set_rsa_padding(context, RSA_NO_PADDING) == 1 }
    }

    /// An ECDSA signature over `digest`, as the plain `r ‖ s` of BSI TR-03111 (each padded to the field size).
    public func ecdsaSignPlain(digest: [UInt8]) throws(CryptoError) -> [UInt8] {
        let der = try privateKeySign(digest, what: "EVP_PKEY_sign_init") { _ in true }
        return try ECDSASignature.plain(fromDER: der, size: (Int(EVP_PKEY_get_bits(pointer)) + 7) / 8)
    }

    /// EVP_PKEY_sign over `input` with this key, the context set up by `configure` after
    /// EVP_PKEY_sign_init (`what` names the setup in the error): the length asked first, then the output.
    func privateKeySign(_ input: [UInt8], what: String, configure: (OpaquePointer) -> Bool) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_sign_init(context) == 1, configure(context) else { throw CryptoError.openSSL(what) }
        var length = 0
        guard EVP_PKEY_sign(context, nil, &length, input, input.count) == 1 else { throw CryptoError.openSSL("EVP_PKEY_sign") }
        var output = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(context, &output, &length, input, input.count) == 1 else { throw CryptoError.openSSL("EVP_PKEY_sign") }
        return Array(output.prefix(length))
    }
}

extension PublicKey {
    /// The RSA public operation without padding (recovers an ISO 9796-2 block); `nil` when it fails.
    public func rsaRawPublic(_ signature: [UInt8]) -> [UInt8]? {
        guard let context = EVP_PKEY_CTX_new(pointer, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_verify_recover_init(context) == 1, EVP_PKEY_CTX_set_rsa_padding(context, RSA_NO_PADDING) == 1 else { return nil }
        var length = 0
        guard EVP_PKEY_verify_recover(context, nil, &length, signature, signature.count) == 1 else { return nil }
        var output = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_verify_recover(context, &output, &length, signature, signature.count) == 1 else { return nil }
        ERR_clear_error()
        return Array(output.prefix(length))
    }

    /// Verifies a plain `r ‖ s` ECDSA signature over `digest`.
    public func ecdsaVerifyPlain(digest: [UInt8], signature: [UInt8]) -> Bool {
        guard let der = try? ECDSASignature.der(fromPlain: signature), let context = EVP_PKEY_CTX_new(pointer, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        defer { ERR_clear_error() }
        return EVP_PKEY_verify_init(context) == 1 && EVP_PKEY_verify(context, der, der.count, digest, digest.count) == 1
    }

    /// The modulus size in bytes (RSA) or the field size (EC).
    public var byteSize: Int { (bits + 7) / 8 }
}

/// Conversions between DER `Ecdsa-Sig-Value` and the plain `r ‖ s` format chips use.
public enum ECDSASignature {
    public static func plain(fromDER der: [UInt8], size: Int) throws(CryptoError) -> [UInt8] {
        // SEQUENCE { INTEGER r, INTEGER s }
        func integer(at index: inout Int) throws(CryptoError) -> [UInt8] {
            guard index + 2 <= der.count, der[index] == 0x02 else { throw CryptoError(.malformedData, "bad ECDSA signature") }
            let length = Int(der[index + 1])
            guard index + 2 + length <= der.count else { throw CryptoError(.malformedData, "bad ECDSA signature") }
            let value = Array(der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 })
            index += 2 + length
            guard value.count <= size else { throw CryptoError(.malformedData, "ECDSA value longer than the field") }
            return [UInt8](repeating: 0, count: size - value.count) + value
        }
        guard der.count > 2, der[0] == 0x30 else { throw CryptoError(.malformedData, "bad ECDSA signature") }
        var index = der[1] & 0x80 != 0 ? 2 + Int(der[1] & 0x7F) : 2
        return try integer(at: &index) + integer(at: &index)
    }

    public static func der(fromPlain plain: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !plain.isEmpty, plain.count.isMultiple(of: 2) else { throw CryptoError(.malformedData, "plain ECDSA signature of odd length") }
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02] + lengthBytes(value.count) + value
        }
        let half = plain.count / 2
        let content = integer(plain[..<half]) + integer(plain[half...])
        return [0x30] + lengthBytes(content.count) + content
    }

    static func lengthBytes(_ length: Int) -> [UInt8] {
        length < 0x80 ? [UInt8(length)] : length < 0x100 ? [0x81, UInt8(length)] : [0x82, UInt8(length >> 8), UInt8(length & 0xFF)]
    }
}
