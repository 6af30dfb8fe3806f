/// What a reader reports about itself and its card.
public struct ReaderInfo: Sendable, Hashable, Codable {
    /// The back end that drives it: `pcsc` or `libnfc`.
    public var backend: String
    /// The reader's name as its back end gives it (PC/SC: `Virtual PCD 00 00`).
    public var name: String
    public var cardPresent: Bool
    /// The card's ATR (contact) or the reader's pseudo-ATR for a contactless card.
    public var atr: [UInt8]?
    /// Another application holds the card exclusively.
    public var exclusive: Bool
    /// The card is present but does not answer.
    public var mute: Bool

    public init(backend: String, name: String, cardPresent: Bool, atr: [UInt8]? = nil, exclusive: Bool = false,
                mute: Bool = false) {
        self.backend = backend
        self.name = name
        self.cardPresent = cardPresent
        self.atr = atr
        self.exclusive = exclusive
        self.mute = mute
    }
}

/// A source of readers: PC/SC, libnfc, or an in-process emulator. Everything above the smart-card
/// layer (BAC, PACE, nfc.read) talks to cards only through this protocol and `CardConnection`.
public protocol CardReaderBackend: Sendable {
    /// A short name for messages and `ReaderInfo.backend`.
    var backendName: String { get }

    /// The readers present now.
    func readers() async throws -> [ReaderInfo]

    /// Waits until a card is present in a reader whose name contains `readerMatching` (any reader
    /// when `nil`), up to `timeout` (forever when `nil`). Throws `.timeout`, `.cancelled` when the
    /// task is cancelled, `.noReaders` / `.readerNotFound` when no reader matches.
    func waitForCard(readerMatching: String?, timeout: Duration?) async throws -> ReaderInfo

    /// Waits until the set of readers changes (plug-in or removal), up to `timeout`; returns the
    /// new list. Returns the current list when `timeout` passes without a change.
    func waitForReaderChange(timeout: Duration?) async throws -> [ReaderInfo]

    /// Connects to the card in the named reader.
    func connect(reader: String) async throws -> any CardConnection
}

/// Where a connection's card is, as the reader sees it.
public enum CardPresence: String, Sendable, Hashable {
    /// The connection's card is still there, powered as it was.
    case present
    /// No card in the field.
    case absent
    /// A card is there, but it was removed and put back or reset since the connection was made:
    /// a new power-on, so any session with the chip is gone.
    case replaced
}

/// A reader's limits as it reports them itself (no card needed): PC/SC's SCARD_ATTR_MAXINPUT and
/// the part 10 property dwMaxAPDUDataSize where the driver gives them. `nil` = the reader does
/// not say.
public struct ReaderCapabilities: Sendable, Hashable, Codable {
    /// The longest command APDU the reader passes on, in bytes.
    public var maxCommandLength: Int?
    /// The most data an extended APDU may carry through this reader (0: short APDUs only).
    public var maxAPDUDataSize: Int?
    /// Whether the reader carries extended-length APDUs at all (`nil`: unknown, the card decides).
    public var extendedLength: Bool?

    public init(maxCommandLength: Int? = nil, maxAPDUDataSize: Int? = nil, extendedLength: Bool? = nil) {
        self.maxCommandLength = maxCommandLength
        self.maxAPDUDataSize = maxAPDUDataSize
        self.extendedLength = extendedLength
    }
}

/// A connected card. Calls are serialised by the implementation; they may block on I/O but never
/// block the Swift cooperative thread pool.
public protocol CardConnection: AnyObject, Sendable {
    var readerName: String { get }
    /// The ATR (or, for contactless cards under PC/SC, the pseudo-ATR built from ATS/ATQB).
    var atr: [UInt8] { get }

    /// Sends raw command bytes and returns the raw response (data + SW1 SW2).
    func transmit(raw: [UInt8]) async throws -> [UInt8]

    /// Whether the transport can carry extended-length APDUs at all (PN53x under libnfc cannot).
    /// `true` means "the card decides"; the reader still probes the card.
    var supportsExtendedLength: Bool { get }

    /// The longest one exchange may take before a reader gives up on the card (10 s unless a
    /// connection says otherwise); `nil` for a chip without a clock of its own, such as one
    /// emulated in this process, whose time is this process's CPU.
    var exchangeTimeLimit: Duration? { get }

    /// Whether the card is still there.
    func isCardPresent() async -> Bool

    /// Where the card is now, looked at after a transport failure: still there as it was, gone,
    /// or back with a new power-on (its sessions lost).
    func presence() async -> CardPresence

    /// What the reader says of its own limits (PC/SC attributes), without asking the card.
    func capabilities() async -> ReaderCapabilities

    /// Releases the card (leaving it powered). Further calls fail.
    func disconnect() async
}

extension CardConnection {
    public var supportsExtendedLength: Bool { true }

    public var exchangeTimeLimit: Duration? { .seconds(10) }

    public func presence() async -> CardPresence { await isCardPresent() ? .present : .absent }

    public func capabilities() async -> ReaderCapabilities {
        ReaderCapabilities(extendedLength: supportsExtendedLength ? nil : false)
    }

    /// Sends a command APDU and returns its response. Handles the transport-level status words:
    /// `61xx` (fetches the rest with GET RESPONSE) and `6Cxx` (resends with the exact Le).
    public func transmit(_ command: CommandAPDU) async throws -> ResponseAPDU {
        var response = try ResponseAPDU(bytes: try await transmit(raw: command.encoded()))
        if response.statusWord.sw1 == 0x6C, command.ne != nil {
            var retry = command
            retry.ne = response.statusWord.sw2 == 0 ? 256 : Int(response.statusWord.sw2)
            response = try ResponseAPDU(bytes: try await transmit(raw: retry.encoded()))
        }
        var data = response.data
        var rounds = 0
        while response.statusWord.sw1 == 0x61 {
            rounds += 1
            guard rounds <= 256 else {
                throw SmartCardError(.invalidResponse, "card kept answering 61xx after 256 GET RESPONSE commands")
            }
            let remaining = response.statusWord.sw2 == 0 ? 256 : Int(response.statusWord.sw2)
            let getResponse = CommandAPDU(cla: command.cla & 0x03, ins: 0xC0, p1: 0, p2: 0, ne: remaining)
            response = try ResponseAPDU(bytes: try await transmit(raw: getResponse.encoded()))
            data += response.data
        }
        return ResponseAPDU(data: data, statusWord: response.statusWord)
    }
}

extension CardReaderBackend {
    /// Waits until a card is back in the reader named `reader` and connects to it: the way back
    /// after the card left the field mid-read. Gives up at `deadline` with `.timeout`, or with
    /// `.cancelled` when the task is cancelled. A card that is seen but gone again before the
    /// connection holds (a hand still moving, a back end whose state lags) is waited for again.
    public func reconnect(reader: String, until deadline: ContinuousClock.Instant) async throws -> any CardConnection {
        while true {
            let remaining = deadline - .now
            guard remaining > .zero else {
                throw SmartCardError(.timeout, "the card did not come back to \(reader) in time")
            }
            _ = try await waitForCard(readerMatching: reader, timeout: remaining)
            do {
                return try await connect(reader: reader)
            } catch let error as SmartCardError where [.noCard, .cardRemoved, .cardUnresponsive].contains(error.code) {
                do {
                    try await Task.sleep(for: .milliseconds(50))
                } catch {
                    throw SmartCardError(.cancelled, "waiting for the card was cancelled")
                }
            }
        }
    }
}
