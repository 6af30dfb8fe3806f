/// A CBOR item refused, with a stable code and where in the input it was.
public struct CBORError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The input ends inside an item.
        public static let truncated = Code("CBOR_TRUNCATED")
        /// Bytes follow the single top-level item.
        public static let trailingBytes = Code("CBOR_TRAILING_BYTES")
        /// Nesting deeper than the limit.
        public static let tooDeep = Code("CBOR_TOO_DEEP")
        /// More items than the limit.
        public static let tooManyItems = Code("CBOR_TOO_MANY_ITEMS")
        /// A string, or the input, longer than the limit.
        public static let tooLong = Code("CBOR_TOO_LONG")
        /// A map holding one key twice.
        public static let duplicateKey = Code("CBOR_DUPLICATE_KEY")
        /// A text string that is not UTF-8.
        public static let invalidUTF8 = Code("CBOR_INVALID_UTF8")
        /// Reserved additional information (28–30), a stray break, or a malformed simple value.
        public static let malformed = Code("CBOR_MALFORMED")
        /// A head or length not in its shortest form where the profile demands preferred serialization.
        public static let nonPreferred = Code("CBOR_NON_PREFERRED")
        /// An indefinite-length item where the profile forbids it, or one with too many chunks.
        public static let indefiniteLength = Code("CBOR_INDEFINITE_LENGTH")
        /// A well-formed item of the wrong shape for where it stands.
        public static let unexpectedType = Code("CBOR_UNEXPECTED_TYPE")
    }

    public var code: Code
    public var reason: String
    /// Byte offset in the input where the problem was found (nil when it is not about a position).
    public var offset: Int?

    public init(_ code: Code, _ reason: String, offset: Int? = nil) {
        self.code = code
        self.reason = reason
        self.offset = offset
    }

    public var description: String {
        offset.map { "\(code): \(reason) (at byte \($0))" } ?? "\(code): \(reason)"
    }
}

/// What decoding one input may cost. Every bound is checked before the work it bounds.
public struct CBORLimits: Sendable, Hashable {
    /// Largest input accepted.
    public var maximumBytes: Int
    /// Deepest nesting of arrays, maps and tags.
    public var maximumDepth: Int
    /// Most data items in the whole input (each array element, map key and value counts).
    public var maximumItems: Int
    /// Longest byte or text string (a definite one, or the sum of an indefinite one's chunks).
    public var maximumStringBytes: Int
    /// Whether indefinite-length strings, arrays and maps are accepted at all.
    public var allowsIndefiniteLength: Bool
    /// Most chunks in one indefinite-length string.
    public var maximumChunks: Int
    /// Whether heads and lengths must be in their shortest form (preferred serialization).
    public var requiresPreferredSerialization: Bool

    public init(maximumBytes: Int, maximumDepth: Int, maximumItems: Int, maximumStringBytes: Int,
                allowsIndefiniteLength: Bool = true, maximumChunks: Int = 1024, requiresPreferredSerialization: Bool = false) {
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
        self.maximumItems = maximumItems
        self.maximumStringBytes = maximumStringBytes
        self.allowsIndefiniteLength = allowsIndefiniteLength
        self.maximumChunks = maximumChunks
        self.requiresPreferredSerialization = requiresPreferredSerialization
    }

    /// Enough for an mdoc response with a portrait and a few hundred elements.
    public static let `default` = CBORLimits(maximumBytes: 4 << 20, maximumDepth: 24, maximumItems: 100_000, maximumStringBytes: 2 << 20)
}
