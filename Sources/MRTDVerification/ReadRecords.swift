/// The raw INTERNAL AUTHENTICATE exchange of Active Authentication, for evidence.
public struct ActiveAuthenticationRecord: Sendable, Hashable {
    public var challenge: [UInt8]
    public var signature: [UInt8]
    /// Whether the challenge was the caller's (`ReadOptions.activeAuthenticationChallenge`) rather than a random one.
    public var challengeFromCaller: Bool

    package init(challenge: [UInt8], signature: [UInt8], challengeFromCaller: Bool) {
        self.challenge = challenge
        self.signature = signature
        self.challengeFromCaller = challengeFromCaller
    }
}

/// A verification outcome other than passive authentication (chip, active).
public struct VerificationOutcome: Sendable, Hashable, Codable {
    public var status: VerificationStatus
    public var detail: String

    public init(status: VerificationStatus, detail: String) {
        self.status = status
        self.detail = detail
    }
}

/// Counters of one read, for benchmarks and diagnostics.
public struct ReadStatistics: Sendable, Hashable {
    public var apdus: Int
    public var bytesSent: Int
    public var bytesReceived: Int
    /// Payload bytes of the files read.
    public var fileBytes: Int
    /// Time spent in the card (transmit calls).
    public var cardTime: Duration
    public var totalTime: Duration
    /// Access control and file reading (card time included), without parsing and verification.
    public var readingTime: Duration
    /// Parsing and verification after the last APDU.
    public var verificationTime: Duration
    /// The largest READ BINARY length that worked.
    public var readSize: Int
    public var extendedLength: Bool
    /// How often secure messaging had to be re-established.
    public var reauthentications: Int
    /// How often the card left the field and the read went on after it came back.
    public var reconnections: Int = 0

    package init(apdus: Int, bytesSent: Int, bytesReceived: Int, fileBytes: Int, cardTime: Duration, totalTime: Duration,
                 readingTime: Duration, verificationTime: Duration, readSize: Int, extendedLength: Bool, reauthentications: Int,
                 reconnections: Int = 0) {
        self.apdus = apdus
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.fileBytes = fileBytes
        self.cardTime = cardTime
        self.totalTime = totalTime
        self.readingTime = readingTime
        self.verificationTime = verificationTime
        self.readSize = readSize
        self.extendedLength = extendedLength
        self.reauthentications = reauthentications
        self.reconnections = reconnections
    }
}

/// One step of a read: its name, how it ended (`done` or an error code), its APDUs and time.
public struct ReadStepRecord: Sendable, Hashable {
    public var name: String
    public var outcome: String
    public var apdus: Int
    public var duration: Duration

    package init(name: String, outcome: String, apdus: Int, duration: Duration) {
        self.name = name
        self.outcome = outcome
        self.apdus = apdus
        self.duration = duration
    }
}
