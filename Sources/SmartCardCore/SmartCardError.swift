/// A smart-card failure with a stable `code` for programs, a `reason` for people, the PC/SC status
/// when one was involved, and where it was raised.
public struct SmartCardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error category; compare with `==`, print with `description`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// pcscd is not running (or went away).
        public static let serviceUnavailable = Code("SERVICE_UNAVAILABLE")
        /// pcscd refused this process (polkit / permissions).
        public static let permissionDenied = Code("PERMISSION_DENIED")
        /// No reader is connected.
        public static let noReaders = Code("NO_READERS")
        /// No reader matches the requested name.
        public static let readerNotFound = Code("READER_NOT_FOUND")
        /// The reader exists but cannot be used now (unplugged, in use exclusively).
        public static let readerUnavailable = Code("READER_UNAVAILABLE")
        /// No card is in the reader.
        public static let noCard = Code("NO_CARD")
        /// The card was removed (or reset) during the exchange.
        public static let cardRemoved = Code("CARD_REMOVED")
        /// The card does not answer (mute, unpowered).
        public static let cardUnresponsive = Code("CARD_UNRESPONSIVE")
        /// The card stopped answering in the middle of an exchange, and its reader is still held by
        /// it (pcscd waits for the answer until the card leaves): take the card off the reader.
        public static let stalled = Code("CARD_STALLED")
        /// A wait ran out of time.
        public static let timeout = Code("TIMEOUT")
        /// The operation was cancelled.
        public static let cancelled = Code("CANCELLED")
        /// Another process holds the card exclusively.
        public static let sharingViolation = Code("SHARING_VIOLATION")
        /// The card and the reader agree on no protocol.
        public static let protocolMismatch = Code("PROTOCOL_MISMATCH")
        /// The transport lost data or failed.
        public static let communicationFailure = Code("COMMUNICATION_FAILURE")
        /// A command APDU could not be encoded (bad length) or parsed.
        public static let invalidAPDU = Code("INVALID_APDU")
        /// The card's answer is not a valid response.
        public static let invalidResponse = Code("INVALID_RESPONSE")
        /// BER-TLV data is malformed.
        public static let malformedTLV = Code("MALFORMED_TLV")
        /// Anything else, with the PC/SC status attached.
        public static let internalError = Code("INTERNAL_ERROR")
    }

    public var code: Code
    public var reason: String
    /// The PC/SC status (`SCARD_E_…`) behind the error, when there was one.
    public var pcscStatus: PCSCStatus?
    public var file: String
    public var line: UInt

    public init(_ code: Code, _ reason: String, pcscStatus: PCSCStatus? = nil,
                file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.pcscStatus = pcscStatus
        self.file = file
        self.line = line
    }

    public var description: String {
        var text = "SmartCardError.\(code): \(reason)"
        if let pcscStatus { text += " (\(pcscStatus))" }
        return text
    }

    public static func == (lhs: SmartCardError, rhs: SmartCardError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason && lhs.pcscStatus == rhs.pcscStatus
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
        hasher.combine(pcscStatus)
    }
}
