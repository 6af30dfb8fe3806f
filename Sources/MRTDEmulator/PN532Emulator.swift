import Synchronization

/// The PN532 side of the UART ("HSU") link, as NXP's PN532 user manual describes it, with a
/// virtual chip as the one target in its field. Bytes from the host go in through `receive`,
/// bytes for the host come out. Pure protocol logic: `PN532PseudoTerminal` puts it on a pty.
///
/// Framing: `00 00 FF LEN LCS D4 CMD data DCS 00` (extended: `00 00 FF FF FF LENM LENL LCS …`).
/// Every well-formed command is acknowledged with `00 00 FF 00 FF 00`, then answered with
/// `D5 CMD+1 …`. A NACK from the host (`00 00 FF FF 00 00`) repeats the last answer, an ACK aborts
/// the command in progress (a pending InListPassiveTarget), wake-up bytes (`55 55 00 00 …`) and
/// other line noise before a start code are skipped, a frame with a bad checksum gets the
/// application-level error frame.
public final class PN532Emulator: Sendable {
    /// Largest InDataExchange payload the PN532 carries in one frame (its internal buffer).
    public static let maxDataExchange = 262
    static let ack: [UInt8] = [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00]
    static let errorFrame: [UInt8] = [0x00, 0x00, 0xFF, 0x01, 0xFF, 0x7F, 0x81, 0x00]

    public enum Event: Sendable, Hashable {
        case command(UInt8)
        case unsupported(UInt8)
        case badFrame(String)
        case selected
        case apdu(command: Int, response: Int)
        /// The host sent an ACK: it aborted the command in progress.
        case aborted
    }

    private struct State {
        var buffer: [UInt8] = []
        var lastAnswer: [UInt8] = []
        var registers: [UInt16: UInt8] = [:]
        var parameters: UInt8 = 0
        var fieldOn = true
        var passiveRetries: UInt8 = 0xFF
        var chip: VirtualPassportChip?
        var selected = false
        /// An InListPassiveTarget waiting for a card (infinite retries, empty field).
        var pendingList: [UInt8]?
        var uid: [UInt8] = [0x08, 0x5A, 0x3C, 0x11]
        /// The sizes of the last APDU exchange (for the answer's delay).
        var lastExchange: (Int, Int)?
        /// An answer held back by the chip's latency fault.
        var delayed: (answer: [UInt8], delay: Duration)?
    }
    private let state = Mutex(State())
    private let onEvent: @Sendable (Event) -> Void

    /// How the chip answers polling: ISO 14443 type A (passports) or type B (many ID cards).
    public enum CardType: Sendable, Hashable { case typeA, typeB }
    public let cardType: CardType

    public init(chip: VirtualPassportChip?, cardType: CardType = .typeA,
                onEvent: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.onEvent = onEvent
        self.cardType = cardType
        state.withLock { $0.chip = chip }
    }

    /// Puts a chip into the field (`nil` takes it away). A waiting InListPassiveTarget is
    /// answered; the returned bytes are for the host.
    public func setChip(_ chip: VirtualPassportChip?) -> [UInt8] {
        state.withLock { state -> [UInt8] in
            state.chip = chip
            state.selected = false
            chip?.reinsert()
            guard chip != nil, let pending = state.pendingList else { return [] }
            state.pendingList = nil
            let answer = Self.frame(command: 0x4A, Self.listPassive(pending, cardType, &state))
            state.lastAnswer = answer
            return answer
        }
    }

    /// What the PN532 sends back: `now` at once, `later` after `delay` (the chip's latency fault
    /// on an InDataExchange; the ACK is in `now`, so the host can abort in between).
    public struct Reply: Sendable, Hashable {
        public var now: [UInt8] = []
        public var later: [UInt8] = []
        public var delay: Duration = .zero
    }

    /// Feeds bytes from the host; returns what the PN532 sends back, all at once.
    public func receive(_ bytes: [UInt8]) -> [UInt8] {
        let reply = receiveTimed(bytes)
        return reply.now + reply.later
    }

    /// Feeds bytes from the host; returns what the PN532 sends back and when.
    public func receiveTimed(_ bytes: [UInt8]) -> Reply {
        var events: [Event] = []
        let reply = state.withLock { state -> Reply in
            state.buffer += bytes
            var reply = Reply()
            while state.delayed == nil, let step = Self.nextFrame(&state, &events, cardType) {
                reply.now += step
            }
            if let delayed = state.delayed {
                reply.later = delayed.answer
                reply.delay = delayed.delay
                state.delayed = nil
            }
            return reply
        }
        events.forEach(onEvent)
        return reply
    }

