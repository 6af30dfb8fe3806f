import SmartCardCore

/// The reader's link to one chip: plain or secure-messaging APDUs, counters, and the rules for
/// turning transport failures into `MRTDError`s. Not shared across tasks.
final class SecureChannel {
    /// Replaced when the card left the field and came back (`PassportReader.recoverFromTagLoss`).
    var connection: any CardConnection
    var session: SecureMessaging? {
        // An unprotected answer of a session that ended says nothing about the next one.
        didSet { if session == nil { conventionPending = false } }
    }
    private(set) var apduCount = 0
    private(set) var bytesSent = 0
    private(set) var bytesReceived = 0
    /// Time spent waiting for the card (transmit calls), to separate it from our own work.
    private(set) var cardTime: Duration = .zero
    /// What we know of the chip's APDU limits.
    var extendedLength = false
    /// Whether this chip counts an unprotected answer in its send sequence counter (`nil`: not
    /// learnt yet; tried as `true` first, as JMRTD and ICAO's "every APDU" reading do). Learnt once,
    /// kept for the rest of the read (new sessions of the same chip behave the same).
    var unprotectedAnswersCountInSSC: Bool?
    /// An unprotected answer came while the convention was not known: the next protected
    /// exchange tells which one the chip follows.
    private var conventionPending = false
    /// Error answers the chip gave without secure messaging while it was on.
    private(set) var unprotectedAnswers = 0
    /// Chip Authentication installed new keys that no protected answer has confirmed yet: a chip
    /// that answered MSE / GENERAL AUTHENTICATE without holding the key shows only here.
    var chipAuthenticationPending = false
    /// The first protected exchange after Chip Authentication failed (a MAC the chip could not
    /// check, or an answer we could not): the chip does not hold the key it claims.
    var chipAuthenticationRefuted = false
    /// Where every exchange is recorded (`ReadOptions.trace`), and what the reader is doing.
    let trace: APDUTrace?
    var traceContext = APDUTrace.TraceContext()
    /// How long the last exchange took in the card.
    private(set) var lastExchangeDuration: Duration = .zero

    init(connection: any CardConnection, trace: APDUTrace? = nil) {
        self.connection = connection
        self.trace = trace
    }

    /// Sends raw bytes, mapping smart-card failures to MRTD errors. `command` is what the bytes
    /// carry (unprotected), for the trace; a failed exchange is traced here.
    func exchange(_ bytes: [UInt8], command: CommandAPDU, protected: Bool) async throws(MRTDError) -> [UInt8] {
        do {
            return try await transmit(bytes)
        } catch {
            trace?.record(command: command, wire: bytes, response: nil, protected: protected, status: nil,
                          duration: lastExchangeDuration, context: traceContext, error: "\(error.code): \(error.reason)")
            throw error
        }
    }

    private func transmit(_ bytes: [UInt8]) async throws(MRTDError) -> [UInt8] {
        if Task.isCancelled { throw MRTDError(.cancelled, "reading was cancelled") }
        apduCount += 1
        bytesSent += bytes.count
        let started = ContinuousClock.now
        defer {
            lastExchangeDuration = ContinuousClock.now - started
            cardTime += lastExchangeDuration
        }
        do {
            let response = try await connection.transmit(raw: bytes)
            bytesReceived += response.count
            if response.isEmpty {
                // No answer at all: the card left the field mid-command. Some drivers (vpcd) say so
                // this way, and pcscd may not notice before the card is back (it polls), so
                // presence cannot tell; the way forward is the same (a new connection, the chip
                // opened again).
                throw MRTDError(.cardRemoved, "the card stopped answering during reading (it left the reader)")
            }
            if response.count < 2 {
                if await !connection.isCardPresent() { throw MRTDError(.cardRemoved, "the card was removed during reading") }
                throw MRTDError(.communicationFailure, "the chip returned \(response.count) byte, not a response")
            }
            return response
        } catch let error as MRTDError {
            throw error
        } catch let error as SmartCardError {
            // A transport failure with the card gone is the card leaving the field (libnfc says
            // "timeout" or "RF transmission error"; some PC/SC drivers say "not transacted").
            if error.code != .cancelled, error.code != .cardRemoved, error.code != .noCard, !Task.isCancelled,
               await !connection.isCardPresent() {
                throw MRTDError(.cardRemoved, "the card was removed during reading")
            }
            throw Self.map(error)
        } catch {
            throw MRTDError(.communicationFailure, "the reader failed: \(error)")
        }
    }

