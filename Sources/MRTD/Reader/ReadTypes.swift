import CVCertificates
/// Which access-control protocol to use.
public enum AccessControlPreference: String, Sendable, Hashable, Codable {
    /// PACE when the chip offers it, BAC otherwise.
    case automatic
    case paceOnly
    case bacOnly
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
    /// Terminal Authentication's certificates and key: with them, DG3 (fingerprints) and DG4
    /// (iris) are read from chips that protect them with Extended Access Control.
    public var terminal: TerminalCredentials?
    /// How long the read may take once it has the card, from `PassportReader.read()` to its end
    /// (waiting for a card that left the field included): when it passes, the exchange in flight
    /// is abandoned and the read throws `MRTDError.Code.timeout`. `nil`: no limit (each exchange
    /// is still bounded by `CardConnection.exchangeTimeLimit`).
    public var readTimeout: Duration? = .seconds(60)

    /// What `readTimeout` is unless set: nfc.read's `readTimeoutSeconds` default.
    package static let defaultReadTimeout: Duration = .seconds(60)

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

