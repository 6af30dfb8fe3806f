import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore
import Synchronization

/// An ICAO 9303 LDS1 chip that answers APDUs like a real passport: MF and eMRTD application,
/// SELECT by file id and SFI, READ BINARY (short, extended, odd INS B1), GET CHALLENGE, BAC
/// (EXTERNAL/MUTUAL AUTHENTICATE) and 3DES secure messaging with a MAC check on every command.
/// Before BAC only SELECT of the application, GET CHALLENGE and the MF's public files work.
///
/// Thread-safe: transports may call `process` from any thread; calls are serialised.
public final class VirtualPassportChip: Sendable {
    /// What the chip did with an APDU.
    public enum Output: Sendable, Hashable {
        case response([UInt8])
        /// The card left the field (fault injection); nothing was answered.
        case removed
        /// The chip stopped answering and stays in the field (a hostile card): the transport
        /// sends nothing back until the card is removed.
        case stall
    }

    /// Counters a test can inspect.
    public struct Statistics: Sendable, Hashable {
        public var apdus = 0
        public var readBinaryCommands = 0
        public var bytesRead = 0
        public var bacSuccesses = 0
        public var bacFailures = 0
        public var secureMessagingFailures = 0
        public var paceSuccesses = 0
        public var paceFailures = 0
        public var activeAuthentications = 0
        public var chipAuthentications = 0
        /// Answers held back after wrong keys (`slowAfterWrongKey`).
        public var slowedAnswers = 0
    }

    enum DF { case master, application }

    struct State {
        var df: DF = .master
        var selectedFile: UInt16?
        var challenge: [UInt8]?
        var sm: SecureMessaging?
        var pace: ChipPACESession?
        var chipAuthenticationSelected = false
        /// Keys that replace the session once the current answer is out (Chip Authentication).
        var pendingSession: SecureMessaging?
        var authenticated = false
        var faults = ChipFaults()
        var apdusSinceFaults = 0
        /// APDUs since power-on (for the tag-loss quirk).
        var apdusSincePowerOn = 0
        var removed = false
        /// When a card that left by the tag-loss quirk is back in the field.
        var returnsAt: ContinuousClock.Instant?
        /// The tag-loss quirk strikes once per chip.
        var tagLossDone = false
        /// The broken-answer quirk strikes once per chip.
        var brokenAnswerDone = false
        /// Terminal Authentication in this session.
        var terminal = ChipTerminalAuthentication.State()
        /// What GET RESPONSE still has to hand over (`getResponseAnswers`).
        var pendingAnswer: [UInt8] = []
        /// A command chain in progress (CLA b5): its INS and the data of the links so far.
        var chain: (ins: UInt8, data: [UInt8])?
        /// How a hostile chip bends the answer to the command in progress (`HostileCard`).
        var hostileAnswer: HostileAnswer?
        /// Counts a hostile chip's lies (each 6Cxx names another length).
        var hostileCounter = 0
        /// Wrong access keys since the last right one (`slowAfterWrongKey`).
        var wrongKeys = 0
        /// How late the answer just given is to be handed over (`slowAfterWrongKey`).
        var answerPenalty: Duration = .zero
        /// The hostile chip has stopped answering; so it stays until power-off.
        var stalled = false
        var statistics = Statistics()
    }

    public let passport: EmulatedPassport
    public let atr: [UInt8]
    let bacKeys: BAC.Keys
    private let state = Mutex(State())
    /// The chip's lasting EAC memory (its date, trust points added by link certificates).
    let eacState = Mutex<ChipTerminalAuthentication.Memory?>(nil)
    /// The field behaviours this chip reproduces (`passport.quirks`, checked when it was loaded).
    let quirks: ChipQuirks.Resolved

    public init(passport: EmulatedPassport) {
        self.passport = passport
        self.quirks = (try? passport.quirks.resolved()) ?? ChipQuirks.Resolved()
        self.bacKeys = BAC.Keys(keySeed: KeyDerivation.bacKeySeed(mrzInformation: passport.mrzKeyInformation))
        self.atr = Self.contactlessATR(historicalBytes: Array("GBGeMRTD".utf8))
    }

