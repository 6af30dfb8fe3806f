import Mdoc
import SmartCardCore

/// The APDU channel to a holder (a phone, a card applet), every exchange inside the read's
/// deadline and counted: a holder that stalls, or answers forever, ends in a typed error.
final class HolderChannel {
    let connection: any CardConnection
    let deadline: ContinuousClock.Instant
    let extendedLength: Bool
    let maximumExchanges: Int
    private(set) var exchanges = 0

    init(connection: any CardConnection, deadline: ContinuousClock.Instant, extendedLength: Bool, maximumExchanges: Int) {
        self.connection = connection
        self.deadline = deadline
        self.extendedLength = extendedLength
        self.maximumExchanges = maximumExchanges
    }

    func send(_ command: CommandAPDU, _ what: String) async throws(MdocError) -> ResponseAPDU {
        guard exchanges < maximumExchanges else {
            throw MdocError(.limitExceeded, "more than \(maximumExchanges) APDUs in one read (at \(what))")
        }
        guard ContinuousClock.now < deadline else { throw MdocError(.timeout, "the read's deadline passed before \(what)") }
        exchanges += 1
        let raw: [UInt8]
        do { raw = try command.encoded() } catch { throw MdocError(.transport, "\(what): \(error)") }
        let connection = self.connection
        do {
            let answer = try await withTimeLimit(until: deadline) { try await connection.transmit(raw: raw) }
            return try ResponseAPDU(bytes: answer)
        } catch let error as SmartCardError {
            if error.code == .timeout { throw MdocError(.timeout, "no answer to \(what) before the read's deadline") }
            if error.code == .cancelled { throw MdocError(.timeout, "\(what) was cancelled") }
            throw MdocError(.transport, "\(what): \(error.reason) [\(error.code)]")
        } catch {
            throw MdocError(.transport, "\(what): \(error)")
        }
    }

    /// Sends and requires 90 00.
    func expectSuccess(_ command: CommandAPDU, _ what: String) async throws(MdocError) -> [UInt8] {
        let response = try await send(command, what)
        guard response.statusWord.isSuccess else { throw MdocError(.transport, "\(what): the holder answered \(response.statusWord)") }
        return response.data
    }

    /// Waits `duration` (TNEP's waiting time), inside the deadline.
    func pause(_ duration: Duration) async throws(MdocError) {
        let until = min(ContinuousClock.now + duration, deadline)
        do { try await Task.sleep(until: until, clock: .continuous) } catch { throw MdocError(.timeout, "the read was cancelled") }
        guard ContinuousClock.now < deadline else { throw MdocError(.timeout, "the holder was not ready before the read's deadline") }
    }
}
