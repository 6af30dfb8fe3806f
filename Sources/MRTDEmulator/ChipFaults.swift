import SmartCardCore

/// Misbehaviour to inject into a virtual chip, for tests of reader robustness.
public struct ChipFaults: Sendable, Hashable {
    /// Answer a matching command with a status word instead of processing it.
    public struct StatusOverride: Sendable, Hashable {
        public var ins: UInt8
        public var p1: UInt8?
        public var p2: UInt8?
        public var statusWord: StatusWord
        /// Match only commands with this data (e.g. the file identifier of a SELECT).
        public var data: [UInt8]?
        /// Only the next matching command, or every one.
        public var once: Bool
        /// Answer in plain, ending the secure-messaging session (as real chips do on some errors),
        /// instead of inside secure messaging.
        public var plain: Bool

        public init(ins: UInt8, p1: UInt8? = nil, p2: UInt8? = nil, statusWord: StatusWord, once: Bool = true,
                    plain: Bool = false) {
            self.ins = ins
            self.p1 = p1
            self.p2 = p2
            self.statusWord = statusWord
            self.once = once
            self.plain = plain
        }

        func matches(_ command: CommandAPDU) -> Bool {
            command.ins == ins && (p1 == nil || p1 == command.p1) && (p2 == nil || p2 == command.p2)
                && (data == nil || data == command.data)
        }
    }

    /// The card is taken away after this many more APDUs (counted from when the faults are set).
    public var removeAfterAPDUs: Int?
    /// The MAC of the next secure-messaging response is corrupted.
    public var corruptNextResponseMAC = false
    public var statusOverrides: [StatusOverride] = []
    /// READ BINARY with Ne above this is answered 6700 (wrong length).
    public var readLengthCap: Int?
    /// Added before every answer.
    public var latencyPerAPDU: Duration = .zero
    /// A contactless link's time added before every answer (bytes on air, frame delays and the
    /// chip's own time; `ContactlessTiming`), on top of `latencyPerAPDU`.
    public var timing: ContactlessTiming?

    /// How long the answer to an exchange of these sizes is held back.
    public func answerDelay(commandBytes: Int, responseBytes: Int) -> Duration {
        latencyPerAPDU + (timing?.exchangeTime(commandBytes: commandBytes, responseBytes: responseBytes) ?? .zero)
    }

    public init(removeAfterAPDUs: Int? = nil, corruptNextResponseMAC: Bool = false,
                statusOverrides: [StatusOverride] = [], readLengthCap: Int? = nil, latencyPerAPDU: Duration = .zero) {
        self.removeAfterAPDUs = removeAfterAPDUs
        self.corruptNextResponseMAC = corruptNextResponseMAC
        self.statusOverrides = statusOverrides
        self.readLengthCap = readLengthCap
        self.latencyPerAPDU = latencyPerAPDU
    }
}
