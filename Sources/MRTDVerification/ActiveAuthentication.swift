#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto
import SmartCardCore

/// Active Authentication (ICAO 9303-11 §6.1): the chip signs a random challenge with the private
/// key whose public half is in DG15 — a copied chip cannot.
package enum ActiveAuthentication {
    /// id-AA: the ActiveAuthenticationInfo in DG14 naming the ECDSA signature algorithm.
    package static let infoOID = "2.23.136.1.1.5"

    /// ISO/IEC 10118-3 hash identifiers used in the ISO 9796-2 trailer (`?? CC`).
    static let trailerHashes: [UInt8: DigestAlgorithm] = [0x33: .sha1, 0x34: .sha256, 0x35: .sha512, 0x36: .sha384, 0x38: .sha224]

    /// The signature algorithms an ActiveAuthenticationInfo may name, by OID. ICAO 9303-11 §6.1
    /// requires the plain signature format of BSI TR-03111 (r ‖ s), whose identifiers are
    /// ecdsa-plain-SHA1 … SHA512 (0.4.0.127.0.7.1.1.4.1.1–.5); documents also carry the X9.62
    /// ecdsa-with-SHA* identifiers for the same signatures. Both name the hash the chip signs with.
    package static let ecdsaSignatureAlgorithms: [String: DigestAlgorithm] = [
        // BSI TR-03111 §5.2.1 (ecdsa-plain-signatures).
        "0.4.0.127.0.7.1.1.4.1.1": .sha1, "0.4.0.127.0.7.1.1.4.1.2": .sha224, "0.4.0.127.0.7.1.1.4.1.3": .sha256,
        "0.4.0.127.0.7.1.1.4.1.4": .sha384, "0.4.0.127.0.7.1.1.4.1.5": .sha512,
        // ANSI X9.62 / RFC 5758.
        "1.2.840.10045.4.1": .sha1, "1.2.840.10045.4.3.1": .sha224, "1.2.840.10045.4.3.2": .sha256,
        "1.2.840.10045.4.3.3": .sha384, "1.2.840.10045.4.3.4": .sha512,
    ]

    /// The TR-03111 ecdsa-plain identifier for signatures with `digest`.
    package static func plainSignatureOID(_ digest: DigestAlgorithm) -> String {
        switch digest {
        case .sha1: return "0.4.0.127.0.7.1.1.4.1.1"
        case .sha224: return "0.4.0.127.0.7.1.1.4.1.2"
        case .sha256: return "0.4.0.127.0.7.1.1.4.1.3"
        case .sha384: return "0.4.0.127.0.7.1.1.4.1.4"
        case .sha512: return "0.4.0.127.0.7.1.1.4.1.5"
        }
    }

    /// The ECDSA digest named by DG14's ActiveAuthenticationInfo (SHA-256 when DG14 says nothing
    /// this reader knows).
    package static func ecdsaDigest(in dg14: SecurityInfos?) -> DigestAlgorithm {
        for entry in dg14?.entries ?? [] where entry.oid == infoOID {
            if let fields = try? BERTLV.parseSingle(entry.der).children(), fields.count >= 3, fields[2].tag == 0x06,
               let oid = DER.oidString(fields[2].value), let digest = ecdsaSignatureAlgorithms[oid] {
                return digest
            }
        }
        return .sha256
    }

    /// A challenge given as base64 (by a backend, on the command line, in evidence): its bytes
    /// when they are exactly the 8 INTERNAL AUTHENTICATE sends, else `nil`.
    package static func challenge(base64 text: String) -> [UInt8]? {
        guard text.count <= 64, let bytes = Data(base64Encoded: text), bytes.count == 8 else { return nil }
        return Array(bytes)
    }

    /// Checks the chip's answer to `challenge` against the DG15 key.
    package static func verify(publicKey: PublicKey, challenge: [UInt8], signature: [UInt8], ecdsaDigest: DigestAlgorithm)
        -> VerificationOutcome
    {
        switch publicKey.keyType {
        case .rsa:
            guard let block = publicKey.rsaRawPublic(signature), block.count >= 2 + 20 else {
                return VerificationOutcome(status: .invalid,
                                           detail: "the chip's RSA signature does not open with the DG15 key: the chip may be a copy")
            }
            return verifyISO9796(block: block, challenge: challenge)
        case .ec:
            let ok = publicKey.ecdsaVerifyPlain(digest: ecdsaDigest.hash(challenge), signature: signature)
            return ok ? VerificationOutcome(status: .valid, detail: "the chip signed the challenge with its DG15 key (ECDSA, \(ecdsaDigest.rawValue))")
                : VerificationOutcome(status: .invalid, detail: "the chip's ECDSA signature does not verify with the DG15 key: the chip may be a copy")
        default:
            return VerificationOutcome(status: .notSupported, detail: "DG15 holds a \(publicKey.keyType.rawValue) key, not RSA or EC")
        }
    }

    /// ISO/IEC 9796-2 digital signature scheme 1 with partial message recovery.
    static func verifyISO9796(block: [UInt8], challenge: [UInt8]) -> VerificationOutcome {
        let invalid = VerificationOutcome(status: .invalid, detail: "the chip's RSA signature does not verify with the DG15 key: the chip may be a copy")
        guard block.first == 0x6A else { return invalid }
        let digest: DigestAlgorithm
        let trailerLength: Int
        if block.last == 0xBC {
            (digest, trailerLength) = (.sha1, 1)
        } else if block.last == 0xCC, let known = trailerHashes[block[block.count - 2]] {
            (digest, trailerLength) = (known, 2)
        } else {
            return invalid
        }
        let digestStart = block.count - trailerLength - digest.outputLength
        guard digestStart > 1 else { return invalid }
        let recovered = Array(block[1..<digestStart])
        let expected = Array(block[digestStart..<(block.count - trailerLength)])
        guard digest.hash(recovered + challenge) == expected else { return invalid }
        return VerificationOutcome(status: .valid, detail: "the chip signed the challenge with its DG15 key (RSA, ISO 9796-2, \(digest.rawValue))")
    }

    /// The chip's side: an ISO 9796-2 (SHA-1, trailer BC) RSA signature over `challenge`.
    package static func signISO9796(key: PrivateKey, modulusBytes: Int, challenge: [UInt8]) throws(CryptoError) -> [UInt8] {
        let recoverable = secureRandomBytes(modulusBytes - 20 - 2)
        let block = [0x6A] + recoverable + DigestAlgorithm.sha1.hash(recoverable + challenge) + [0xBC]
        return try key.rsaRawPrivate(block)
    }
}
