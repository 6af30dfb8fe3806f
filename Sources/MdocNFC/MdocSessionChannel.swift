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
    /// What the carrier says of the link it used (BLE: mode, GATT or L2CAP, MTU, PSM); nil says nothing.
    var link: MdocCarrierLink? { get }
}

extension MdocSessionChannel {
    public var garbledAnswerHint: String? { nil }
    public var link: MdocCarrierLink? { nil }
}

/// How a BLE session ran: its mode, the channel that carried the messages, and why a holder's
/// L2CAP channel was not used when it offered one. The report's `transport.ble`.
public struct MdocCarrierLink: Sendable, Equatable {
    /// "peripheral-server" or "central-client" (ISO 18013-5 §8.3.3.1.1).
    public var mode: String
    /// "gatt" (State, Client2Server, Server2Client) or "l2cap" (an LE credit-based channel).
    public var channel: String
    /// The ATT MTU (GATT) or the L2CAP channel's send MTU.
    public var mtu: Int
    /// The holder's PSM, over L2CAP.
    public var psm: Int?
    /// The holder offered L2CAP and the session ran over GATT: why.
    public var l2capNotUsed: String?

    public init(mode: String, channel: String, mtu: Int, psm: Int? = nil, l2capNotUsed: String? = nil) {
        self.mode = mode
        self.channel = channel
        self.mtu = mtu
        self.psm = psm
        self.l2capNotUsed = l2capNotUsed
    }
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
