import COpenSSL
import COpenSSLShim

/// The standardised elliptic curves of ICAO 9303 / BSI TR-03110 with the arithmetic PACE and
/// chip authentication need: scalar multiplication on the curve's or a mapped generator, the
/// generic mapping `s·G + H`, key generation and point validation. Points are uncompressed
/// octet strings (`04 ‖ x ‖ y`).
public struct EllipticCurve: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    let nid: Int32
    /// The named-curve OID (dotted) of this curve.
    public let oid: String

    public static let nistP192 = EllipticCurve(name: "NIST P-192", nid: NID_X9_62_prime192v1, oid: "1.2.840.10045.3.1.1")
    public static let nistP224 = EllipticCurve(name: "NIST P-224", nid: NID_secp224r1, oid: "1.3.132.0.33")
    public static let nistP256 = EllipticCurve(name: "NIST P-256", nid: NID_X9_62_prime256v1, oid: "1.2.840.10045.3.1.7")
    public static let nistP384 = EllipticCurve(name: "NIST P-384", nid: NID_secp384r1, oid: "1.3.132.0.34")
    public static let nistP521 = EllipticCurve(name: "NIST P-521", nid: NID_secp521r1, oid: "1.3.132.0.35")
    public static let brainpoolP192r1 = EllipticCurve(name: "brainpoolP192r1", nid: NID_brainpoolP192r1, oid: "1.3.36.3.3.2.8.1.1.3")
    public static let brainpoolP224r1 = EllipticCurve(name: "brainpoolP224r1", nid: NID_brainpoolP224r1, oid: "1.3.36.3.3.2.8.1.1.5")
    public static let brainpoolP256r1 = EllipticCurve(name: "brainpoolP256r1", nid: NID_brainpoolP256r1, oid: "1.3.36.3.3.2.8.1.1.7")
    public static let brainpoolP320r1 = EllipticCurve(name: "brainpoolP320r1", nid: NID_brainpoolP320r1, oid: "1.3.36.3.3.2.8.1.1.9")
    public static let brainpoolP384r1 = EllipticCurve(name: "brainpoolP384r1", nid: NID_brainpoolP384r1, oid: "1.3.36.3.3.2.8.1.1.11")
    public static let brainpoolP512r1 = EllipticCurve(name: "brainpoolP512r1", nid: NID_brainpoolP512r1, oid: "1.3.36.3.3.2.8.1.1.13")

    public var description: String { name }

    /// Bytes of a field element (and of an x coordinate).
    public var fieldSize: Int { Int(COpenSSLShim_ec_field_size(nid)) }
    /// The curve's ECParameters with explicit domain parameters (DER), as some chips publish
    /// them in PACEDomainParameterInfo.
    public var explicitParameters: [UInt8] {
        var out = [UInt8](repeating: 0, count: 1024)
        let length = Int(COpenSSLShim_ec_explicit_parameters(nid, &out, out.count))
        return length > 0 ? Array(out.prefix(length)) : []
    }

    /// The bit length of the field prime p (log₂ p rounded up: 521 for P-521).
    public var fieldBits: Int { Int(COpenSSLShim_ec_field_bits(nid)) }

    var pointCapacity: Int { 1 + 2 * max(fieldSize, 66) }

    /// `scalar · point`, or `scalar · generator` when `point` is nil; `generator` replaces the
    /// curve's own (PACE's mapped generator).
    public func multiply(_ scalar: [UInt8], point: [UInt8]? = nil, generator: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: pointCapacity)
        var length = out.count
        let rc = withOptional(generator) { g, gLength in
            withOptional(point) { p, pLength in
                COpenSSLShim_ec_mul(nid, g, gLength, scalar, scalar.count, p, pLength, &out, &length)
            }
        }
        guard rc == 0 else { throw CryptoError(.invalidInput, "point multiplication on \(name) failed (\(rc)): invalid point or scalar") }
        return Array(out.prefix(length))
    }

    /// `scalar · G + point` (the PACE generic mapping).
    public func multiplyAdd(_ scalar: [UInt8], point: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: pointCapacity)
        var length = out.count
        let rc = COpenSSLShim_ec_mul_add(nid, scalar, scalar.count, point, point.count, &out, &length)
        guard rc == 0 else { throw CryptoError(.invalidInput, "generic mapping on \(name) failed (\(rc))") }
        return Array(out.prefix(length))
    }

    /// A fresh key pair on the curve's generator (or on `generator`).
    public func generateKeyPair(generator: [UInt8]? = nil) throws(CryptoError) -> (privateKey: [UInt8], publicKey: [UInt8]) {
        var privateKey = [UInt8](repeating: 0, count: 80)
        var privateLength = privateKey.count
        var publicKey = [UInt8](repeating: 0, count: pointCapacity)
        var publicLength = publicKey.count
        let rc = withOptional(generator) { g, gLength in
            COpenSSLShim_ec_keygen(nid, g, gLength, &privateKey, &privateLength, &publicKey, &publicLength)
        }
        guard rc == 0 else { throw CryptoError(.openSSLFailure, "key generation on \(name) failed (\(rc))") }
        return (Array(privateKey.prefix(privateLength)), Array(publicKey.prefix(publicLength)))
    }

    /// Whether `point` is a valid, finite point of the curve.
    public func isValidPoint(_ point: [UInt8]) -> Bool {
        COpenSSLShim_ec_check_point(nid, point, point.count) == 0
    }

    /// PACE Integrated Mapping (ECDH): the mapped generator f_G(R mod p) of ICAO 9303-11
    /// Appendix B.2 for the pseudo-random `random` = R(s, t). Needs p ≡ 3 mod 4 and cofactor 1
    /// (all standardised PACE curves except NIST P-224).
    public func integratedMappingPoint(_ random: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: pointCapacity)
        var length = out.count
        let rc = COpenSSLShim_ec_im_encode(nid, random, random.count, &out, &length)
        switch rc {
        case 0: return Array(out.prefix(length))
        case -2: throw CryptoError(.unsupportedAlgorithm, "Integrated Mapping needs p ≡ 3 mod 4, which \(name) does not have")
        case -3: throw CryptoError(.unsupportedAlgorithm, "Integrated Mapping needs cofactor 1 on \(name)")
        case -4: throw CryptoError(.invalidInput, "the mapping nonce reduces to zero on \(name)")
        default: throw CryptoError(.openSSLFailure, "point encoding on \(name) failed (\(rc))")
        }
    }

    /// The x coordinate of an uncompressed point.
    public func xCoordinate(_ point: [UInt8]) throws(CryptoError) -> [UInt8] {
        let size = fieldSize
        guard point.count == 1 + 2 * size, point.first == 0x04 else {
            throw CryptoError(.invalidInput, "not an uncompressed point of \(name)")
        }
        return Array(point[1...size])
    }
}

