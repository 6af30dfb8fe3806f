/// Which access-control protocol to use.
public enum AccessControlPreference: String, Sendable, Hashable, Codable {
    /// PACE when the chip offers it, BAC otherwise.
    case automatic
    case paceOnly
    case bacOnly
}

/// The raw INTERNAL AUTHENTICATE exchange of Active Authentication, for evidence.
public struct ActiveAuthenticationRecord: Sendable, Hashable {
    public var challenge: [UInt8]
    public var signature: [UInt8]
    /// Whether the challenge was the caller's (`ReadOptions.activeAuthenticationChallenge`) rather than a random one.
    public var challengeFromCaller: Bool

    public init(challenge: [UInt8], signature: [UInt8], challengeFromCaller: Bool) {
        self.challenge = challenge
        self.signature = signature
        self.challengeFromCaller = challengeFromCaller
    }
}

/// What to read and verify.
public struct ReadOptions: Sendable {
    /// Data groups to read; `nil` reads every one EF.COM or EF.SOD lists.
    public var dataGroups: [Int]?
    public var verifyPassive: Bool
    public var verifyChip: Bool
    public var verifyActive: Bool
    public var trustStore: TrustStore
    public var accessControl: AccessControlPreference
    /// Where to record every APDU exchange (`nil`: nowhere). See `APDUTrace` for what it holds.
    public var trace: APDUTrace?
    /// The 8-byte challenge Active Authentication sends (a backend's nonce, so that it can check
    /// the signature itself; `nil`: a fresh random one). Any other length is refused by the read.
    public var activeAuthenticationChallenge: [UInt8]?

    public init(dataGroups: [Int]? = nil, verifyPassive: Bool = true, verifyChip: Bool = true, verifyActive: Bool = true,
                trustStore: TrustStore = TrustStore(), accessControl: AccessControlPreference = .automatic, trace: APDUTrace? = nil) {
        self.trace = trace
        self.dataGroups = dataGroups
        self.verifyPassive = verifyPassive
        self.verifyChip = verifyChip
        self.verifyActive = verifyActive
        self.trustStore = trustStore
        self.accessControl = accessControl
    }
}

/// Where a read is, for progress bars. `percent` grows monotonically from 0 to 100.
public struct ReadProgress: Sendable, Hashable {
    public enum Phase: String, Sendable, Hashable, Codable {
        case waitingForCard, cardDetected, authenticating, reading, verifying
    }

    public var phase: Phase
    public var file: String?
    public var bytesRead: Int?
    public var bytesTotal: Int?
    public var percent: Int
    /// Why the read is back at `waitingForCard`: `cardRemoved` when the document left the field
    /// during the read (the read goes on where it stopped once it is back). `nil` otherwise.
    public var reason: String?
    /// A sentence a journey can show with `reason` ("Put the document back on the reader …").
    public var message: String?

    public init(phase: Phase, file: String? = nil, bytesRead: Int? = nil, bytesTotal: Int? = nil, percent: Int,
                reason: String? = nil, message: String? = nil) {
        self.phase = phase
        self.file = file
        self.bytesRead = bytesRead
        self.bytesTotal = bytesTotal
        self.percent = percent
        self.reason = reason
        self.message = message
    }

    /// The `reason` of a `waitingForCard` after the document left the field mid-read.
    public static let cardRemovedReason = "cardRemoved"
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
}
