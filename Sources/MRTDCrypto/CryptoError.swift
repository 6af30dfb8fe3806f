import COpenSSLShim

/// A cryptographic failure with a stable code, a reason, and OpenSSL's own message when it had one.
public struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidKey = Code("INVALID_KEY")
        public static let invalidInput = Code("INVALID_INPUT")
        public static let unsupportedAlgorithm = Code("UNSUPPORTED_ALGORITHM")
        public static let malformedData = Code("MALFORMED_DATA")
        public static let openSSLFailure = Code("OPENSSL_FAILURE")
        /// An AEAD tag or a MAC that does not verify.
        public static let authenticationFailed = Code("AUTHENTICATION_FAILED")
    }

    public var code: Code
    public var reason: String
    public var file: String
    public var line: UInt

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// An error for a failed OpenSSL call, carrying OpenSSL's queued message.
    static func openSSL(_ operation: String, file: String = #fileID, line: UInt = #line) -> CryptoError {
        var buffer = [CChar](repeating: 0, count: 256)
        COpenSSLShim_last_error(&buffer, Int32(buffer.count))
        let detail = readable(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        return CryptoError(.openSSLFailure, detail.isEmpty ? "\(operation) failed" : "\(operation) failed: \(detail)",
                           file: file, line: line)
    }

    /// OpenSSL's queued message in words: "error:0680008E:asn1 encoding routines::not enough data"
    /// becomes "asn1 encoding routines: not enough data" (the packed code means nothing to a user).
    static func readable(_ message: String) -> String {
        let parts = message.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "error" else { return message }
        let library = parts[2], reason = parts[4]
        return library.isEmpty ? String(reason) : "\(library): \(reason)"
    }

    public var description: String { "CryptoError.\(code): \(reason)" }

    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool { lhs.code == rhs.code && lhs.reason == rhs.reason }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
    }
}
