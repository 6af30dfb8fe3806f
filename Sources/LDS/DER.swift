import SmartCardCore

/// A small DER writer for the structures this package produces (LDS security objects, test data).
package enum DER {
    package static func sequence(_ parts: [UInt8]...) -> [UInt8] { sequence(parts) }
    package static func sequence(_ parts: [[UInt8]]) -> [UInt8] { BERTLV.encode(tag: 0x30, value: parts.flatMap { $0 }) }
    package static func set(_ parts: [[UInt8]]) -> [UInt8] { BERTLV.encode(tag: 0x31, value: parts.flatMap { $0 }) }
    package static func octetString(_ value: [UInt8]) -> [UInt8] { BERTLV.encode(tag: 0x04, value: value) }
    package static let null: [UInt8] = [0x05, 0x00]
    package static func boolean(_ value: Bool) -> [UInt8] { [0x01, 0x01, value ? 0xFF : 0x00] }

    /// A non-negative INTEGER.
    package static func integer(_ value: Int) -> [UInt8] {
        // trap: DER is built from this package's own values (sizes, versions), never from outside input.
        precondition(value >= 0, "DER.integer supports non-negative values")
        return unsignedInteger(minimalBigEndian(UInt64(value)))
    }

    /// A non-negative INTEGER from big-endian magnitude bytes.
    package static func unsignedInteger(_ magnitude: [UInt8]) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty { bytes = [0] }
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return BERTLV.encode(tag: 0x02, value: bytes)
    }

    /// An OBJECT IDENTIFIER from dotted text (`2.23.136.1.1.1`).
    package static func oid(_ dotted: String) -> [UInt8] {
        BERTLV.encode(tag: 0x06, value: oidContent(dotted))
    }

    package static func oidContent(_ dotted: String) -> [UInt8] {
        let arcs = dotted.split(separator: ".").compactMap { UInt64($0) }
        // trap: OIDs are written by this package from constants; an OID of fewer than two arcs is a programming error.
        precondition(arcs.count >= 2, "an OID has at least two arcs")
        var content = base128(arcs[0] * 40 + arcs[1])
        for arc in arcs.dropFirst(2) { content += base128(arc) }
        return content
    }

    static func base128(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(value & 0x7F)]
        var rest = value >> 7
        while rest > 0 {
            bytes.insert(UInt8(rest & 0x7F) | 0x80, at: 0)
            rest >>= 7
        }
        return bytes
    }

    /// Dotted text of an OBJECT IDENTIFIER's content bytes; `nil` when malformed.
    package static func oidString(_ content: [UInt8]) -> String? {
        guard let last = content.last, last & 0x80 == 0 else { return nil }
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        for byte in content {
            guard value < (1 << 56) else { return nil }
            value = value << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 {
                arcs.append(value)
                value = 0
            }
        }
        let first = arcs[0]
        let head: [UInt64] = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }

    /// A context-specific tag `[number]` around `content`.
    package static func context(_ number: UInt8, constructed: Bool = true, _ content: [UInt8]) -> [UInt8] {
        BERTLV.encode(tag: UInt32(0x80 | (constructed ? 0x20 : 0) | number), value: content)
    }
}