    /// A PC/SC part 3 style ATR for a contactless card: 3B 8n 80 01, historical bytes, TCK.
    static func contactlessATR(historicalBytes: [UInt8]) -> [UInt8] {
        let body: [UInt8] = [0x80 | UInt8(historicalBytes.count), 0x80, 0x01] + historicalBytes
        return [0x3B] + body + [body.reduce(0, ^)]
    }

    /// Sets the faults to inject from now on (the APDU count for `removeAfterAPDUs` restarts).
    public func setFaults(_ faults: ChipFaults) {
        state.withLock {
            $0.faults = faults
            $0.apdusSinceFaults = 0
        }
    }

    public var faults: ChipFaults { state.withLock { $0.faults } }
    public var statistics: Statistics { state.withLock { $0.statistics } }
    /// Whether the card is out of the field (`removeAfterAPDUs`, or the tag-loss quirk until it
    /// comes back by itself).
    public var isRemoved: Bool {
        state.withLock { state in
            if state.removed, let back = state.returnsAt, ContinuousClock.now >= back {
                Self.powerOn(&state)
            }
            return state.removed
        }
    }

    /// Whether the card, once out of the field, comes back by itself (the tag-loss quirk).
    public var returnsByItself: Bool { state.withLock { $0.returnsAt != nil } }
    /// Whether a hostile chip has stopped answering (`HostileCard`): it stays so until power-off.
    public var hasStalled: Bool { state.withLock { $0.stalled } }
    /// Whether BAC has been completed in this session.
    public var isAuthenticated: Bool { state.withLock { $0.authenticated } }

    /// Power-on or warm reset: back to the MF, no session. A removed card is put back.
    public func reset() {
        state.withLock { Self.powerOn(&$0) }
    }

    private static func powerOn(_ state: inout State) {
        let faults = state.faults
        let statistics = state.statistics
        let tagLossDone = state.tagLossDone
        let wrongKeys = state.wrongKeys
        state = State()
        state.faults = faults
        state.statistics = statistics
        state.tagLossDone = tagLossDone
        // Remembered across resets, as a chip's counter of wrong keys is (`slowAfterWrongKey`).
        state.wrongKeys = wrongKeys
    }

    /// How late the answer just given is to be handed over (`slowAfterWrongKey`), taken once:
    /// the transports add it to their answer delay.
    public func takeAnswerPenalty() -> Duration {
        state.withLock { state in
            defer { state.answerPenalty = .zero }
            return state.answerPenalty
        }
    }

    /// Puts a removed card back into the field (it starts unauthenticated).
    public func reinsert() {
        reset()
        state.withLock { $0.faults.removeAfterAPDUs = nil }
    }

    /// Processes one command APDU. Latency faults are the transport's job (it knows whether it
    /// may block its thread): see `faults.latencyPerAPDU`.
    public func process(_ command: [UInt8]) -> Output {
        state.withLock { state -> Output in
            if state.removed { return .removed }
            if let limit = state.faults.removeAfterAPDUs, state.apdusSinceFaults >= limit {
                state.removed = true
                state.sm = nil
                state.authenticated = false
                return .removed
            }
            if let loss = quirks.tagLoss, !quirks.tagLossAfterAnswer, !state.tagLossDone, state.apdusSincePowerOn >= loss.afterAPDUs {
                // The document moved on the reader: gone, and back in a moment.
                state.tagLossDone = true
                state.removed = true
                state.returnsAt = ContinuousClock.now + .milliseconds(loss.returnAfterMilliseconds)
                return .removed
            }
            state.apdusSinceFaults += 1
            state.apdusSincePowerOn += 1
            state.statistics.apdus += 1
            if let stall = hostileStall(&state) { return stall }
            if passport.hostile.contains(.endlessGetResponse), state.authenticated {
                // More data, forever: GET RESPONSE hands one byte and announces another.
                if command.count >= 2, command[1] == 0xC0 { return .response([0x00, 0x61, 0x01]) }
                _ = handle(command, &state)
                return .response([0x61, 0x01])
            }
            if quirks.getResponseAnswers, let fetched = getResponse(command, &state) { return .response(fetched) }
            let wrongKeysBefore = state.wrongKeys
            var answer = handle(command, &state)
            if let slow = quirks.slowAfterWrongKey, wrongKeysBefore > 0, command.count >= 4, !state.authenticated,
               command[1] == 0x84 || (command[1] == 0x22 && command[2] == 0xC1) {
                // The first command of another attempt after wrong keys: held back, longer each time.
                state.answerPenalty = slow * (1 << min(3, wrongKeysBefore - 1))
                state.statistics.slowedAnswers += 1
            }
            if quirks.getResponseAnswers, answer.count > 2 {
                state.pendingAnswer = answer
                answer = announce(state)
            }
            if let loss = quirks.tagLoss, quirks.tagLossAfterAnswer, !state.tagLossDone, state.apdusSincePowerOn >= loss.afterAPDUs {
                // Answered, then gone: the link closes before the next command.
                state.tagLossDone = true
                state.removed = true
                state.returnsAt = ContinuousClock.now + .milliseconds(loss.returnAfterMilliseconds)
            }
            if let at = quirks.brokenAnswerAt, !state.brokenAnswerDone, state.apdusSincePowerOn >= at {
                // The chip did its work; one byte of the answer reaches the reader.
                state.brokenAnswerDone = true
                return .response(Array(answer.prefix(1)))
            }
            return .response(answer)
        }
    }