    /// Parses one frame from the buffer; `nil` when more bytes are needed.
    private static func nextFrame(_ state: inout State, _ events: inout [Event], _ cardType: CardType) -> [UInt8]? {
        var b = state.buffer
        // Skip to a start code 00 FF.
        var start = 0
        while start + 1 < b.count, !(b[start] == 0x00 && b[start + 1] == 0xFF) { start += 1 }
        if start + 1 >= b.count {
            state.buffer = b.last == 0x00 ? [0x00] : []
            return nil
        }
        b.removeFirst(start)
        guard b.count >= 4 else { state.buffer = b; return nil }
        let len = b[2], lcs = b[3]
        if len == 0x00 && lcs == 0xFF {  // ACK from the host: abort what is running
            state.buffer = Array(b.dropFirst(4))
            state.pendingList = nil
            events.append(.aborted)
            return []
        }
        if len == 0xFF && lcs == 0x00 {  // NACK: send the last answer again
            state.buffer = Array(b.dropFirst(4))
            return state.lastAnswer
        }
        var bodyStart = 4
        var length = Int(len)
        if len == 0xFF && lcs == 0xFF {
            guard b.count >= 7 else { state.buffer = b; return nil }
            guard (Int(b[4]) + Int(b[5]) + Int(b[6])) & 0xFF == 0 else {
                state.buffer = Array(b.dropFirst(7))
                events.append(.badFrame("extended length checksum"))
                return errorFrame
            }
            length = Int(b[4]) << 8 | Int(b[5])
            bodyStart = 7
        } else if (Int(len) + Int(lcs)) & 0xFF != 0 {
            state.buffer = Array(b.dropFirst(4))
            events.append(.badFrame("length checksum"))
            return errorFrame
        }
        guard b.count >= bodyStart + length + 1 else { state.buffer = b; return nil }
        let body = Array(b[bodyStart..<bodyStart + length])
        let dcs = b[bodyStart + length]
        state.buffer = Array(b.dropFirst(bodyStart + length + 1))
        guard body.count >= 2, body[0] == 0xD4,
              body.reduce(dcs, { $0 &+ $1 }) == 0 else {
            events.append(.badFrame(body.first == 0xD4 ? "data checksum" : "TFI"))
            return errorFrame
        }
        let command = body[1]
        events.append(.command(command))
        guard let answer = execute(command, Array(body.dropFirst(2)), cardType, &state, &events) else {
            return ack  // answered later (a pending InListPassiveTarget)
        }
        let framed = answer.map { frame(command: command, $0) } ?? errorFrame
        state.lastAnswer = framed
        if command == 0x40, let (sent, received) = state.lastExchange,
           let delay = state.chip.map({ $0.faults.answerDelay(commandBytes: sent, responseBytes: received) + $0.takeAnswerPenalty() }), delay > .zero {
            state.lastExchange = nil
            state.delayed = (framed, delay)
            return ack
        }
        state.lastExchange = nil
        return ack + framed
    }

