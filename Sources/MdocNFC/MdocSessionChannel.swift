import Mdoc

/// Where the session's messages go after the NFC engagement when not over NFC: a data-retrieval
/// carrier the holder offered (BLE, `MdocBLE`). `exchange` sends one message (SessionEstablishment
/// or SessionData) and returns the holder's answer; `end` closes the session (BLE: State 0x02).
public protocol MdocSessionChannel: AnyObject, Sendable {
    func exchange(_ message: [UInt8]) async throws(MdocError) -> [UInt8]
    func end() async
    /// "ble", …
    var carrier: String { get }
    /// Phases of the carrier's own set-up (scan, connect) and of the transfer, in seconds.
    var timings: [String: Double] { get }
    /// What a holder's answer that arrived whole but does not decrypt or parse may mean on this
    /// carrier (BLE: pieces delivered out of order), added to that error; nil adds nothing.
    var garbledAnswerHint: String? { get }
}

extension MdocSessionChannel {
    public var garbledAnswerHint: String? { nil }
}

/// Opens a data-retrieval carrier other than NFC for an engagement, or says why it cannot
/// (`MDOC_UNSUPPORTED` when the holder offers none this kiosk can use).
public struct MdocAlternativeCarrier: Sendable {
    /// "ble".
    public let name: String
    /// Whether the holder's engagement offers this carrier (and the kiosk could use it now); the
    /// Handover Select is nil after a QR engagement.
    public let offered: @Sendable (DeviceEngagement, HandoverSelect?) -> Bool
    /// Connects inside `deadline`.
    public let open: @Sendable (DeviceEngagement, HandoverSelect?, ContinuousClock.Instant) async throws -> any MdocSessionChannel
    /// What the reader's Handover Request offers for it (an alternative carrier): the carrier
    /// record's NDEF type and payload; nil offers nothing.
    public let handoverRequestRecord: (type: String, payload: [UInt8])?

    public init(name: String, offered: @escaping @Sendable (DeviceEngagement, HandoverSelect?) -> Bool,
                open: @escaping @Sendable (DeviceEngagement, HandoverSelect?, ContinuousClock.Instant) async throws -> any MdocSessionChannel,
                handoverRequestRecord: (type: String, payload: [UInt8])? = nil) {
        self.name = name
        self.offered = offered
        self.open = open
        self.handoverRequestRecord = handoverRequestRecord
    }
}
