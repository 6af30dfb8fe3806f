import SmartCard

/// The reader's link to one chip: plain or secure-messaging APDUs, counters, and the rules for
/// turning transport failures into `MRTDError`s. Not shared across tasks.
final class SecureChannel {
    let connection: any CardConnection
    var session: SecureMessaging?
    private(set) var apduCount = 0
    private(set) var bytesSent = 0
    private(set) var bytesReceived = 0
    /// Time spent waiting for the card (transmit calls), to separate it from our own work.
    private(set) var cardTime: Duration = .zero
    /// What we know of the chip's APDU limits.
    var extendedLength = false

    init(connection: any CardConnection) {
        self.connection = connection
    }

    /// Sends raw bytes, mapping smart-card failures to MRTD errors.
    func exchange(_ bytes: [UInt8]) async throws(MRTDError) -> [UInt8] {
        if Task.isCancelled { throw MRTDError(.cancelled, "reading was cancelled") }
        apduCount += 1
        bytesSent += bytes.count
        let started = ContinuousClock.now
        defer { cardTime += ContinuousClock.now - started }
        do {
            let response = try await connection.transmit(raw: bytes)
            bytesReceived += response.count
            if response.count < 2 {
                // Some drivers (vpcd) return an empty answer when the card leaves mid-command.
                if await !connection.isCardPresent() {
                    throw MRTDError(.cardRemoved, "the card was removed during reading")
                }
                throw MRTDError(.communicationFailure, "the chip returned \(response.count) bytes, not a response")
            }
            return response
        } catch let error as MRTDError {
            throw error
        } catch let error as SmartCardError {
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
        let raw = try await exchange(encoded)
        do {
            return try ResponseAPDU(bytes: raw)
        } catch {
            throw MRTDError(.communicationFailure, "the chip's answer is malformed: \(error.reason)")
        }
    }

    /// A command under secure messaging. Throws `.secureMessagingFailure` with the chip's status
    /// word when the chip answered in plain (it dropped the session) or the response MAC is wrong.
    func secure(_ command: CommandAPDU) async throws(MRTDError) -> ResponseAPDU {
        guard var sm = session else { throw MRTDError(.secureMessagingFailure, "no secure-messaging session") }
        let protected = try sm.protect(command)
        let encoded: [UInt8]
        do { encoded = try protected.encoded() } catch { throw MRTDError(.communicationFailure, error.reason) }
        let raw = try await exchange(encoded)
        let response: ResponseAPDU
        do { response = try ResponseAPDU(bytes: raw) } catch {
            session = nil
            throw MRTDError(.secureMessagingFailure, "the chip's answer is malformed")
        }
        do {
            let plain = try sm.unprotect(response)
            session = sm
            return plain
        } catch {
            // The SSC has moved on, but so has the chip's: either way this session is over.
            session = nil
            throw error
        }
    }

    /// Sends in whatever mode is active.
    func send(_ command: CommandAPDU) async throws(MRTDError) -> ResponseAPDU {
        session == nil ? try await plain(command) : try await secure(command)
    }
}
