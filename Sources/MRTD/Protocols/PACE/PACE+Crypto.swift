import MRTDCrypto
import SmartCardCore

/// PACE's cryptographic steps, shared by the reader (`PACEProtocol`) and the emulated chip:
/// the password key, nonce encryption, mappings, session keys and authentication tokens
/// (ICAO 9303-11 §4.4, BSI TR-03110).
extension PACE {
    /// K_π: the key that encrypts the chip's nonce, from the MRZ (SHA-1 of the key information)
    /// or the CAN.
    package static func passwordKey(_ key: AccessKey, type: KeyDerivation.KeyType) -> [UInt8] {
        KeyDerivation.derive(key.pacePassword, purpose: .password, type: type)
    }

    /// s = D(K_π, z).
    package static func decryptNonce(_ encrypted: [UInt8], passwordKey: [UInt8], type: KeyDerivation.KeyType) throws(MRTDError) -> [UInt8] {
        do {
            return try type.cipher.cbc(encrypt: false, key: passwordKey, encrypted)
        } catch {
            throw MRTDError(.accessDenied, "the chip's PACE nonce could not be decrypted: \(error.reason)")
        }
    }

    /// z = E(K_π, s) (the chip's side).
    package static func encryptNonce(_ nonce: [UInt8], passwordKey: [UInt8], type: KeyDerivation.KeyType) throws(CryptoError) -> [UInt8] {
        try type.cipher.cbc(encrypt: true, key: passwordKey, nonce)
    }

    /// KS_Enc and KS_MAC from the shared secret.
    package static func sessionKeys(sharedSecret: [UInt8], type: KeyDerivation.KeyType) -> (encryption: [UInt8], mac: [UInt8]) {
        (KeyDerivation.derive(sharedSecret, purpose: .encryption, type: type),
         KeyDerivation.derive(sharedSecret, purpose: .mac, type: type))
    }

    /// The public-key data object the authentication token is computed over:
    /// `7F49 { 06 oid, 86 point }` for ECDH (`84 y` for DH).
    package static func publicKeyData(oid: String, publicKey: [UInt8], keyAgreement: KeyAgreement) -> [UInt8] {
        let content = DER.oid(oid) + BERTLV.encode(tag: keyAgreement == .ecdh ? 0x86 : 0x84, value: publicKey)
        return BERTLV.encode(tag: 0x7F49, value: content)
    }

    /// The authentication token: MAC(KS_MAC, public-key data of the other side's ephemeral key),
    /// 8 bytes (AES-CMAC truncated, or the 3DES retail MAC over padded data).
    package static func authenticationToken(macKey: [UInt8], type: KeyDerivation.KeyType, oid: String, otherPublicKey: [UInt8],
                                           keyAgreement: KeyAgreement) throws(CryptoError) -> [UInt8] {
        let data = publicKeyData(oid: oid, publicKey: otherPublicKey, keyAgreement: keyAgreement)
        switch type {
        case .tripleDES: return try retailMAC(key: macKey, iso9797Pad(data, blockSize: 8))
        default: return Array(try aesCMAC(key: macKey, data).prefix(8))
        }
    }

    /// PACE Integrated Mapping, pseudo-random number mapping R(s, t) of ICAO 9303-11 §4.4.3.3.2,
    /// with the cipher E of the protocol in CBC mode with a zero IV: k₀ = E(t, s);
    /// xᵢ = E(kᵢ, c₁), kᵢ₊₁ = E(kᵢ, c₀) (each key truncated to the cipher's key length);
    /// R = x₀ ‖ … ‖ xₙ₋₁ with n = ⌈(log₂ p + 64) / l⌉, l the bit length of s (128 or 256, which
    /// also picks the constants c₀, c₁). The caller reduces R mod p (`EllipticCurve.integratedMappingPoint`
    /// and `DiffieHellmanGroup.integratedMappingGenerator` do).
    package static func integratedMappingRandom(chipNonce s: [UInt8], terminalNonce t: [UInt8], type: KeyDerivation.KeyType,
                                               primeBits: Int) throws(CryptoError) -> [UInt8] {
        guard s.count == integratedMappingChipNonceLength(type) else {
            throw CryptoError(.invalidInput, "the chip's Integrated Mapping nonce must be \(integratedMappingChipNonceLength(type)) bytes, not \(s.count)")
        }
        guard t.count == type.keyLength else {
            throw CryptoError(.invalidInput, "the terminal's Integrated Mapping nonce must be \(type.keyLength) bytes, not \(t.count)")
        }
        let (c0, c1) = s.count == 16 ? (imConstant128.c0, imConstant128.c1) : (imConstant256.c0, imConstant256.c1)
        let n = (primeBits + 64 + s.count * 8 - 1) / (s.count * 8)
        let cipher = type.cipher
        var key = try cipher.cbc(encrypt: true, key: t, s)
        var random: [UInt8] = []
        random.reserveCapacity(n * s.count)
        for _ in 0..<n {
            let truncated = Array(key.prefix(type.keyLength))
            random += try cipher.cbc(encrypt: true, key: truncated, c1)
            key = try cipher.cbc(encrypt: true, key: truncated, c0)
        }
        return random
    }

