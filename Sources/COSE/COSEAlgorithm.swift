import MRTDCrypto

/// The COSE algorithms ISO 18013-5 uses (RFC 9053 identifiers).
public enum COSEAlgorithm: Int, Sendable, Hashable, CaseIterable {
    case es256 = -7
    case es384 = -35
    case es512 = -36
    case edDSA = -8
    case hmac256 = 5

    /// The hash a signature or MAC uses (EdDSA hashes internally; SHA-512 stands in for Ed25519's).
    public var hash: DigestAlgorithm {
        switch self {
        case .es256, .hmac256: return .sha256
        case .es384: return .sha384
        case .es512, .edDSA: return .sha512
        }
    }

    public var isSignature: Bool { self != .hmac256 }

    public var name: String {
        switch self {
        case .es256: return "ES256"
        case .es384: return "ES384"
        case .es512: return "ES512"
        case .edDSA: return "EdDSA"
        case .hmac256: return "HMAC 256/256"
        }
    }

    /// The algorithm with this COSE identifier, or an `unsupportedAlgorithm` error naming it.
    static func named(_ identifier: Int?) throws(COSEError) -> COSEAlgorithm {
        guard let identifier else { throw COSEError(.malformed, "no algorithm (label 1) in the protected header") }
        guard let algorithm = COSEAlgorithm(rawValue: identifier) else {
            throw COSEError(.unsupportedAlgorithm, "COSE algorithm \(identifier) is not one of ES256, ES384, ES512, EdDSA, HMAC 256/256")
        }
        return algorithm
    }
}