private func withOptional<R>(_ bytes: [UInt8]?, _ body: (UnsafePointer<UInt8>?, Int) -> R) -> R {
    guard let bytes else { return body(nil, 0) }
    return bytes.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
}

extension EllipticCurve {
    /// The curve OpenSSL calls `name` (`prime256v1`, `brainpoolP256r1`, `secp384r1` …).
    public init?(openSSLName name: String) {
        let known: [String: EllipticCurve] = [
            "prime192v1": .nistP192, "secp224r1": .nistP224, "prime256v1": .nistP256, "secp384r1": .nistP384, "secp521r1": .nistP521,
            "brainpoolP192r1": .brainpoolP192r1, "brainpoolP224r1": .brainpoolP224r1, "brainpoolP256r1": .brainpoolP256r1,
            "brainpoolP320r1": .brainpoolP320r1, "brainpoolP384r1": .brainpoolP384r1, "brainpoolP512r1": .brainpoolP512r1,
        ]
        guard let curve = known[name] else { return nil }
        self = curve
    }

    /// OpenSSL's name for the curve.
    public var openSSLName: String {
        switch nid {
        case NID_X9_62_prime192v1: return "prime192v1"
        case NID_secp224r1: return "secp224r1"
        case NID_X9_62_prime256v1: return "prime256v1"
        case NID_secp384r1: return "secp384r1"
        case NID_secp521r1: return "secp521r1"
        default: return name
        }
    }
}

