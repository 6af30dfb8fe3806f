/// Preferred serialization (RFC 8949 §4.1): shortest heads, definite lengths, map entries in the
/// order given. Embedded CBOR (tag 24) is written with the bytes it carries, unchanged.
public struct CBOREncoder: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// Appends bytes that already are an encoding (an item received, spliced in unchanged).
    public mutating func bytes(appending encoded: [UInt8]) { bytes += encoded }

    /// The head of a definite-length array of `count` items (the items follow).
    public mutating func arrayHead(_ count: Int) { head(major: 4, UInt64(count)) }

    mutating func head(major: UInt8, _ value: UInt64) {
        let type = major << 5
        switch value {
        case 0..<24: bytes.append(type | UInt8(value))
        case 24...0xFF: bytes += [type | 24, UInt8(value)]
        case 0x100...0xFFFF: bytes += [type | 25, UInt8(value >> 8), UInt8(value & 0xFF)]
        case 0x1_0000...0xFFFF_FFFF: bytes += [type | 26] + (0..<4).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xFF) }
        default: bytes += [type | 27] + (0..<8).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xFF) }
        }
    }

    public mutating func encode(_ value: CBOR) {
        switch value {
        case .unsigned(let number): head(major: 0, number)
        case .negative(let number): head(major: 1, number)
        case .bytes(let content):
            head(major: 2, UInt64(content.count))
            bytes += content
        case .text(let text):
            let utf8 = Array(text.utf8)
            head(major: 3, UInt64(utf8.count))
            bytes += utf8
        case .array(let elements):
            head(major: 4, UInt64(elements.count))
            for element in elements { encode(element) }
        case .map(let map):
            head(major: 5, UInt64(map.count))
            for entry in map.entries {
                encode(entry.key)
                encode(entry.value)
            }
        case .tagged(let tag, let content):
            head(major: 6, tag)
            encode(content)
        case .embedded(let embedded): bytes += embedded.taggedBytes
        case .bool(let flag): bytes.append(flag ? 0xF5 : 0xF4)
        case .null: bytes.append(0xF6)
        case .undefined: bytes.append(0xF7)
        case .simple(let number): number < 24 ? bytes.append(0xE0 | number) : (bytes += [0xF8, number])
        case .float(let number): float(number)
        }
    }

    /// The shortest of binary16, binary32 and binary64 that holds `value` exactly.
    mutating func float(_ value: Double) {
        if value.isNaN {
            bytes += [0xF9, 0x7E, 0x00]
            return
        }
        if let half = value.exactHalfBits {
            bytes += [0xF9, UInt8(half >> 8), UInt8(half & 0xFF)]
            return
        }
        let single = Float(value)
        if Double(single) == value {
            let bits = single.bitPattern
            bytes += [0xFA] + (0..<4).reversed().map { UInt8(bits >> (8 * UInt32($0)) & 0xFF) }
            return
        }
        let bits = value.bitPattern
        bytes += [0xFB] + (0..<8).reversed().map { UInt8(bits >> (8 * UInt64($0)) & 0xFF) }
    }
}

extension Double {
    /// The binary16 bits when this value is exactly representable in half precision.
    var exactHalfBits: UInt16? {
        if isInfinite { return sign == .minus ? 0xFC00 : 0x7C00 }
        if self == 0 { return sign == .minus ? 0x8000 : 0 }
        let magnitude = Swift.abs(self)
        let signBit: UInt16 = sign == .minus ? 0x8000 : 0
        let exponent = Int(magnitude.exponent)
        if exponent < -24 || exponent > 15 { return nil }
        if exponent >= -14 {
            let fraction = (magnitude / Double(sign: .plus, exponent: exponent, significand: 1) - 1) * 1024
            guard fraction == fraction.rounded() else { return nil }
            return signBit | UInt16(exponent + 15) << 10 | UInt16(fraction)
        }
        let fraction = magnitude * 0x1p24
        guard fraction == fraction.rounded(), fraction < 1024 else { return nil }
        return signBit | UInt16(fraction)
    }
}

extension CBOR {
    /// The preferred encoding of this item.
    public func encoded() -> [UInt8] {
        var encoder = CBOREncoder()
        encoder.encode(self)
        return encoder.bytes
    }
}
