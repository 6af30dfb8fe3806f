import MRTDCrypto

/// ICAO 9303-11 §9.7.1 key derivation: K = KDF(K_seed, c) for encryption (c = 1), MAC (c = 2)
/// and the PACE password key (c = 3).
package enum KeyDerivation {
    package enum Purpose: UInt8, Sendable {
        case encryption = 1
        case mac = 2
        case password = 3
    }

    /// The cipher and key length a derived key is for.
    package enum KeyType: Sendable, Hashable {
        case tripleDES
        case aes128
        case aes192
        case aes256

        package var cipher: BlockCipher { self == .tripleDES ? .tripleDES : .aes }

        /// The last arc of PACE and CA protocol OIDs: 1 3DES, 2 AES-128, 3 AES-192, 4 AES-256.
        package var oidArc: Int {
            switch self {
            case .tripleDES: return 1
            case .aes128: return 2
            case .aes192: return 3
            case .aes256: return 4
            }
        }

        package init?(oidArc: Int) {
            switch oidArc {
            case 1: self = .tripleDES
            case 2: self = .aes128
            case 3: self = .aes192
            case 4: self = .aes256
            default: return nil
            }
        }
        package var keyLength: Int {
            switch self {
            case .tripleDES, .aes128: return 16
            case .aes192: return 24
            case .aes256: return 32
            }
        }
    }

    /// Derives a key from shared secret `seed` (the BAC key seed, a PACE/CA shared secret or a
    /// password hash).
    package static func derive(_ seed: [UInt8], purpose: Purpose, type: KeyType) -> [UInt8] {
        let input = seed + [0, 0, 0, purpose.rawValue]
        switch type {
        case .tripleDES:
            let hash = DigestAlgorithm.sha1.hash(input)
            return adjustParity(Array(hash.prefix(16)))
        case .aes128:
            return Array(DigestAlgorithm.sha1.hash(input).prefix(16))
        case .aes192:
            return Array(DigestAlgorithm.sha256.hash(input).prefix(24))
        case .aes256:
            return DigestAlgorithm.sha256.hash(input)
        }
    }

    /// Sets the DES parity bit (least significant, odd parity) of every byte.
    package static func adjustParity(_ key: [UInt8]) -> [UInt8] {
        key.map { byte in
            let high = byte & 0xFE
            return high.nonzeroBitCount.isMultiple(of: 2) ? high | 1 : high
        }
    }

    /// The BAC key seed: the first 16 bytes of SHA-1 over the MRZ information
    /// (document number, date of birth, date of expiry, each with its check digit).
    package static func bacKeySeed(mrzInformation: String) -> [UInt8] {
        Array(DigestAlgorithm.sha1.hash(Array(mrzInformation.utf8)).prefix(16))
    }
}