    /// The length of the chip's nonce s in Integrated Mapping: l ≥ k, so 16 bytes for 3DES and
    /// AES-128, 32 for AES-192 and AES-256.
    package static func integratedMappingChipNonceLength(_ type: KeyDerivation.KeyType) -> Int {
        type.keyLength <= 16 ? 16 : 32
    }

    /// The constants c₀, c₁ of R(s, t) for l = 128 and l = 256.
    /// (ICAO 9303-11 §4.4.3.3.2; a test compares them with the hex the standard prints.)
    static let imConstant128: (c0: [UInt8], c1: [UInt8]) = (
        c0: [0xA6, 0x68, 0x89, 0x2A, 0x7C, 0x41, 0xE3, 0xCA, 0x73, 0x9F, 0x40, 0xB0, 0x57, 0xD8, 0x59, 0x04],
        c1: [0xA4, 0xE1, 0x36, 0xAC, 0x72, 0x5F, 0x73, 0x8B, 0x01, 0xC1, 0xF6, 0x02, 0x17, 0xC1, 0x88, 0xAD])
    static let imConstant256: (c0: [UInt8], c1: [UInt8]) = (
        c0: [0xD4, 0x63, 0xD6, 0x52, 0x34, 0x12, 0x4E, 0xF7, 0x89, 0x70, 0x54, 0x98, 0x6D, 0xCA, 0x0A, 0x17, 0x4E, 0x28, 0xDF, 0x75, 0x8C, 0xBA, 0xA0, 0x3F, 0x24, 0x06, 0x16, 0x41, 0x4D, 0x5A, 0x16, 0x76],
        c1: [0x54, 0xBD, 0x72, 0x55, 0xF0, 0xAA, 0xF8, 0x31, 0xBE, 0xC3, 0x42, 0x3F, 0xCF, 0x39, 0xD6, 0x9B, 0x6C, 0xBF, 0x06, 0x66, 0x77, 0xD0, 0xFA, 0xAE, 0x5A, 0xAD, 0xD9, 0x9D, 0xF8, 0xE5, 0x35, 0x17])

    /// Secure messaging after PACE: SSC starts at zero.
    package static func secureMessaging(encryptionKey: [UInt8], macKey: [UInt8], type: KeyDerivation.KeyType) -> SecureMessaging {
        SecureMessaging(cipher: type.cipher, encryptionKey: encryptionKey, macKey: macKey,
                        ssc: [UInt8](repeating: 0, count: type.cipher.blockSize))
    }
}

extension PACEDomain {
    /// Integrated Mapping: the mapped generator from the chip's nonce s and the terminal's t.
    package func mapIntegrated(chipNonce s: [UInt8], terminalNonce t: [UInt8], type: KeyDerivation.KeyType) throws(CryptoError) -> [UInt8] {
        switch self {
        case .ec(let curve):
            guard supportsIntegratedMapping(type) else {
                throw CryptoError(.unsupportedAlgorithm, "Integrated Mapping is not implemented on \(curve) (p ≢ 3 mod 4)")
            }
            let random = try PACE.integratedMappingRandom(chipNonce: s, terminalNonce: t, type: type, primeBits: curve.fieldBits)
            return try curve.integratedMappingPoint(random)
        case .dh(let group):
            let random = try PACE.integratedMappingRandom(chipNonce: s, terminalNonce: t, type: type, primeBits: group.bits)
            return try group.integratedMappingGenerator(random)
        }
    }

    package func generateKeyPair(generator: [UInt8]? = nil) throws(CryptoError) -> (privateKey: [UInt8], publicKey: [UInt8]) {
        switch self {
        case .ec(let curve): return try curve.generateKeyPair(generator: generator)
        case .dh(let group): return try group.generateKeyPair(generator: generator)
        }
    }

    package func isValidPublicKey(_ key: [UInt8]) -> Bool {
        switch self {
        case .ec(let curve): return curve.isValidPoint(key)
        case .dh(let group): return group.isValidPublicKey(key)
        }
    }

    /// The shared element: a point (ECDH) or a group element (DH).
    package func agree(privateKey: [UInt8], peer: [UInt8], generator: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        switch self {
        case .ec(let curve): return try curve.multiply(privateKey, point: peer, generator: generator)
        case .dh(let group): return try group.power(peer, privateKey)
        }
    }

    /// The key-agreement secret the session keys come from: the x coordinate (ECDH) or the value (DH).
    package func sharedSecret(privateKey: [UInt8], peer: [UInt8], generator: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        let element = try agree(privateKey: privateKey, peer: peer, generator: generator)
        if case .ec(let curve) = self { return try curve.xCoordinate(element) }
        return element
    }

    /// The generic mapping: G' = s·G + H (ECDH) or g' = g^s · h mod p (DH).
    package func mapGeneric(nonce: [UInt8], shared: [UInt8]) throws(CryptoError) -> [UInt8] {
        switch self {
        case .ec(let curve): return try curve.multiplyAdd(nonce, point: shared)
        case .dh(let group): return try group.multiply(try group.power(group.g, nonce), shared)
        }
    }
}
