import COpenSSLShim

/// A MODP group with a prime-order subgroup (the RFC 5114 groups of PACE parameter ids 0–2):
/// key generation, key agreement, the PACE generic mapping `g' = g^s · h`, and public-key checks.
/// Values are big-endian byte strings padded to the size of p.
public struct DiffieHellmanGroup: Sendable, Hashable, CustomStringConvertible {
    public let p: [UInt8]
    public let g: [UInt8]
    public let q: [UInt8]
    public let name: String

    /// RFC 5114 §2.1–2.3: 1024-bit MODP with a 160-bit subgroup (0), 2048/224 (1), 2048/256 (2).
    public static func rfc5114(parameterId: Int) -> DiffieHellmanGroup? {
        var p = [UInt8](repeating: 0, count: 512), g = [UInt8](repeating: 0, count: 512), q = [UInt8](repeating: 0, count: 512)
        var pLength = p.count, gLength = g.count, qLength = q.count
        guard COpenSSLShim_dh_rfc5114(Int32(parameterId), &p, &pLength, &g, &gLength, &q, &qLength) == 0 else { return nil }
        let names = ["1024-bit MODP, 160-bit subgroup", "2048-bit MODP, 224-bit subgroup", "2048-bit MODP, 256-bit subgroup"]
        return DiffieHellmanGroup(p: Array(p.prefix(pLength)), g: Self.pad(Array(g.prefix(gLength)), pLength),
                                  q: Array(q.prefix(qLength)), exactName: "RFC 5114 \(names[parameterId])")
    }

    /// A group from its p, g and q (big-endian); nil unless p is odd and longer than q, g < p, and
    /// p no longer than `KeySizeLimits.maxDHBits` (nothing is computed in a larger group).
    public init?(p: [UInt8], g: [UInt8], q: [UInt8], name: String = "MODP group") {
        let p = Array(p.drop { $0 == 0 }), q = Array(q.drop { $0 == 0 }), g = Array(g.drop { $0 == 0 })
        guard p.count >= 64, KeySizeLimits.bitLength(p) <= KeySizeLimits.maxDHBits, let last = p.last, last & 1 == 1, !q.isEmpty, q.count < p.count, !g.isEmpty, g.count <= p.count,
              Self.pad(g, p.count).lexicographicallyPrecedes(p) else { return nil }
        self.p = p
        self.g = Self.pad(g, p.count)
        self.q = q
        self.name = name
    }

    /// A group from explicit p, g and q: the RFC 5114 group by that name when it is one, else a
    /// group named by its size. `nil` for values that make no group.
    public static func explicit(p: [UInt8], g: [UInt8], q: [UInt8]) -> DiffieHellmanGroup? {
        guard let group = DiffieHellmanGroup(p: p, g: g, q: q, name: "\(Array(p.drop { $0 == 0 }).count * 8)-bit MODP group") else { return nil }
        return (0...2).compactMap { rfc5114(parameterId: $0) }.first { $0.p == group.p && $0.g == group.g && $0.q == group.q } ?? group
    }

    private init(p: [UInt8], g: [UInt8], q: [UInt8], exactName: String) {
        self.p = p
        self.g = g
        self.q = q
        self.name = exactName
    }

    static func pad(_ value: [UInt8], _ length: Int) -> [UInt8] {
        value.count >= length ? value : [UInt8](repeating: 0, count: length - value.count) + value
    }

    public var description: String { name }
    public var size: Int { p.count }

    /// base^exponent mod p.
    public func power(_ base: [UInt8], _ exponent: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        guard COpenSSLShim_bn_mod_exp(base, base.count, exponent, exponent.count, p, p.count, &out) == 0 else {
            throw CryptoError(.invalidInput, "modular exponentiation failed")
        }
        return out
    }

    /// a·b mod p.
    public func multiply(_ a: [UInt8], _ b: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        guard COpenSSLShim_bn_mod_mul(a, a.count, b, b.count, p, p.count, &out) == 0 else {
            throw CryptoError(.invalidInput, "modular multiplication failed")
        }
        return out
    }

    /// p − 1 (p is odd: no borrow).
    private var pMinusOne: [UInt8] {
        var value = p
        value[value.count - 1] &-= 1
        return value
    }

    /// The bit length of p.
    public var bits: Int {
        guard let first = p.firstIndex(where: { $0 != 0 }) else { return 0 }
        return (p.count - first) * 8 - p[first].leadingZeroBitCount
    }

    /// PACE Integrated Mapping's f_g (ICAO 9303-11 §4.4.3.3.2): ĝ = x^((p−1)/q) mod p for the
    /// pseudo-random x = R(s, t). Throws when ĝ = 1 (the mapping must then be rejected).
    public func integratedMappingGenerator(_ random: [UInt8]) throws(CryptoError) -> [UInt8] {
        var cofactor = [UInt8](repeating: 0, count: size)
        guard COpenSSLShim_bn_div(pMinusOne, pMinusOne.count, q, q.count, &cofactor, cofactor.count) == 0 else {
            throw CryptoError(.invalidInput, "(p−1)/q failed")
        }
        let generator = try power(random, cofactor)
        guard generator != Self.pad([1], size), generator.contains(where: { $0 != 0 }) else {
            throw CryptoError(.invalidInput, "the integrated mapping gave a trivial generator")
        }
        return generator
    }

    /// A private exponent in [1, q-1] and its public value on `generator` (g by default).
    public func generateKeyPair(generator: [UInt8]? = nil) throws(CryptoError) -> (privateKey: [UInt8], publicKey: [UInt8]) {
        var exponent = [UInt8](repeating: 0, count: q.count)
        guard COpenSSLShim_bn_rand_range(q, q.count, &exponent) == 0 else { throw CryptoError(.openSSLFailure, "random exponent failed") }
        return (exponent, try power(generator ?? g, exponent))
    }

    /// Whether `y` is a valid public value: 1 < y < p−1 and y^q = 1 (it lies in the subgroup).
    public func isValidPublicKey(_ y: [UInt8]) -> Bool {
        let value = Self.pad(Array(y.drop { $0 == 0 }), size)
        guard value.count == size, value.lexicographicallyPrecedes(p), value.contains(where: { $0 != 0 }) else { return false }
        let one = Self.pad([1], size)
        guard value != one, value != pMinusOne, let check = try? power(value, q) else { return false }
        return check == one
    }
}
