/// One BER-TLV data object: a tag (1–4 bytes, kept as their big-endian value, e.g. `0x5F1F`)
/// and its value bytes.
public struct TLV: Sendable, Hashable, CustomStringConvertible {
    public var tag: UInt32
    public var value: [UInt8]

    public init(tag: UInt32, value: [UInt8]) {
        self.tag = tag
        self.value = value
    }

    /// Builds a constructed object from child objects.
    public init(tag: UInt32, children: [TLV]) {
        self.init(tag: tag, value: children.flatMap { $0.encoded() })
    }

    /// Whether the tag says the value is a sequence of data objects (bit 6 of the first tag byte).
    public var isConstructed: Bool { BERTLV.isConstructed(tag) }

    /// The object encoded with definite length.
    public func encoded() -> [UInt8] { BERTLV.encode(tag: tag, value: value) }

    /// The value parsed as a sequence of data objects.
    public func children() throws(SmartCardError) -> [TLV] { try BERTLV.parseAll(value) }

    /// The first child with `tag`, or `nil`.
    public func child(_ tag: UInt32) throws(SmartCardError) -> TLV? {
        try children().first { $0.tag == tag }
    }

    public var description: String { "TLV \(BERTLV.tagString(tag)) (\(value.count) bytes)" }
}

/// BER-TLV (ISO/IEC 8825-1 as profiled by ISO 7816-4): multi-byte tags, short and long lengths up
/// to four length bytes, and indefinite lengths (as some EF.SODs use).
public enum BERTLV {
    /// How deeply indefinite-length objects may nest before the input counts as hostile.
    static let maxIndefiniteDepth = 32

    /// The header of an object at the start of `bytes`.
    public struct Header: Sendable, Hashable {
        public var tag: UInt32
        /// Bytes taken by tag and length fields.
        public var headerLength: Int
        /// The value length; `nil` for an indefinite length (`80`, ended by `00 00`).
        public var valueLength: Int?
        /// Header plus value, when the length is definite.
        public var totalLength: Int? { valueLength.map { headerLength + $0 } }
    }

    public static func isConstructed(_ tag: UInt32) -> Bool {
        var first = tag
        while first > 0xFF { first >>= 8 }
        return first & 0x20 != 0
    }

    public static func tagString(_ tag: UInt32) -> String {
        hex(encodeTag(tag))
    }

    public static func encodeTag(_ tag: UInt32) -> [UInt8] { minimalBigEndian(UInt64(tag)) }

    public static func encodeLength(_ length: Int) -> [UInt8] {
        // trap: lengths come from Array.count, never from outside input.
        precondition(length >= 0, "negative TLV length")
        switch length {
        case ..<0x80: return [UInt8(length)]
        case ..<0x100: return [0x81, UInt8(length)]
        case ..<0x1_0000: return [0x82, UInt8(length >> 8), UInt8(length & 0xFF)]
        case ..<0x100_0000: return [0x83, UInt8(length >> 16), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
        default:
            return [0x84, UInt8((length >> 24) & 0xFF), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF),
                    UInt8(length & 0xFF)]
        }
    }

    public static func encode(tag: UInt32, value: [UInt8]) -> [UInt8] {
        encodeTag(tag) + encodeLength(value.count) + value
    }