func stringParameter(_ key: OpaquePointer, _ name: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 80)
    var length = 0
    guard EVP_PKEY_get_utf8_string_param(key, name, &buffer, buffer.count, &length) == 1 else { return nil }
    return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func octetParameter(_ key: OpaquePointer, _ name: String) -> [UInt8]? {
    var length = 0
    guard EVP_PKEY_get_octet_string_param(key, name, nil, 0, &length) == 1 else { return nil }
    var buffer = [UInt8](repeating: 0, count: length)
    guard EVP_PKEY_get_octet_string_param(key, name, &buffer, buffer.count, &length) == 1 else { return nil }
    return Array(buffer.prefix(length))
}

extension EllipticCurve {
    public static let all: [EllipticCurve] = [.nistP192, .nistP224, .nistP256, .nistP384, .nistP521, .brainpoolP192r1, .brainpoolP224r1,
                                       .brainpoolP256r1, .brainpoolP320r1, .brainpoolP384r1, .brainpoolP512r1]

    /// The curve and uncompressed point of an EC SubjectPublicKeyInfo — with a named curve, or
    /// with explicit domain parameters equal to a standard curve (as many passports write them).
    public static func publicKey(subjectPublicKeyInfo der: [UInt8]) -> (curve: EllipticCurve, point: [UInt8])? {
        var nid: Int32 = 0
        var point = [UInt8](repeating: 0, count: 160)
        var length = point.count
        guard COpenSSLShim_spki_ec(der, der.count, &nid, &point, &length) == 0,
              let curve = all.first(where: { $0.nid == nid }) else { return nil }
        return (curve, Array(point.prefix(length)))
    }
}

extension PublicKey {
    /// The curve and uncompressed point of an EC key on a standard curve (named, or given by
    /// explicit domain parameters equal to one); `nil` for other keys.
    public var ecPoint: (curve: EllipticCurve, point: [UInt8])? {
        guard keyType == .ec else { return nil }
        if let name = stringParameter(pointer, "group"), let curve = EllipticCurve(openSSLName: name),
           let point = octetParameter(pointer, "encoded-pub-key") {
            return (curve, point)
        }
        ERR_clear_error()
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pointer, &out)
        guard length > 0, let out else { return nil }
        defer { COpenSSLShim_free(out) }
        return EllipticCurve.publicKey(subjectPublicKeyInfo: Array(UnsafeBufferPointer(start: out, count: Int(length))))
    }
}

extension PrivateKey {
    /// The curve, private scalar (padded to the field size) and public point of an EC key.
    public var ecKey: (curve: EllipticCurve, scalar: [UInt8], point: [UInt8])? {
        guard let name = stringParameter(pointer, "group"), let curve = EllipticCurve(openSSLName: name),
              let point = octetParameter(pointer, "encoded-pub-key") else { ERR_clear_error(); return nil }
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, "priv", &number) == 1, let number else { ERR_clear_error(); return nil }
        defer { BN_clear_free(number) }
        var scalar = [UInt8](repeating: 0, count: curve.fieldSize)
        guard BN_bn2binpad(number, &scalar, Int32(scalar.count)) == Int32(scalar.count) else { return nil }
        return (curve, scalar, point)
    }
}

extension EllipticCurve {
    /// a · b⁻¹ mod n, with n the order of the curve (PACE-CAM's chip authentication data).
    public func scalarDivide(_ a: [UInt8], by b: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 80)
        var length = out.count
        guard COpenSSLShim_ec_scalar_divide(nid, a, a.count, b, b.count, &out, &length) == 0 else {
            throw CryptoError(.invalidInput, "scalar division on \(name) failed")
        }
        return Array(out.prefix(length))
    }

    /// The curve with this named-curve OID (dotted).
    public init?(oid: String) {
        guard let curve = Self.byOID[oid] else { return nil }
        self = curve
    }

    private static let byOID: [String: EllipticCurve] = {
        let all: [EllipticCurve] = [.nistP192, .nistP224, .nistP256, .nistP384, .nistP521, .brainpoolP192r1, .brainpoolP224r1,
                                    .brainpoolP256r1, .brainpoolP320r1, .brainpoolP384r1, .brainpoolP512r1]
        return Dictionary(all.map { ($0.oid, $0) }, uniquingKeysWith: { first, _ in first })
    }()
}
