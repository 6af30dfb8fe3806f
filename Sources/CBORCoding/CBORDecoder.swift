extension CBOR {
    /// Decodes exactly one item filling `bytes`, refusing anything `limits` does not allow before
    /// spending on it: a declared length is checked against the limit and the bytes left before
    /// anything is allocated, nesting against the depth, items against the count.
    public static func decode(_ bytes: [UInt8], limits: CBORLimits = .default) throws(CBORError) -> CBOR {
        guard bytes.count <= limits.maximumBytes else {
            throw CBORError(.tooLong, "\(bytes.count) bytes of CBOR, more than the \(limits.maximumBytes) allowed")
        }
        var decoder = CBORDecoder(bytes: bytes, limits: limits)
        let value = try decoder.item(depth: 0)
        guard decoder.position == bytes.count else {
            throw CBORError(.trailingBytes, "\(bytes.count - decoder.position) bytes after the item", offset: decoder.position)
        }
        return value
    }
}

/// The decoder's state over one input.
struct CBORDecoder {
    let bytes: [UInt8]
    let limits: CBORLimits
    var position = 0
    var items = 0

    init(bytes: [UInt8], limits: CBORLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// One item's initial byte and argument; `nil` argument for an indefinite length (31).
    struct Head {
        let major: UInt8
        let additional: UInt8
        let argument: UInt64?
        let offset: Int
    }

    var remaining: Int { bytes.count - position }

    mutating func byte() throws(CBORError) -> UInt8 {
        guard position < bytes.count else { throw CBORError(.truncated, "the input ends inside an item", offset: position) }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func take(_ count: Int) throws(CBORError) -> ArraySlice<UInt8> {
        guard count <= remaining else {
            throw CBORError(.truncated, "\(count) bytes announced, \(remaining) left", offset: position)
        }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    mutating func head() throws(CBORError) -> Head {
        let offset = position
        let initial = try byte()
        let major = initial >> 5
        let additional = initial & 0x1F
        let argument: UInt64?
        switch additional {
        case 0..<24: argument = UInt64(additional)
        case 24...27:
            let width = 1 << Int(additional - 24)
            argument = try take(width).reduce(0) { $0 << 8 | UInt64($1) }
            if let value = argument, limits.requiresPreferredSerialization, major != 7 {
                let shortest: UInt8 = value < 24 ? 0 : value <= 0xFF ? 24 : value <= 0xFFFF ? 25 : value <= 0xFFFF_FFFF ? 26 : 27
                if shortest != additional {
                    throw CBORError(.nonPreferred, "an argument of \(value) written in \(width) bytes", offset: offset)
                }
            }
        case 31: argument = nil
        default: throw CBORError(.malformed, "reserved additional information \(additional)", offset: offset)
        }
        return Head(major: major, additional: additional, argument: argument, offset: offset)
    }

    mutating func count(_ more: Int, at offset: Int) throws(CBORError) {
        guard more <= limits.maximumItems - items else {
            throw CBORError(.tooManyItems, "more than \(limits.maximumItems) items", offset: offset)
        }
        items += more
    }

    mutating func item(depth: Int) throws(CBORError) -> CBOR {
        let head = try head()
        try count(1, at: head.offset)
        switch head.major {
        case 0:
            guard let value = head.argument else { throw CBORError(.malformed, "an integer of indefinite length", offset: head.offset) }
            return .unsigned(value)
        case 1:
            guard let value = head.argument else { throw CBORError(.malformed, "an integer of indefinite length", offset: head.offset) }
            return .negative(value)
        case 2:
            return .bytes(try string(head, major: 2))
        case 3:
            let raw = try string(head, major: 3)
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw CBORError(.invalidUTF8, "a text string that is not UTF-8", offset: head.offset)
            }
            return .text(text)
        case 4:
            try nest(depth, head)
            var elements: [CBOR] = []
            if let length = head.argument {
                // Each element takes at least one byte: a length beyond what is left is a lie.
                guard length <= UInt64(remaining) else {
                    throw CBORError(.truncated, "an array of \(length) elements in \(remaining) bytes", offset: head.offset)
                }
                elements.reserveCapacity(Int(length))
                for _ in 0..<Int(length) { elements.append(try item(depth: depth + 1)) }
            } else {
                while try !atBreak() { elements.append(try item(depth: depth + 1)) }
            }
            return .array(elements)
        case 5:
            try nest(depth, head)
            var entries: [CBORMap.Entry] = []
            var seen = Set<CBOR>()
            func add(_ key: CBOR, _ value: CBOR, at offset: Int) throws(CBORError) {
                guard seen.insert(key).inserted else {
                    throw CBORError(.duplicateKey, "the map holds the key \(key.shortDescription) twice", offset: offset)
                }
                entries.append(CBORMap.Entry(key: key, value: value))
            }
            if let length = head.argument {
                guard length <= UInt64(remaining / 2) else {
                    throw CBORError(.truncated, "a map of \(length) entries in \(remaining) bytes", offset: head.offset)
                }
                entries.reserveCapacity(Int(length))
                for _ in 0..<Int(length) {
                    let offset = position
                    let key = try item(depth: depth + 1)
                    try add(key, try item(depth: depth + 1), at: offset)
                }
            } else {
                while try !atBreak() {
                    let offset = position
                    let key = try item(depth: depth + 1)
                    try add(key, try item(depth: depth + 1), at: offset)
                }
            }
            return .map(CBORMap(entries))
        case 6:
            guard let tag = head.argument else { throw CBORError(.malformed, "a tag of indefinite length", offset: head.offset) }
            try nest(depth, head)
            let content = try item(depth: depth + 1)
            if tag == 24 {
                guard case .bytes(let embedded) = content else {
                    throw CBORError(.unexpectedType, "tag 24 around a \(content.kindName), not a byte string", offset: head.offset)
                }
                return .embedded(EmbeddedCBOR(taggedBytes: Array(bytes[head.offset..<position]), content: embedded))
            }
            return .tagged(tag, content)
        default:
            return try simple(head)
        }
    }

    mutating func nest(_ depth: Int, _ head: Head) throws(CBORError) {
        guard depth < limits.maximumDepth else {
            throw CBORError(.tooDeep, "nested deeper than \(limits.maximumDepth)", offset: head.offset)
        }
        if head.argument == nil, !limits.allowsIndefiniteLength {
            throw CBORError(.indefiniteLength, "an indefinite-length item", offset: head.offset)
        }
    }

    /// Consumes a break (0xFF) when one is next.
    mutating func atBreak() throws(CBORError) -> Bool {
        guard position < bytes.count else { throw CBORError(.truncated, "an indefinite-length item without its break", offset: position) }
        if bytes[position] == 0xFF {
            position += 1
            return true
        }
        return false
    }

    mutating func string(_ head: Head, major: UInt8) throws(CBORError) -> [UInt8] {
        if let length = head.argument {
            guard length <= UInt64(limits.maximumStringBytes) else {
                throw CBORError(.tooLong, "a string of \(length) bytes, more than the \(limits.maximumStringBytes) allowed", offset: head.offset)
            }
            return Array(try take(Int(length)))
        }
        guard limits.allowsIndefiniteLength else { throw CBORError(.indefiniteLength, "an indefinite-length string", offset: head.offset) }
        var result: [UInt8] = []
        var chunks = 0
        while try !atBreak() {
            let chunk = try self.head()
            guard chunk.major == major, let length = chunk.argument else {
                throw CBORError(.malformed, "an indefinite-length string with a chunk that is not a definite string of its type", offset: chunk.offset)
            }
            chunks += 1
            guard chunks <= limits.maximumChunks else {
                throw CBORError(.indefiniteLength, "an indefinite-length string of more than \(limits.maximumChunks) chunks", offset: chunk.offset)
            }
            guard length <= UInt64(limits.maximumStringBytes - result.count) else {
                throw CBORError(.tooLong, "an indefinite-length string longer than the \(limits.maximumStringBytes) bytes allowed", offset: chunk.offset)
            }
            result += try take(Int(length))
        }
        return result
    }

    mutating func simple(_ head: Head) throws(CBORError) -> CBOR {
        guard let argument = head.argument else {
            throw CBORError(.malformed, "a break outside an indefinite-length item", offset: head.offset)
        }
        switch head.additional {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: return .undefined
        case 0..<20: return .simple(UInt8(argument))
        case 24:
            guard argument >= 32 else { throw CBORError(.malformed, "simple value \(argument) in two bytes", offset: head.offset) }
            return .simple(UInt8(argument))
        case 25: return .float(Double(halfBits: UInt16(argument)))
        case 26: return .float(Double(Float(bitPattern: UInt32(argument))))
        default: return .float(Double(bitPattern: argument))
        }
    }
}

extension Double {
    /// An IEEE 754 binary16 value.
    init(halfBits bits: UInt16) {
        let sign: Double = bits & 0x8000 != 0 ? -1 : 1
        let exponent = Int(bits >> 10 & 0x1F)
        let fraction = Double(bits & 0x3FF)
        switch exponent {
        case 0: self = sign * fraction * 0x1p-24
        case 31: self = fraction == 0 ? sign * .infinity : .nan
        default: self = sign * (1 + fraction / 1024) * Double(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}

extension CBOR {
    /// A short rendering for messages (strings cut, bytes as a length).
    public var shortDescription: String {
        switch self {
        case .unsigned(let value): return String(value)
        case .negative(let value): return value == .max ? "-18446744073709551616" : "-\(value + 1)"
        case .text(let text): return text.count > 40 ? "\"\(text.prefix(40))…\"" : "\"\(text)\""
        case .bytes(let bytes): return "h'…' (\(bytes.count) bytes)"
        default: return kindName
        }
    }
}