    /// `.stall` when the hostile chip stops answering now: at its stall APDU, or at the first
    /// command after access control.
    private func hostileStall(_ state: inout State) -> Output? {
        let hostile = passport.hostile
        if state.stalled { return .stall }
        if let at = hostile.stallAtAPDU, state.apdusSincePowerOn >= at { state.stalled = true }
        if hostile.contains(.stallAfterAccess), state.authenticated, state.sm != nil { state.stalled = true }
        return state.stalled ? .stall : nil
    }

    // MARK: Dispatch

    /// `getResponseAnswers`: GET RESPONSE (00 C0 00 00 Le) hands over the next part of the held
    /// answer; `nil` for any other command (which drops what was held).
    private func getResponse(_ raw: [UInt8], _ state: inout State) -> [UInt8]? {
        guard raw.count >= 4, raw[1] == 0xC0, raw[0] & 0x80 == 0 else {
            state.pendingAnswer = []
            return nil
        }
        guard !state.pendingAnswer.isEmpty else { return StatusWord.conditionsOfUseNotSatisfied.bytes }
        let ne = raw.count == 5 ? Int(raw[4]) : 0
        return nextChunk(ne: ne, &state)
    }

    /// The held answer announced: 61xx with how many bytes follow (xx = 00 for 256 or more).
    private func announce(_ state: State) -> [UInt8] {
        [0x61, UInt8(min(state.pendingAnswer.count - 2, 256) & 0xFF)]
    }

    /// Up to `ne` (0 = 256) bytes of the held answer's data; 61xx while more remain, the answer's
    /// own status word with the last part.
    private func nextChunk(ne: Int, _ state: inout State) -> [UInt8] {
        let data = Array(state.pendingAnswer.dropLast(2))
        let status = Array(state.pendingAnswer.suffix(2))
        let take = min(ne == 0 ? 256 : ne, data.count)
        let rest = Array(data.dropFirst(take))
        if rest.isEmpty {
            state.pendingAnswer = []
            return Array(data.prefix(take)) + status
        }
        state.pendingAnswer = rest + status
        return Array(data.prefix(take)) + announce(state)
    }