    static func map(_ error: SmartCardError) -> MRTDError {
        switch error.code {
        case .cardRemoved, .noCard: return MRTDError(.cardRemoved, "the card was removed during reading")
        case .cancelled: return MRTDError(.cancelled, "reading was cancelled")
        case .cardUnresponsive: return MRTDError(.communicationFailure, "the chip stopped responding")
        default: return MRTDError(.communicationFailure, error.reason)
        }
    }

    /// A plain command (before access control, or on the MF).
    func plain(_ command: CommandAPDU) async throws(MRTDError) -> ResponseAPDU {
        let encoded: [UInt8]
        do { encoded = try command.encoded() } catch { throw MRTDError(.communicationFailure, error.reason) }
        let raw = try await exchange(encoded, command: command, protected: false)
        let response: ResponseAPDU
        do {
            response = try ResponseAPDU(bytes: raw)
        } catch {
            trace?.record(command: command, wire: encoded, response: raw, protected: false, status: nil,
                          duration: lastExchangeDuration, context: traceContext, error: "malformed answer")
            throw MRTDError(.communicationFailure, "the chip's answer is malformed: \(error.reason)")
        }
        trace?.record(command: command, wire: encoded, response: raw, protected: false, status: response.statusWord,
                      duration: lastExchangeDuration, context: traceContext)
        return response
    }

    /// A command under secure messaging.
    ///
    /// An error status word the chip answers without secure messaging (6A82, 6982, 6700, 6282 …,
    /// as some chips do) is returned as that status, with no data; the session goes on, with the
    /// send sequence counter counted the way this chip counts such answers. A plain 9000 (data
    /// must be protected), 6987/6988 (the chip ended secure messaging) or a plain answer with data
    /// throw `.secureMessagingDropped`; a wrong MAC or malformed protection throws
    /// `.secureMessagingFailure`. In both cases the session is over.
    func secure(_ command: CommandAPDU) async throws(MRTDError) -> ResponseAPDU {
        guard var sm = session else { throw MRTDError(.secureMessagingFailure, "no secure-messaging session") }
        let protected = try sm.protect(command)
        let encoded: [UInt8]
        do { encoded = try protected.encoded() } catch { throw MRTDError(.communicationFailure, error.reason) }
        let raw = try await exchange(encoded, command: command, protected: true)
        func traced(_ status: StatusWord?, error: String? = nil) {
            trace?.record(command: command, wire: encoded, response: raw, protected: true, status: status,
                          duration: lastExchangeDuration, context: traceContext, error: error)
        }
        let response: ResponseAPDU
        do { response = try ResponseAPDU(bytes: raw) } catch {
            traced(nil, error: "malformed answer")
            session = nil
            refuteChipAuthentication()
            throw MRTDError(.secureMessagingFailure, "the chip's answer is malformed")
        }
        if response.data.isEmpty, Self.isPlainErrorStatus(response.statusWord) {
            if conventionPending {
                // The chip checked this command's MAC before it answered: our SSC was its SSC.
                conventionPending = false
                unprotectedAnswersCountInSSC = true
            }
            // The chip answers an error without secure messaging: taken as that status.
            if unprotectedAnswersCountInSSC != false { sm.countUnprotectedAnswer() }
            if unprotectedAnswersCountInSSC == nil { conventionPending = true }
            unprotectedAnswers += 1
            session = sm
            traced(response.statusWord)
            return ResponseAPDU(data: [], statusWord: response.statusWord)
        }
        do {
            let plain = try sm.unprotect(response)
            traced(plain.statusWord)
            session = sm
            chipAuthenticationPending = false
            if conventionPending {
                conventionPending = false
                unprotectedAnswersCountInSSC = true
            }
            return plain
        } catch {
            // The SSC has moved on, but so has the chip's: either way this session is over.
            traced(nil, error: "\(error.code): \(error.reason)")
            if conventionPending, error.code == .secureMessagingDropped {
                // The first protected exchange after an unprotected answer failed: this chip does
                // not count such answers. The caller opens a new session and goes on.
                unprotectedAnswersCountInSSC = false
            }
            session = nil
            refuteChipAuthentication()
            throw error
        }
    }

    private func refuteChipAuthentication() {
        if chipAuthenticationPending {
            chipAuthenticationPending = false
            chipAuthenticationRefuted = true
        }
    }

    /// Status words a chip may send without secure messaging to report an error: everything but
    /// success, "more data" (61xx) and the secure-messaging errors themselves, which end the session.
    static func isPlainErrorStatus(_ status: StatusWord) -> Bool {
        status != .success && status.sw1 != 0x61 && status != .smDataObjectsMissing && status != .smDataObjectsIncorrect
    }

    /// Sends in whatever mode is active.
    func send(_ command: CommandAPDU) async throws(MRTDError) -> ResponseAPDU {
        session == nil ? try await plain(command) : try await secure(command)
    }
}
