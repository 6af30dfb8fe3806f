import COpenSSL
import COpenSSLShim

/// The standardised elliptic curves of ICAO 9303 / BSI TR-03110 with the arithmetic PACE and
/// chip authentication need: scalar multiplication on the curve's or a mapped generator, the
/// generic mapping `s·G + H`, key generation and point validation. Points are uncompressed
/// octet strings (`04 ‖ x ‖ y`).
public struct EllipticCurve: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    let nid: Int32

    public static let nistP192 = EllipticCurve(name: "NIST P-192", nid: NID_X9_62_prime192v1)
    public static let nistP224 = EllipticCurve(name: "NIST P-224", nid: NID_secp224r1)
    public static let nistP256 = EllipticCurve(name: "NIST P-256", nid: NID_X9_62_prime256v1)
    public static let nistP384 = EllipticCurve(name: "NIST P-384", nid: NID_secp384r1)
    public static let nistP521 = EllipticCurve(name: "NIST P-521", nid: NID_secp521r1)
    public static let brainpoolP192r1 = EllipticCurve(name: "brainpoolP192r1", nid: NID_brainpoolP192r1)
    public static let brainpoolP224r1 = EllipticCurve(name: "brainpoolP224r1", nid: NID_brainpoolP224r1)
    public static let brainpoolP256r1 = EllipticCurve(name: "brainpoolP256r1", nid: NID_brainpoolP256r1)
    public static let brainpoolP320r1 = EllipticCurve(name: "brainpoolP320r1", nid: NID_brainpoolP320r1)
    public static let brainpoolP384r1 = EllipticCurve(name: "brainpoolP384r1", nid: NID_brainpoolP384r1)
    public static let brainpoolP512r1 = EllipticCurve(name: "brainpoolP512r1", nid: NID_brainpoolP512r1)

    public var description: String { name }

    /// Bytes of a field element (and of an x coordinate).
    public var fieldSize: Int { Int(COpenSSLShim_ec_field_size(nid)) }

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