    private func handle(_ raw: [UInt8], _ state: inout State) -> [UInt8] {
        guard let outer = try? CommandAPDU(bytes: raw) else { return StatusWord.wrongLength.bytes }
        // Proprietary and reader-level classes (b8 set, e.g. PC/SC's FF CA) are not this chip's:
        // refused in plain as real chips do, the secure-messaging session untouched.
        if outer.cla & 0x80 != 0 { return StatusWord.claNotSupported.bytes }
        if outer.isExtended && !passport.extendedLength {
            dropSession(&state)
            return StatusWord.wrongLength.bytes
        }
        let protected = outer.cla & 0x0C == 0x0C
        var command = outer
        if protected {
            guard var sm = state.sm else {
                // Secure messaging without a session.
                return StatusWord.smDataObjectsIncorrect.bytes
            }
            do {
                command = try sm.unprotectCommand(outer)
                state.sm = sm
            } catch {
                state.statistics.secureMessagingFailures += 1
                dropSession(&state)
                return (error.statusWord ?? .smDataObjectsIncorrect).bytes
            }
        } else if state.sm != nil {
            // A plain command ends the secure-messaging session, as on real chips.
            dropSession(&state)
        }
        let response: ResponseAPDU
        if let index = state.faults.statusOverrides.firstIndex(where: { $0.matches(command) }) {
            let override = state.faults.statusOverrides[index]
            if override.once { state.faults.statusOverrides.remove(at: index) }
            if override.plain {
                dropSession(&state)
                return override.statusWord.bytes
            }
            response = ResponseAPDU(statusWord: override.statusWord)
        } else {
            response = execute(command, &state)
        }
        if let bent = state.hostileAnswer {
            state.hostileAnswer = nil
            switch bent {
            case .bare where protected:
                // The counter moves as for a protected answer; nothing protects this one.
                state.sm?.countUnprotectedAnswer()
                return response.statusWord.bytes
            case .withoutMAC where protected:
                guard var sm = state.sm, var answer = try? sm.protectResponseWithoutStatus(response) else { break }
                state.sm = sm
                answer.data.removeLast(min(answer.data.count, 10))  // DO'8E' 08 and its eight bytes
                return answer.bytes
            default:
                break
            }
        }
        // Only answers to protected commands are protected (BAC's own answer goes out plain).
        guard protected, state.sm != nil else {
            if !command.isExtended, response.data.count > 256 { return StatusWord.wrongLength.bytes }
            return response.bytes
        }
        if quirks.noStatusObject, response.statusWord != .success, response.data.isEmpty {
            // As vsmartcard's ePass: an error answer carries no MAC, and the counter does not move.
            return response.statusWord.bytes
        }
        if quirks.plainErrors, response.data.isEmpty, response.statusWord != .success {
            // An error answered without secure messaging, as some chips do.
            if quirks.plainErrorsCountInSSC { state.sm?.countUnprotectedAnswer() }
            if quirks.plainErrorsEndSession { dropSession(&state) }
            return response.statusWord.bytes
        }
        let wrapped = wrap(response, for: command, &state)
        if let next = state.pendingSession {
            state.pendingSession = nil
            state.sm = next
        }
        return wrapped
    }

    /// Protects `response` in the active session; enforces the short-APDU response size.
    private func wrap(_ response: ResponseAPDU, for command: CommandAPDU, _ state: inout State) -> [UInt8] {
        guard var sm = state.sm else { return response.bytes }
        do {
            let before = sm
            let oddINS = command.ins & 1 == 1 && !response.data.isEmpty
            var protected = quirks.noStatusObject ? try sm.protectResponseWithoutStatus(response, oddINS: oddINS)
                                                  : try sm.protectResponse(response, oddINS: oddINS)
            let limit = command.isExtended ? 65_536 : 256
            if protected.data.count > limit {
                // The protected answer would not fit the response. Ne is a maximum (ISO 7816-4
                // §5.1): a READ BINARY gets as many bytes as fit — 223 under AES, 231 under 3DES
                // for a short APDU — with 9000, whether it asked with Le = 00 or with an explicit
                // Le (E0–FF). Refused with 6700 only by the `wrongLengthAboveLimit` quirk, and for
                // any other command.
                sm = before
                let isRead = (command.ins == 0xB0 || command.ins == 0xB1)
                    && (response.statusWord == .success || response.statusWord == .endOfFileReached)
                let answerWhatFits = isRead && !(quirks.wrongLengthAboveLimit && command.ne != limit)
                let shorter = answerWhatFits ? shortened(response, oddINS: command.ins == 0xB1, limit: limit, blockSize: sm.blockSize)
                                             : ResponseAPDU(statusWord: .wrongLength)
                protected = quirks.noStatusObject && answerWhatFits ? try sm.protectResponseWithoutStatus(shorter, oddINS: oddINS)
                                                                    : try sm.protectResponse(shorter, oddINS: oddINS)
            }
            if state.faults.corruptNextResponseMAC, protected.data.count >= 8 {
                state.faults.corruptNextResponseMAC = false
                protected.data[protected.data.count - 1] ^= 0x5A
            }
            state.sm = sm
            return protected.bytes
        } catch {
            dropSession(&state)
            return StatusWord.noPreciseDiagnosis.bytes
        }
    }

