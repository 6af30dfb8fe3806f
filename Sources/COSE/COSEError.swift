import CBORCoding

/// A COSE structure or key refused, with a stable code.
public struct COSEError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not the structure RFC 9052 defines (wrong length, wrong types, undecodable headers).
        public static let malformed = Code("COSE_MALFORMED")
        /// An algorithm or curve this implementation does not take.
        public static let unsupportedAlgorithm = Code("COSE_UNSUPPORTED_ALGORITHM")
        /// A key that is not usable (wrong type for the algorithm, not on its curve).
        public static let invalidKey = Code("COSE_INVALID_KEY")
        /// The signature or MAC does not verify.
        public static let verificationFailed = Code("COSE_VERIFICATION_FAILED")
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }

    static func malformed(_ reason: String) -> COSEError { COSEError(.malformed, reason) }
}