    /// Reads the tag and length fields at the start of `bytes` (for example the first bytes of a
    /// file, to learn its size before reading the rest).
    public static func header<C: Collection<UInt8>>(_ bytes: C) throws(SmartCardError) -> Header
    where C.Index == Int {
        var index = bytes.startIndex
        guard index < bytes.endIndex else { throw SmartCardError(.malformedTLV, "empty input where a tag was expected") }
        let first = bytes[index]
        var tag = UInt32(first)
        index += 1
        if first & 0x1F == 0x1F {
            var count = 0
            while true {
                guard index < bytes.endIndex else { throw SmartCardError(.malformedTLV, "truncated multi-byte tag") }
                let next = bytes[index]
                index += 1
                count += 1
                guard count <= 3 else { throw SmartCardError(.malformedTLV, "tag longer than 4 bytes") }
                tag = tag << 8 | UInt32(next)
                if next & 0x80 == 0 { break }
            }
        }
        guard index < bytes.endIndex else {
            throw SmartCardError(.malformedTLV, "missing length after tag \(tagString(tag))")
        }
        let lengthByte = bytes[index]
        index += 1
        var length: Int?
        if lengthByte < 0x80 {
            length = Int(lengthByte)
        } else if lengthByte == 0x80 {
            guard isConstructed(tag) else {
                throw SmartCardError(.malformedTLV, "indefinite length on primitive tag \(tagString(tag))")
            }
            length = nil
        } else {
            let count = Int(lengthByte & 0x7F)
            guard count <= 4 else { throw SmartCardError(.malformedTLV, "length field of \(count) bytes is too long") }
            guard bytes.endIndex - index >= count else { throw SmartCardError(.malformedTLV, "truncated length field") }
            var value = 0
            for _ in 0..<count {
                value = value << 8 | Int(bytes[index])
                index += 1
            }
            length = value
        }
        return Header(tag: tag, headerLength: index - bytes.startIndex, valueLength: length)
    }

    /// Parses the object at the start of `bytes`; returns it and how many bytes it took.
    public static func parseOne(_ bytes: ArraySlice<UInt8>) throws(SmartCardError) -> (TLV, consumed: Int) {
        try parseOne(bytes, depth: 0)
    }

    static func parseOne(_ bytes: ArraySlice<UInt8>, depth: Int) throws(SmartCardError) -> (TLV, consumed: Int) {
        let head = try header(bytes)
        let valueStart = bytes.startIndex + head.headerLength
        if let length = head.valueLength {
            guard bytes.endIndex - valueStart >= length else {
                throw SmartCardError(.malformedTLV,
                                     "tag \(tagString(head.tag)) claims \(length) bytes, \(bytes.endIndex - valueStart) remain")
            }
            return (TLV(tag: head.tag, value: Array(bytes[valueStart..<(valueStart + length)])), head.headerLength + length)
        }
        guard depth < maxIndefiniteDepth else {
            throw SmartCardError(.malformedTLV, "indefinite lengths nested deeper than \(maxIndefiniteDepth)")
        }
        // Indefinite length: children until the end-of-contents marker 00 00.
        var index = valueStart
        var content: [UInt8] = []
        while true {
            guard bytes.endIndex - index >= 2 else {
                throw SmartCardError(.malformedTLV, "missing end-of-contents for tag \(tagString(head.tag))")
            }
            if bytes[index] == 0, bytes[index + 1] == 0 {
                index += 2
                break
            }
            let (child, used) = try parseOne(bytes[index...], depth: depth + 1)
            content += child.encoded()
            index += used
        }
        return (TLV(tag: head.tag, value: content), index - bytes.startIndex)
    }

    /// Parses a sequence of objects filling `bytes` exactly. Padding bytes `00`/`FF` between or
    /// after objects (as some chips leave at the end of a file) are skipped.
    public static func parseAll(_ bytes: [UInt8]) throws(SmartCardError) -> [TLV] {
        var result: [TLV] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x00 || bytes[index] == 0xFF {
                index += 1
                continue
            }
            let (object, used) = try parseOne(bytes[index...])
            result.append(object)
            index += used
        }
        return result
    }

    /// Parses exactly one object that must start at the beginning of `bytes`; trailing padding is
    /// allowed, anything else after it is not.
    public static func parseSingle(_ bytes: [UInt8]) throws(SmartCardError) -> TLV {
        let (object, used) = try parseOne(bytes[...])
        let rest = bytes[used...]
        guard rest.allSatisfy({ $0 == 0x00 || $0 == 0xFF }) else {
            throw SmartCardError(.malformedTLV, "\(rest.count) unexpected bytes after tag \(tagString(object.tag))")
        }
        return object
    }
}

/// `value` in big-endian bytes without leading zero bytes (at least one byte).
public func minimalBigEndian(_ value: UInt64) -> [UInt8] {
    var bytes: [UInt8] = []
    var rest = value
    repeat {
        bytes.insert(UInt8(rest & 0xFF), at: 0)
        rest >>= 8
    } while rest > 0
    return bytes
}