    /// `response` (a READ BINARY answer) cut to the most data whose protected answer fits `limit`
    /// bytes: DO'87' (or DO'85' for the odd INS, whose plain data is a DO'53'), DO'99', DO'8E'.
    /// The cut answer does not reach the end of the file: 9000.
    private func shortened(_ response: ResponseAPDU, oddINS: Bool, limit: Int, blockSize: Int) -> ResponseAPDU {
        func lengthOfLength(_ length: Int) -> Int { length < 0x80 ? 1 : length < 0x100 ? 2 : length < 0x10000 ? 3 : 4 }
        func protectedSize(_ plain: Int) -> Int {
            let cryptogram = (plain / blockSize + 1) * blockSize + (oddINS ? 0 : 1)
            return 1 + lengthOfLength(cryptogram) + cryptogram + 4 + 10
        }
        func plainSize(_ content: Int) -> Int { oddINS ? 1 + lengthOfLength(content) + content : content }
        var content = oddINS ? ((try? BERTLV.parseSingle(response.data).value) ?? []) : response.data
        var length = content.count
        while length > 0, protectedSize(plainSize(length)) > limit { length -= 1 }
        content = Array(content.prefix(length))
        return ResponseAPDU(data: oddINS ? BERTLV.encode(tag: 0x53, value: content) : content, statusWord: .success)
    }

    func dropSession(_ state: inout State) {
        state.chain = nil
        state.sm = nil
        state.pendingSession = nil
        state.chipAuthenticationSelected = false
        state.authenticated = false
        state.challenge = nil
        state.terminal = ChipTerminalAuthentication.State()
    }

    /// The most data a command chain may gather (an RSA-4096 CVCA certificate is ~1.1 KB).
    static let maxChainedData = 4_096

    private func execute(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard command.cla & 0xE0 == 0x00 else { return ResponseAPDU(statusWord: .claNotSupported) }
        var command = command
        // Command chaining (ISO/IEC 7816-4 §5.3.3) for a command whose data does not fit one short
        // APDU (PSO:Verify Certificate, EXTERNAL AUTHENTICATE with a long signature): each link is
        // answered 9000 and the last one carries the whole. GENERAL AUTHENTICATE's chains are
        // PACE's steps, each a command of its own.
        if command.ins != 0x86 {
            if let chain = state.chain, chain.ins != command.ins {
                state.chain = nil
                return ResponseAPDU(statusWord: StatusWord(rawValue: 0x6883))
            }
            let data = (state.chain?.data ?? []) + command.data
            guard data.count <= Self.maxChainedData else {
                state.chain = nil
                return ResponseAPDU(statusWord: .wrongLength)
            }
            if command.cla & 0x10 != 0 {
                state.chain = (command.ins, data)
                return ResponseAPDU(statusWord: .success)
            }
            state.chain = nil
            command.data = data
        }
        switch command.ins {
        case 0xA4: return select(command, &state)
        case 0xB0, 0xB1: return readBinary(command, &state)
        case 0x84: return getChallenge(command, &state)
        case 0x82: return state.authenticated && state.sm != nil ? terminalExternalAuthenticate(command, &state) : externalAuthenticate(command, &state)
        case 0x2A: return verifyCertificate(command, &state)
        case 0x22: return mseSetAT(command, &state)
        case 0x88: return internalAuthenticate(command, &state)
        case 0x86: return generalAuthenticate(command, &state)
        default: return ResponseAPDU(statusWord: .insNotSupported)
        }
    }
}

extension StatusWord {
    var bytes: [UInt8] { [sw1, sw2] }
}
