import SmartCardCore

/// A failure while reading or verifying an eMRTD, with a stable code. Reasons never contain the
/// access key (MRZ, CAN) or key material.
public struct MRTDError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The MRZ or access-key fields are malformed (bad characters, check digits, dates).
        public static let invalidAccessKey = Code("INVALID_ACCESS_KEY")
        /// The chip refused the access key (wrong MRZ/CAN).
        public static let accessDenied = Code("ACCESS_DENIED")
        /// A secure-messaging response failed its MAC or could not be decrypted.
        public static let secureMessagingFailure = Code("SECURE_MESSAGING_FAILURE")
        /// The chip answered a protected command in plain: it ended the secure-messaging session.
        public static let secureMessagingDropped = Code("SECURE_MESSAGING_DROPPED")
        /// The chip answered with an unexpected status word.
        public static let unexpectedStatus = Code("UNEXPECTED_STATUS")
        /// Data on the chip is malformed.
        public static let malformedData = Code("MALFORMED_DATA")
        /// The chip does not support what was asked (protocol, file).
        public static let notSupported = Code("NOT_SUPPORTED")
        /// The card went away (and, where the read waits for it, did not come back in time).
        public static let cardRemoved = Code("CARD_REMOVED")
        /// The card that came back after leaving the field is not the chip that left: it does not
        /// prove the Chip Authentication key the first one proved.
        public static let differentChip = Code("DIFFERENT_CHIP")
        /// The reader or transport failed.
        public static let communicationFailure = Code("COMMUNICATION_FAILURE")
        /// The operation was cancelled.
        public static let cancelled = Code("CANCELLED")
        /// The chip stopped answering: one exchange took longer than its bound, or the read as a
        /// whole outlived its deadline (`ReadOptions.readTimeout`).
        public static let timeout = Code("TIMEOUT")
        /// A trust-store file is missing or unreadable.
        public static let trustStore = Code("TRUST_STORE")
        /// A cryptographic operation failed.
        public static let cryptoFailure = Code("CRYPTO_FAILURE")
        /// Chip evidence (`ChipEvidence`) is malformed: unknown file names, data that is not
        /// base64, no EF.SOD, a challenge that is not 8 bytes.
        public static let invalidEvidence = Code("INVALID_EVIDENCE")
    }

    public var code: Code
    public var reason: String
    /// The status word behind the error, when a chip answer caused it.
    public var statusWord: StatusWord?
    package var file: String
    package var line: UInt

    public init(_ code: Code, _ reason: String, statusWord: StatusWord? = nil, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.statusWord = statusWord
        self.file = file
        self.line = line
    }

    public var description: String {
        var text = "MRTDError.\(code): \(reason)"
        if let statusWord { text += " (SW \(statusWord))" }
        return text
    }

    public static func == (lhs: MRTDError, rhs: MRTDError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason && lhs.statusWord == rhs.statusWord
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
    }
}
