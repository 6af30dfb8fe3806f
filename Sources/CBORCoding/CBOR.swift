/// A CBOR data item (RFC 8949) as ISO/IEC 18013-5 and COSE use it.
///
/// Maps keep their entries in the order received (18013-5 signs and hashes bytes, never a
/// re-encoding, so order only matters for what we encode ourselves). Tag 24 — "embedded CBOR",
/// `#6.24(bstr .cbor …)` — is its own case carrying the exact bytes received: MSOs, issuer-signed
/// items, device engagements and transcripts are hashed and signed over those bytes.
public indirect enum CBOR: Sendable, Hashable {
    /// A non-negative integer (major type 0).
    case unsigned(UInt64)
    /// A negative integer −1 − n (major type 1), stored as n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map(CBORMap)
    /// Any tag other than 24, with its content.
    case tagged(UInt64, CBOR)
    /// `#6.24(bstr)`: embedded CBOR, with the exact bytes of the whole tagged item as received.
    case embedded(EmbeddedCBOR)
    case bool(Bool)
    case null
    case undefined
    /// Simple values other than false, true, null and undefined.
    case simple(UInt8)
    case float(Double)
}

/// The entries of a CBOR map in the order they were received or built.
public struct CBORMap: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    public struct Entry: Sendable, Hashable {
        public var key: CBOR
        public var value: CBOR
        public init(key: CBOR, value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    public private(set) var entries: [Entry]

    public init(_ entries: [Entry] = []) { self.entries = entries }
    public init(dictionaryLiteral elements: (CBOR, CBOR)...) {
        entries = elements.map { Entry(key: $0.0, value: $0.1) }
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public var keys: [CBOR] { entries.map(\.key) }

    /// The value under `key` (the first, though a decoded map never holds a key twice).
    public subscript(key: CBOR) -> CBOR? {
        get { entries.first { $0.key == key }?.value }
        set {
            if let index = entries.firstIndex(where: { $0.key == key }) {
                if let newValue { entries[index].value = newValue } else { entries.remove(at: index) }
            } else if let newValue {
                entries.append(Entry(key: key, value: newValue))
            }
        }
    }

    public subscript(key: String) -> CBOR? {
        get { self[.text(key)] }
        set { self[.text(key)] = newValue }
    }

    public subscript(key: Int) -> CBOR? {
        get { self[CBOR(key)] }
        set { self[CBOR(key)] = newValue }
    }
}

/// `#6.24(bstr .cbor T)`: the bytes of the whole tagged item exactly as received (or as built),
/// and the embedded item's bytes inside the byte string.
public struct EmbeddedCBOR: Sendable, Hashable {
    /// The tagged item's encoding: tag 24, the byte string's head, the content.
    public let taggedBytes: [UInt8]
    /// The byte string's content: the embedded item's encoding.
    public let content: [UInt8]

    init(taggedBytes: [UInt8], content: [UInt8]) {
        self.taggedBytes = taggedBytes
        self.content = content
    }

    /// Wraps an encoding we made (the head in preferred form).
    public init(wrapping content: [UInt8]) {
        var encoder = CBOREncoder()
        encoder.head(major: 6, 24)
        encoder.head(major: 2, UInt64(content.count))
        self.taggedBytes = encoder.bytes + content
        self.content = content
    }

    /// Wraps the preferred encoding of `value`.
    public init(encoding value: CBOR) {
        self.init(wrapping: value.encoded())
    }

    /// The embedded item, decoded under `limits`.
    public func decoded(limits: CBORLimits = .default) throws(CBORError) -> CBOR {
        try CBOR.decode(content, limits: limits)
    }
}

extension CBOR {
    public init(_ value: Int) {
        self = value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    public init(_ value: String) { self = .text(value) }
    public init(_ value: [UInt8]) { self = .bytes(value) }

    /// The integer when it fits an `Int`.
    public var intValue: Int? {
        switch self {
        case .unsigned(let value): return value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): return value <= UInt64(Int.max) ? -Int(value) - 1 : nil
        default: return nil
        }
    }

    public var unsignedValue: UInt64? {
        if case .unsigned(let value) = self { return value }
        return nil
    }

    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var bytesValue: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    public var arrayValue: [CBOR]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var mapValue: CBORMap? {
        if case .map(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var embeddedValue: EmbeddedCBOR? {
        if case .embedded(let value) = self { return value }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// `self[key]` on a map with text keys; nil for anything else.
    public subscript(key: String) -> CBOR? { mapValue?[key] }
    /// `self[key]` on a map with integer keys; nil for anything else.
    public subscript(key: Int) -> CBOR? { mapValue?[key] }

    /// A short name of the item's kind, for error messages.
    public var kindName: String {
        switch self {
        case .unsigned, .negative: return "integer"
        case .bytes: return "byte string"
        case .text: return "text string"
        case .array: return "array"
        case .map: return "map"
        case .tagged(let tag, _): return "tag \(tag)"
        case .embedded: return "embedded CBOR (tag 24)"
        case .bool: return "boolean"
        case .null: return "null"
        case .undefined: return "undefined"
        case .simple: return "simple value"
        case .float: return "float"
        }
    }
}

extension CBOR: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int) { self.init(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
