import COpenSSL

/// The largest keys a chip, a document signer or a trust file may hand us, checked before any
/// arithmetic is done with them: a chip is untrusted input, and a 65,536-bit DH prime in DG14
/// costs over a minute of CPU in one modular exponentiation. The limits are what ICAO 9303 and
/// BSI TR-03110 allow, with room (Docs/hostile-input.md, "Key sizes"):
///
/// | key | limit | why |
/// |---|---|---|
/// | RSA modulus (AA in DG15, document signers, CSCAs) | 8192 bits | ICAO 9303-12 §5: CSCA ≤ 4096 in practice; room for one doubling |
/// | DH prime p (PACE, Chip Authentication) | 4096 bits | TR-03110-3 standardises 1024/2048; 3072 is the recommended maximum |
/// | DSA prime p | 4096 bits | as DH |
/// | EC field | 521 bits | the largest standard curve (P-521); Brainpool stops at 512 |
/// | SubjectPublicKeyInfo | 4 KiB of DER | an 8192-bit RSA key or a 4096-bit DH key with p, q, g, y fits in 2.2 KiB |
public enum KeySizeLimits {
    public static let maxRSABits = 8_192
    public static let maxDHBits = 4_096
    public static let maxDSABits = 4_096
    public static let maxECFieldBits = 521
    public static let maxSubjectPublicKeyInfoBytes = 4_096
    /// Chip keys looked at in one DG14 or EF.CardSecurity (a chip publishes one or two).
    public static let maxChipKeys = 8

    /// Why a DH prime of `bits` bits is refused, or `nil`.
    public static func dhRefusal(bits: Int) -> String? {
        bits > maxDHBits ? "a \(bits)-bit DH prime, above the \(maxDHBits) bits this reader accepts" : nil
    }

    /// The bit length of a big-endian unsigned number.
    public static func bitLength(_ bytes: some Collection<UInt8>) -> Int {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return 0 }
        return bytes.distance(from: first, to: bytes.endIndex) * 8 - bytes[first].leadingZeroBitCount
    }
}

extension PublicKey {
    /// Why this key is too large to be used, or `nil` when it is within `KeySizeLimits`.
    public var sizeRefusal: String? {
        let bits = self.bits
        switch keyType {
        case .rsa where bits > KeySizeLimits.maxRSABits:
            return "a \(bits)-bit RSA key, above the \(KeySizeLimits.maxRSABits) bits this reader accepts"
        case .dh where bits > KeySizeLimits.maxDHBits:
            return KeySizeLimits.dhRefusal(bits: bits)
        case .dsa where bits > KeySizeLimits.maxDSABits:
            return "a \(bits)-bit DSA key, above the \(KeySizeLimits.maxDSABits) bits this reader accepts"
        case .ec where bits > KeySizeLimits.maxECFieldBits:
            return "a \(bits)-bit EC key, above the \(KeySizeLimits.maxECFieldBits) bits this reader accepts"
        default:
            return nil
        }
    }
}

extension Certificate {
    /// Why this certificate's key is too large to be used, or `nil` (also `nil` when it has no
    /// key OpenSSL can read: its signature checks fail on their own).
    public var publicKeySizeRefusal: String? {
        guard let key = X509_get0_pubkey(pointer) else { return nil }
        return PublicKey(borrowing: key).sizeRefusal
    }
}
