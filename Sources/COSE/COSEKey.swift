import CBORCoding
import MRTDCrypto

/// A COSE_Key (RFC 9052 §7): an EC2 key on a NIST or Brainpool curve, or an OKP key (Ed25519,
/// Ed448, X25519, X448), public or with its private part.
public struct COSEKey: Sendable, Hashable {
    public enum Curve: Int, Sendable, Hashable, CaseIterable {
        case p256 = 1, p384 = 2, p521 = 3, x25519 = 4, x448 = 5, ed25519 = 6, ed448 = 7
        case brainpoolP256r1 = 256, brainpoolP320r1 = 257, brainpoolP384r1 = 258, brainpoolP512r1 = 259

        /// The Weierstrass curve of an EC2 key; nil for OKP curves.
        public var ellipticCurve: EllipticCurve? {
            switch self {
            case .p256: return .nistP256
            case .p384: return .nistP384
            case .p521: return .nistP521
            case .brainpoolP256r1: return .brainpoolP256r1
            case .brainpoolP320r1: return .brainpoolP320r1
            case .brainpoolP384r1: return .brainpoolP384r1
            case .brainpoolP512r1: return .brainpoolP512r1
            default: return nil
            }
        }

        public init?(_ curve: EllipticCurve) {
            guard let match = Self.allCases.first(where: { $0.ellipticCurve == curve }) else { return nil }
            self = match
        }

        public var name: String { ellipticCurve?.name ?? String(describing: self) }
    }

    public let curve: Curve
    /// EC2: the uncompressed point `04 ‖ x ‖ y`. OKP: the raw public key.
    public let publicKey: [UInt8]
    /// The private scalar (EC2) or raw private key (OKP), when present.
    public let privateKey: [UInt8]?

    public init(curve: Curve, publicKey: [UInt8], privateKey: [UInt8]? = nil) {
        self.curve = curve
        self.publicKey = publicKey
        self.privateKey = privateKey
    }

    /// Parses a COSE_Key map; only kty 1 (OKP) and 2 (EC2) with the curves above, coordinates of the curve's size.
    public init(cbor: CBOR) throws(COSEError) {
        guard let map = cbor.mapValue else { throw .malformed("a COSE_Key is a \(cbor.kindName), not a map") }
        guard let kty = map[1]?.intValue else { throw .malformed("a COSE_Key without a key type (label 1)") }
        guard let curveNumber = map[-1]?.intValue else { throw .malformed("a COSE_Key without a curve (label -1)") }
        guard let curve = Curve(rawValue: curveNumber) else { throw COSEError(.unsupportedAlgorithm, "COSE curve \(curveNumber)") }
        guard let x = map[-2]?.bytesValue else { throw .malformed("a COSE_Key without x (label -2)") }
        let d = map[-4].flatMap(\.bytesValue)
        switch kty {
        case 2:
            guard let elliptic = curve.ellipticCurve else { throw COSEError(.invalidKey, "curve \(curve.name) in an EC2 key") }
            let size = elliptic.fieldSize
            guard let yItem = map[-3] else { throw .malformed("an EC2 key without y (label -3)") }
            guard let y = yItem.bytesValue else {
                throw COSEError(.unsupportedAlgorithm, "an EC2 key with a compressed point (y is a \(yItem.kindName)); ISO 18013-5 keys carry y")
            }
            guard x.count == size, y.count == size else {
                throw COSEError(.invalidKey, "an EC2 key on \(elliptic.name) with x of \(x.count) and y of \(y.count) bytes, not \(size)")
            }
            self.init(curve: curve, publicKey: [0x04] + x + y, privateKey: d)
        case 1:
            guard curve.ellipticCurve == nil else { throw COSEError(.invalidKey, "curve \(curve.name) in an OKP key") }
            let length = [Curve.x25519: 32, .ed25519: 32, .x448: 56, .ed448: 57][curve] ?? 0
            guard x.count == length else { throw COSEError(.invalidKey, "an OKP key on \(curve) of \(x.count) bytes, not \(length)") }
            self.init(curve: curve, publicKey: x, privateKey: d)
        default:
            throw COSEError(.unsupportedAlgorithm, "COSE key type \(kty); ISO 18013-5 uses EC2 (2) and OKP (1)")
        }
    }

    /// The COSE_Key map (public part only unless `includingPrivate`).
    public func cbor(includingPrivate: Bool = false) -> CBOR {
        var map = CBORMap()
        if let elliptic = curve.ellipticCurve {
            let size = elliptic.fieldSize
            map[1] = CBOR(2)
            map[-1] = CBOR(curve.rawValue)
            map[-2] = .bytes(Array(publicKey[1...size]))
            map[-3] = .bytes(Array(publicKey[(size + 1)...]))
        } else {
            map[1] = CBOR(1)
            map[-1] = CBOR(curve.rawValue)
            map[-2] = .bytes(publicKey)
        }
        if includingPrivate, let privateKey { map[-4] = .bytes(privateKey) }
        return .map(map)
    }

    /// The key as an OpenSSL public key for verification (EC2 and Ed25519/Ed448).
    public func verificationKey() throws(COSEError) -> PublicKey {
        let key: PublicKey?
        do {
            if let elliptic = curve.ellipticCurve {
                key = try PublicKey.ec(curve: elliptic, point: publicKey)
            } else if curve == .ed25519 {
                key = try PublicKey.edwards(.ed25519, raw: publicKey)
            } else if curve == .ed448 {
                key = try PublicKey.edwards(.ed448, raw: publicKey)
            } else {
                key = nil
            }
        } catch {
            throw COSEError(.invalidKey, error.reason)
        }
        guard let key else { throw COSEError(.invalidKey, "a \(curve) key cannot verify signatures") }
        return key
    }

    /// The key from a public key (EC on a known curve, or Edwards).
    public init(publicKey key: PublicKey) throws(COSEError) {
        if let (elliptic, point) = key.ecPoint, let curve = Curve(elliptic) {
            self.init(curve: curve, publicKey: point)
        } else {
            throw COSEError(.unsupportedAlgorithm, "a \(key) key has no COSE_Key form here")
        }
    }
}
