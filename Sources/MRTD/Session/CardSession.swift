import CoreMetrics
import SmartCardCore

/// The reader's one link to one chip, and the only code that speaks APDUs to it: plain or under
/// secure messaging, with the chip's answers classified once (`CardStatus`) and every transport
/// fault turned into one of four outcomes:
///
/// | fault | outcome (`MRTDError.Code`) |
/// |---|---|
/// | no answer, or the card absent / back with a new power-on when looked at | `cardRemoved` (tag lost) |
/// | the transport failed and the card is still there, powered as it was | `communicationFailure` |
/// | the chip answered in plain where secure messaging was due, or refused ours (6987/6988) | `secureMessagingDropped` |
/// | a protected answer whose MAC or protection is wrong | `secureMessagingFailure` |
///
/// 61xx is answered with GET RESPONSE here, below secure messaging. What the session learns of
/// the chip (`ChipLimits`) is kept for the whole read, across new sessions and tag loss.
/// Not shared across tasks.
package final class CardSession {
    /// Replaced when the card left the field and came back (`TagLossRecovery`).
    package private(set) var connection: any CardConnection
    package var secureMessaging: SecureMessaging? {
        // An unprotected answer of a session that ended says nothing about the next one.
        didSet { if secureMessaging == nil { convention.pending = false } }
    }
    package var limits: ChipLimits
    /// What went over the link: APDUs, bytes, the card's time.
    package private(set) var traffic = Traffic()
    /// How this chip counts unprotected answers in its send sequence counter.
    var convention = SSCConvention()
    /// Whether the chip has proved the Chip Authentication keys it agreed to.
    package var chipAuthentication = ChipAuthenticationWatch()
    /// Where every exchange is recorded, and what the reader is doing (step, detail, file).
    package let trace: APDUTrace?
    package var traceContext = APDUTrace.TraceContext()
    /// The read's bounds: its deadline, and the READ BINARY budget of the file being read.
    package var budget = ReadBudget()

    /// What went over the link.
    package struct Traffic: Sendable {
        package var apdus = 0
        package var bytesSent = 0
        package var bytesReceived = 0
        /// Time spent waiting for the card (transmit calls), to tell it from our own work.
        package var cardTime: Duration = .zero
        var lastExchange: Duration = .zero
    }

    /// Whether this chip counts an unprotected answer in its send sequence counter.
    struct SSCConvention: Sendable {
        /// `nil`: not learnt yet; tried as `true` first, as JMRTD and ICAO's "every APDU" reading do.
        var countsUnprotectedAnswers: Bool?
        /// An unprotected answer came while the convention was unknown: the next protected
        /// exchange tells which one the chip follows.
        var pending = false
    }

    /// Chip Authentication's keys between MSE / GENERAL AUTHENTICATE and the first protected answer.
    package struct ChipAuthenticationWatch: Sendable {
        /// Keys no protected answer has confirmed yet: a chip that answered MSE / GENERAL
        /// AUTHENTICATE without holding the key shows only here.
        package var pending = false
        /// The first protected exchange after Chip Authentication failed: the chip does not hold
        /// the key it claimed.
        package internal(set) var refuted = false
    }

    /// The read's bounds.
    package struct ReadBudget: Sendable {
        /// When the read must be over (`ReadOptions.readTimeout` from its start): no exchange
        /// starts after it, and one in flight is abandoned when it comes (`nil`: no deadline).
        /// While the chip keeps sending file bytes at `FileProgress.minimumRate` or more, it is
        /// kept `FileProgress.window` ahead of now, up to `ceiling` (`extendIfProgressing`).
        package var deadline: ContinuousClock.Instant?
        /// The hard end no progress moves: `FileProgress.ceilingFactor` × `readTimeout` from the start.
        package var ceiling: ContinuousClock.Instant?
        /// What `deadline` was set from, for the message when it passes.
        package var readTimeout: Duration?
        /// READ BINARY commands sent for the file being read (`readFile`'s budget).
        var readCommandsInFile = 0
        /// File bytes received, and when (READ BINARY answers), for `extendIfProgressing`.
        var progress = FileProgress()
        /// When the read started: a read younger than `FileProgress.window` is judged over its age.
        private var started: ContinuousClock.Instant?

        /// Sets the deadline and the ceiling for a read that starts at `started`.
        package mutating func start(at started: ContinuousClock.Instant, readTimeout: Duration?) {
            self.started = started
            self.readTimeout = readTimeout
            deadline = readTimeout.map { started + $0 }
            ceiling = readTimeout.map { started + $0 * FileProgress.ceilingFactor }
        }

        /// Moves the deadline on to `window` from now while the chip has sent at least
        /// `minimumRate` file bytes a second over the last `window` (over the read's age when it is
        /// younger: a time limit under the window, whose access control took a part of it, is not
        /// judged as if the chip had had the whole window), never past the ceiling. A slow honest
        /// chip (a 100 KB face at 50–60 ms an APDU and 128-byte reads needs 55–66 s) goes on; a
        /// chip that stalls ends at the exchange bound, and one that drips a byte a second ends at
        /// `readTimeout` as before.
        mutating func extendIfProgressing(now: ContinuousClock.Instant) {
            guard let current = deadline, let ceiling, current < ceiling, current - now < FileProgress.window else { return }
            let span = started.map { min(FileProgress.window, max(FileProgress.shortestSpan, now - $0)) } ?? FileProgress.window
            let needed = Double(FileProgress.minimumRate) * (Double(span.components.seconds) + Double(span.components.attoseconds) * 1e-18)
            guard Double(progress.bytes(since: now - span)) >= needed else { return }
            deadline = min(ceiling, now + FileProgress.window)
        }
    }

    /// What counts as a read making progress.
    package struct FileProgress: Sendable {
        /// The span progress is judged over, and how far ahead a progressing read's deadline is kept.
        package static let window: Duration = .seconds(10)
        /// 256 bytes a second of file content: a 128-byte READ BINARY every half second.
        package static let minimumRate = 256
        /// The shortest span a rate is judged over (a read's first second proves nothing).
        static let shortestSpan: Duration = .seconds(2)
        /// The ceiling, in `readTimeout`s: 180 s for the default 60.
        package static let ceilingFactor = 3

        /// (when, bytes) of recent READ BINARY answers; older than a window dropped as it goes.
        private var marks: [(instant: ContinuousClock.Instant, bytes: Int)] = []

        mutating func record(_ bytes: Int, at instant: ContinuousClock.Instant) {
            guard bytes > 0 else { return }
            marks.append((instant, bytes))
            if let first = marks.first, instant - first.instant > FileProgress.window * 2 {
                marks.removeAll { instant - $0.instant > FileProgress.window }
            }
        }

        func bytes(since instant: ContinuousClock.Instant) -> Int {
            marks.reduce(0) { $1.instant >= instant ? $0 + $1.bytes : $0 }
        }
    }

    package var apduCount: Int { traffic.apdus }
    package var deadline: ContinuousClock.Instant? { budget.deadline }

    /// GET RESPONSEs that may follow one command (61xx chains, ISO 7816-4 §5.3.3).
    static let maxGetResponses = 260

    /// How long, at most, a card that stopped answering is watched before the fault is judged
    /// (pcscd notices a card leaving only at its next poll, every 400 ms).
    static let presenceSettling: Duration = .milliseconds(1_200)

    package init(connection: any CardConnection, trace: APDUTrace? = nil) {
        self.connection = connection
        self.trace = trace
        limits = ChipLimits(transportCarriesExtendedLength: connection.supportsExtendedLength)
    }

    /// Takes what the reader says of its own limits before any probing (no APDU).
    package func adoptReaderCapabilities() async {
        let capabilities = await connection.capabilities()
        if capabilities.extendedLength == false || capabilities.maxAPDUDataSize == 0
            || capabilities.maxCommandLength.map({ $0 < 262 }) == true {
            limits.transportCarriesExtendedLength = false
            limits.extendedLength = false
        }
    }

    /// A new connection after the card came back: no secure messaging on it yet.
    package func replace(connection: any CardConnection) {
        self.connection = connection
        secureMessaging = nil
        chipAuthentication.pending = false
    }

    // MARK: Sending

    /// How a command travels.
    package enum Protection: Sendable {
        case plain
        case secure
        /// Under secure messaging when a session is on, plain otherwise.
        case current
    }

    /// Sends `command` and returns the chip's answer. Throws only for faults (see the type's
    /// table), never for a status word: those come back classified in the answer.
    package func send(_ command: CommandAPDU, _ protection: Protection = .current) async throws(MRTDError) -> CardAnswer {
        let answer: CardAnswer
        switch protection {
        case .plain: answer = try await plain(command)
        case .secure: answer = try await secure(command)
        case .current: answer = secureMessaging == nil ? try await plain(command) : try await secure(command)
        }
        // File content received: what keeps a slow read going past its first deadline.
        if command.ins == 0xB0 || command.ins == 0xB1 { budget.progress.record(answer.data.count, at: ContinuousClock.now) }
        return answer
    }

    /// Sends a command that has an Le, resending it once with the exact length a 6Cxx names
    /// (READ BINARY learns lengths itself and does not come here).
    package func sendAdjustingLength(_ command: CommandAPDU, _ protection: Protection = .current) async throws(MRTDError) -> CardAnswer {
        let answer = try await send(command, protection)
        guard case .wrongLength(let exact?) = answer.status, command.ne != nil else { return answer }
        var again = command
        again.ne = exact
        return try await send(again, protection)
    }

    private func plain(_ command: CommandAPDU) async throws(MRTDError) -> CardAnswer {
        let encoded = try Self.encode(command)
        let raw = try await exchange(encoded, command: command, protected: false)
        let response: ResponseAPDU
        do {
            response = try ResponseAPDU(bytes: raw)
        } catch {
            record(command, encoded, raw, protected: false, status: nil, error: "malformed answer")
            throw MRTDError(.communicationFailure, "the chip's answer is malformed: \(error.reason)")
        }
        record(command, encoded, raw, protected: false, status: response.statusWord)
        return CardAnswer(data: response.data, statusWord: response.statusWord, protected: false)
    }

    /// A command under secure messaging. An error status the chip sends without protection (as
    /// many do) is returned as that status and the session goes on, the send sequence counter
    /// counted the way this chip counts such answers; see `SecureMessaging.unprotect` for what
    /// ends a session.
    private func secure(_ command: CommandAPDU) async throws(MRTDError) -> CardAnswer {
        guard var sm = secureMessaging else { throw MRTDError(.secureMessagingDropped, "no secure-messaging session") }
        let protected = try sm.protect(command)
        let encoded = try Self.encode(protected)
        let raw = try await exchange(encoded, command: command, protected: true)
        let response: ResponseAPDU
        do {
            response = try ResponseAPDU(bytes: raw)
        } catch {
            record(command, encoded, raw, protected: true, status: nil, error: "malformed answer")
            end(refuting: true)
            throw MRTDError(.secureMessagingFailure, "the chip's answer is malformed")
        }
        if response.data.isEmpty, Self.isPlainErrorStatus(response.statusWord) {
            if convention.pending {
                // The chip checked this command's MAC before it answered: our SSC was its SSC.
                convention.pending = false
                convention.countsUnprotectedAnswers = true
            }
            if convention.countsUnprotectedAnswers != false { sm.countUnprotectedAnswer() }
            if convention.countsUnprotectedAnswers == nil { convention.pending = true }
            secureMessaging = sm
            record(command, encoded, raw, protected: true, status: response.statusWord)
            return CardAnswer(data: [], statusWord: response.statusWord, protected: false)
        }
        do {
            let plain = try sm.unprotect(response)
            record(command, encoded, raw, protected: true, status: plain.statusWord)
            secureMessaging = sm
            chipAuthentication.pending = false
            if convention.pending {
                convention.pending = false
                convention.countsUnprotectedAnswers = true
            }
            return CardAnswer(data: plain.data, statusWord: plain.statusWord, protected: true)
        } catch where error.reason == SecureMessaging.missingMACReason && (command.ins == 0xB0 || command.ins == 0xB1)
                        && (response.statusWord == .endOfFileReached || response.statusWord == .wrongLength) {
            // A READ BINARY that ran past the end of the file, answered with data but no MAC (as
            // vsmartcard's ePass does): never content. The session is over; the reader opens a new
            // one and reads exact lengths from here on (`readFile`).
            record(command, encoded, raw, protected: true, status: nil, error: "\(error.code): \(error.reason)")
            end(refuting: true)
            throw MRTDError(.secureMessagingDropped, "the chip answered a READ BINARY past the end of the file without a MAC (\(response.statusWord.meaning))",
                            statusWord: response.statusWord)
        } catch {
            // The SSC has moved on, but so has the chip's: either way this session is over.
            record(command, encoded, raw, protected: true, status: nil, error: "\(error.code): \(error.reason)")
            if convention.pending, error.code == .secureMessagingDropped {
                // The first protected exchange after an unprotected answer failed: this chip does
                // not count such answers. The caller opens a new session and goes on.
                convention.countsUnprotectedAnswers = false
            }
            end(refuting: true)
            throw error
        }
    }

    /// The read's deadline has passed.
    package func deadlineError() -> MRTDError {
        guard let timeout = budget.readTimeout else {
            return MRTDError(.timeout, "the chip stopped answering: the read did not finish within its time limit")
        }
        if let deadline = budget.deadline, let ceiling = budget.ceiling, deadline >= ceiling {
            return MRTDError(.timeout, "the read did not finish within its ceiling (\((timeout * FileProgress.ceilingFactor).components.seconds) s: "
                             + "\(FileProgress.ceilingFactor) × the \(timeout.components.seconds) s time limit, which a read still receiving file data may run past)")
        }
        return MRTDError(.timeout, "the chip stopped answering: the read did not finish within its time limit (\(timeout.components.seconds) s, "
                         + "and the chip was not sending file data at \(FileProgress.minimumRate) bytes a second or more to go on past it)")
    }

    private func end(refuting: Bool) {
        secureMessaging = nil
        if refuting, chipAuthentication.pending {
            chipAuthentication.pending = false
            chipAuthentication.refuted = true
        }
    }

    /// Status words a chip may send without secure messaging to report an error: everything but
    /// success, "more data" and the secure-messaging errors themselves, which end the session.
    static func isPlainErrorStatus(_ status: StatusWord) -> Bool {
        switch CardStatus(status) {
        case .ok, .moreData, .secureMessagingRejected: return false
        default: return status.sw1 != 0x90
        }
    }

    static func encode(_ command: CommandAPDU) throws(MRTDError) -> [UInt8] {
        do { return try command.encoded() } catch { throw MRTDError(.communicationFailure, error.reason) }
    }

    // MARK: The wire

    /// Sends raw bytes and returns the whole answer: 61xx is followed with GET RESPONSE (ISO
    /// 7816-4 §5.3.3; below secure messaging, so a protected answer arrives whole). Transport
    /// faults are judged here (`judge`).
    private func exchange(_ bytes: [UInt8], command: CommandAPDU, protected: Bool) async throws(MRTDError) -> [UInt8] {
        do throws(MRTDError) {
            var response = try await transmit(bytes)
            var data: [UInt8] = []
            var rounds = 0
            while response.count >= 2, response[response.count - 2] == 0x61 {
                rounds += 1
                data += response.dropLast(2)
                // 64 KiB, the most one answer may carry, takes 257 GET RESPONSEs of 256 bytes.
                guard rounds <= Self.maxGetResponses, data.count <= CommandAPDU.maxExtendedNe else {
                    throw MRTDError(.unexpectedStatus, "the chip kept answering 61xx (more data) after \(rounds) GET RESPONSE commands and \(data.count) bytes",
                                    statusWord: StatusWord(sw1: 0x61, sw2: response[response.count - 1]))
                }
                let remaining = response[response.count - 1] == 0 ? 256 : Int(response[response.count - 1])
                response = try await transmit(try Self.encode(CommandAPDU(cla: command.cla & 0x03, ins: 0xC0, p1: 0, p2: 0, ne: remaining)))
            }
            return rounds == 0 ? response : data + response
        } catch {
            record(command, bytes, nil, protected: protected, status: nil, error: "\(error.code): \(error.reason)")
            throw error
        }
    }

    private func transmit(_ bytes: [UInt8]) async throws(MRTDError) -> [UInt8] {
        if Task.isCancelled { throw MRTDError(.cancelled, "reading was cancelled") }
        let started = ContinuousClock.now
        budget.extendIfProgressing(now: started)
        if let deadline, started >= deadline { throw deadlineError() }
        traffic.apdus += 1
        traffic.bytesSent += bytes.count
        defer {
            traffic.lastExchange = ContinuousClock.now - started
            traffic.cardTime += traffic.lastExchange
        }
        // Every exchange is bounded, and none outlives the read's deadline: one that does not
        // come back in time is abandoned (the back end lets go of the blocked call).
        let connection = self.connection
        let bound = connection.exchangeTimeLimit.map { started + $0 }
        let limit = [deadline, bound].compactMap { $0 }.min()
        let response: [UInt8]
        do {
            if let limit {
                response = try await withTimeLimit(until: limit) { try await connection.transmit(raw: bytes) }
            } else {
                response = try await connection.transmit(raw: bytes)
            }
        } catch let error as SmartCardError where error.code == .timeout && limit.map({ ContinuousClock.now >= $0 }) == true {
            if let deadline, let limit, limit >= deadline { throw deadlineError() }
            // The connection's own bound (CardConnection.exchangeTimeLimit, 10 s: ISO 14443's frame
            // waiting time tops out under 5 s; a chip asking for more time again and again has
            // stopped answering).
            let seconds = connection.exchangeTimeLimit?.components.seconds ?? 0
            throw MRTDError(.timeout, "the chip stopped answering: no answer to a command within \(seconds) s")
        } catch let error as SmartCardError where error.code == .stalled {
            throw MRTDError(.timeout, error.reason)
        } catch let error as SmartCardError {
            throw await judge(error)
        } catch {
            if error is CancellationError || Task.isCancelled { throw MRTDError(.cancelled, "reading was cancelled") }
            throw MRTDError(.communicationFailure, "the reader failed: \(error)")
        }
        traffic.bytesReceived += response.count
        if response.isEmpty {
            // No answer at all: the card left the field mid-command (vpcd says so this way, and
            // pcscd may not notice before the card is back).
            throw MRTDError(.cardRemoved, "the card stopped answering during reading (it left the reader)")
        }
        guard response.count >= 2 else {
            throw await judge(SmartCardError(.invalidResponse, "the chip returned \(response.count) byte, not a response"))
        }
        return response
    }

    /// A transport fault, judged by looking at the card: gone, or back with a new power-on, is
    /// the card leaving the field (tag loss); still there as it was is a failure of the link.
    /// Real readers report a lost tag as a communication error too (SCARD_E_COMM_ERROR,
    /// SCARD_F_COMM_ERROR, SCARD_E_NOT_TRANSACTED on ACR122U; libnfc's "RF transmission error"),
    /// not only as SCARD_W_REMOVED_CARD, so every fault is looked at before it is called fatal.
    /// The card is watched for `presenceSettling` before it is believed still there: a reader
    /// that polls notices a departed card late.
    private func judge(_ error: SmartCardError) async -> MRTDError {
        switch error.code {
        case .cancelled: return MRTDError(.cancelled, "reading was cancelled")
        case .cardRemoved, .noCard: return MRTDError(.cardRemoved, "the card was removed during reading")
        default: break
        }
        if Task.isCancelled { return MRTDError(.cancelled, "reading was cancelled") }
        let deadline = ContinuousClock.now + Self.presenceSettling
        while true {
            switch await connection.presence() {
            case .absent: return MRTDError(.cardRemoved, "the card was removed during reading (\(error.reason))")
            case .replaced: return MRTDError(.cardRemoved, "the card left the reader and came back during reading (\(error.reason))")
            case .present: break
            }
            guard ContinuousClock.now < deadline else { break }
            do {
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                return MRTDError(.cancelled, "reading was cancelled")
            }
        }
        if error.code == .cardUnresponsive { return MRTDError(.communicationFailure, "the chip stopped responding") }
        return MRTDError(.communicationFailure, "\(error.reason) (the card is still on the reader)")
    }

    private func record(_ command: CommandAPDU, _ wire: [UInt8], _ response: [UInt8]?, protected: Bool, status: StatusWord?,
                        error: String? = nil) {
        trace?.record(command: command, wire: wire, response: response, protected: protected, status: status,
                      duration: traffic.lastExchange, context: traceContext, error: error)
        // Every status word the chip answered, for the host's metrics (a no-op unless a process
        // bootstrapped a metrics backend, as `gbgbridge serve` does).
        if let status {
            Counter(label: "gbgbridge_card_status_words_total", dimensions: [("sw", Self.statusWordLabel(status))]).increment()
        }
    }

    /// A status word as the metrics label it: those the reader acts on by name, the families it
    /// acts on by their first byte (`61XX`, `63XX`, `6CXX`), everything else `other` — a card
    /// chooses its status words, and must not be able to add a series per value.
    static func statusWordLabel(_ status: StatusWord) -> String {
        switch status.sw1 {
        case 0x61, 0x63, 0x6C: return hex([status.sw1]) + "XX"
        default:
            let known: Set<UInt16> = [0x9000, 0x6282, 0x6982, 0x6985, 0x6A82, 0x6700, 0x6B00, 0x6A86, 0x6986, 0x6D00, 0x6E00, 0x6A81,
                                      0x6A80, 0x6A87, 0x6A88, 0x6987, 0x6988, 0x6882, 0x6883, 0x6F00, 0x6400, 0x6581]
            return known.contains(UInt16(status.sw1) << 8 | UInt16(status.sw2)) ? hex([status.sw1, status.sw2]) : "other"
        }
    }
}