    /// The answer's data (after D5 CMD+1): `.some(nil)` is a syntax error, `nil` answers later.
    private static func execute(_ command: UInt8, _ data: [UInt8], _ cardType: CardType, _ state: inout State,
                                _ events: inout [Event]) -> [UInt8]?? {
        switch command {
        case 0x00:  // Diagnose
            guard let test = data.first else { return .some(nil) }
            switch test {
            case 0x00: return data  // communication line test: echo
            case 0x06:  // attention request / card presence
                return [state.selected && isPresent(state) ? 0x00 : 0x01]
            default: return [0x00]
            }
        case 0x02: return [0x32, 0x01, 0x06, 0x07]  // GetFirmwareVersion: PN532 v1.6, ISO A/B + 18092
        case 0x04:  // GetGeneralStatus
            var answer: [UInt8] = [0x00, state.fieldOn ? 1 : 0, state.selected ? 1 : 0]
            if state.selected { answer += [0x01, 0x00, 0x00, 0x00] }
            return answer + [0x00]
        case 0x06:  // ReadRegister: 16-bit addresses
            guard data.count % 2 == 0, !data.isEmpty else { return .some(nil) }
            return stride(from: 0, to: data.count, by: 2).map {
                state.registers[UInt16(data[$0]) << 8 | UInt16(data[$0 + 1])] ?? 0x00
            }
        case 0x08:  // WriteRegister: address, value triples
            guard data.count % 3 == 0 else { return .some(nil) }
            for i in stride(from: 0, to: data.count, by: 3) {
                state.registers[UInt16(data[i]) << 8 | UInt16(data[i + 1])] = data[i + 2]
            }
            return []
        case 0x12:  // SetParameters
            state.parameters = data.first ?? 0
            return []
        case 0x14: return []  // SAMConfiguration
        case 0x16: return [0x00]  // PowerDown
        case 0x32:  // RFConfiguration
            guard let item = data.first else { return .some(nil) }
            if item == 0x01, data.count >= 2 {
                state.fieldOn = data[1] & 0x01 != 0
                if !state.fieldOn { state.selected = false; state.chip?.reset() }
            }
            if item == 0x05, data.count >= 4 { state.passiveRetries = data[3] }
            return []
        case 0x4A:  // InListPassiveTarget
            guard data.count >= 2 else { return .some(nil) }
            if state.chip == nil || state.chip?.isRemoved == true || !state.fieldOn {
                if state.passiveRetries == 0xFF && (data[1] == 0x00 || data[1] == 0x03) {
                    state.pendingList = data
                    return nil
                }
                return [0x00]
            }
            let answer = listPassive(data, cardType, &state)
            if state.selected { events.append(.selected) }
            return answer
        case 0x40:  // InDataExchange
            guard let target = data.first else { return .some(nil) }
            guard target & 0x3F == 0x01, state.selected else { return [0x27] }  // improper state
            guard isPresent(state), let chip = state.chip else { return [0x01] }  // timeout
            let apdu = Array(data.dropFirst())
            switch chip.process(apdu) {
            case .removed:
                state.selected = false
                return [0x01]
            case .stall:
                return [0x01]  // the PN532 times out waiting for the card
            case .response(let response):
                events.append(.apdu(command: apdu.count, response: response.count))
                state.lastExchange = (apdu.count, response.count)
                // The PN532 buffer holds 262 bytes; a longer answer would need MI chaining,
                // which libnfc does not support: report a buffer overflow instead.
                guard response.count <= maxDataExchange - 1 else { return [0x19] }
                return [0x00] + response
            }
        case 0x42:  // InCommunicateThru: the presence check sends an R(NAK) block
            guard state.selected, isPresent(state) else { return [0x01] }
            if let pcb = data.first, pcb & 0xF6 == 0xB2 { return [0x00, 0xA2 | (pcb & 0x01)] }
            return [0x01]
        case 0x44, 0x52:  // InDeselect, InRelease
            if command == 0x52 { state.chip?.reset() }
            state.selected = false
            return [0x00]
        case 0x4E:  // InSelect
            state.selected = state.chip != nil && isPresent(state)
            return [state.selected ? 0x00 : 0x27]
        default:
            events.append(.unsupported(command))
            return .some(nil)
        }
    }

    private static func isPresent(_ state: State) -> Bool {
        guard let chip = state.chip else { return false }
        return !chip.isRemoved && state.fieldOn
    }

    /// Activates the chip as ISO 14443-4 target 1 when the polled type (baud rate/type 00: 106 kbps
    /// type A, 03: type B) is the chip's; other types find nothing.
    private static func listPassive(_ data: [UInt8], _ cardType: CardType, _ state: inout State) -> [UInt8] {
        guard let chip = state.chip else { return [0x00] }
        switch (data[1], cardType) {
        case (0x00, .typeA):
            chip.reset()
            state.selected = true
            var answer: [UInt8] = [0x01, 0x01, 0x00, 0x08, 0x20, UInt8(state.uid.count)] + state.uid
            if state.parameters & 0x10 != 0 {  // fAutomaticRATS: the PN532 sends RATS itself
                let ats: [UInt8] = [0x78, 0x77, 0xB1, 0x02, 0x80]
                answer += [UInt8(ats.count + 1)] + ats
            }
            return answer
        case (0x03, .typeB):
            chip.reset()
            state.selected = true
            // ATQB: 50, PUPI, application data, protocol info (FSCI 8 = 256 bytes, ISO 14443-4,
            // FWI 8); then ATTRIB_RES (MBLI/CID 00).
            let atqb: [UInt8] = [0x50] + state.uid + [0x00, 0x00, 0x00, 0x00] + [0x80, 0x81, 0x81]
            return [0x01, 0x01] + atqb + [0x01, 0x00]
        default:
            return [0x00]
        }
    }

    /// `00 00 FF LEN LCS D5 CMD+1 data DCS 00`, extended when the body is over 255 bytes.
    static func frame(command: UInt8, _ data: [UInt8]) -> [UInt8] {
        let body: [UInt8] = [0xD5, command &+ 1] + data
        var out: [UInt8] = [0x00, 0x00, 0xFF]
        if body.count > 255 {
            let high = UInt8(body.count >> 8), low = UInt8(body.count & 0xFF)
            out += [0xFF, 0xFF, high, low, 0 &- (high &+ low)]
        } else {
            out += [UInt8(body.count), 0 &- UInt8(body.count)]
        }
        out += body
        out += [0 &- body.reduce(0, &+), 0x00]
        return out
    }
}
