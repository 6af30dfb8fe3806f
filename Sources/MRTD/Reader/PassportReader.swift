import Foundation
import SmartCardCore

/// Reads an eMRTD over an established card connection. The read is a list of steps run on one
/// `CardSession` (the only code that speaks APDUs), each a protocol type or a file step:
///
/// 1. access control — EF.CardAccess on the MF, then PACE (GM, IM, CAM; `PACEProtocol`) or BAC
///    (`BasicAccessControl`), the eMRTD application selected;
/// 2. security objects — EF.COM and EF.SOD, which say what the chip holds;
/// 3. chip authentication — PACE-CAM's proof, or Chip Authentication (`ChipAuthenticationProtocol`)
///    on the EF.CardSecurity or DG14 key;
/// 4. terminal authentication — with terminal credentials, before DG3/DG4 (Extended Access
///    Control: `TerminalAuthenticationProtocol`);
/// 5. data groups — those asked for, with as few APDUs as the chip allows;
/// 6. active authentication — INTERNAL AUTHENTICATE against DG15 (`ActiveAuthenticationProtocol`);
/// 7. verification — passive authentication and the consistency rules (`ReadVerification`).
///
/// Each step's outcome, APDUs and time are in `PassportReadResult.steps` and the trace.
///
/// Tag loss: given a `reconnect` closure, a card that leaves the field mid-read does not end the
/// read. The reader reports `waitingForCard` (reason `cardRemoved`), gets a new connection from
/// the closure (which waits for the card, within the caller's timeout), opens the chip again with
/// the same access control, repeats Chip Authentication when it had been done (the chip that came
/// back must hold the same key), and continues from the file and offset where it stopped
/// (`TagLossRecovery`). Without the closure, or when it gives up, the read fails with
/// `cardRemoved`: never a half-read document.
public final class PassportReader {
    public typealias ProgressHandler = @Sendable (ReadProgress) -> Void
    /// Gives a new connection to the card once it is back in the field; throws when it does not
    /// come back in time (`SmartCardError.timeout`) or the read is cancelled.
    public typealias Reconnect = @Sendable () async throws -> any CardConnection

    /// What a journey can show while the read waits for the document to come back.
    package static var cardRemovedMessage: String { TagLossRecovery.cardRemovedMessage }

    private let context: ReadContext

    /// - Parameters:
    ///   - reconnect: how to get the card back after it left the field (see the type's notes);
    ///     `nil` makes tag loss end the read with `cardRemoved`.
    public init(connection: any CardConnection, accessKey: AccessKey, options: ReadOptions = ReadOptions(),
                progress: ProgressHandler? = nil, reconnect: Reconnect? = nil) {
        context = ReadContext(connection: connection, key: accessKey, options: options, progress: progress, reconnect: reconnect)
    }

    /// The connection in use: the one given to `init`, or the one `reconnect` gave after tag loss.
    /// The caller disconnects it when the read is over.
    public var connection: any CardConnection { context.session.connection }

    /// APDUs exchanged so far (also after a read that failed).
    public var apduCount: Int { context.session.apduCount }

    /// Reads and verifies. Throws `accessDenied` for a wrong key, `cardRemoved`,
    /// `communicationFailure`, `secureMessagingFailure`, `cancelled` …; never returns a
    /// half-read file.
    public func read() async throws(MRTDError) -> PassportReadResult {
        let read = context
        let started = ContinuousClock.now
        read.session.budget.readTimeout = read.options.readTimeout
        read.session.budget.deadline = read.options.readTimeout.map { started + $0 }
        await read.session.adoptReaderCapabilities()
        read.report(.authenticating, percent: 2)
        try await read.step("access control") { () async throws(MRTDError) in try await read.openChip() }
        read.recovery.settle()
        read.recovery.accessEstablished = true
        read.report(.reading, percent: 10)
        try await read.step("security objects") { () async throws(MRTDError) in try await read.readSecurityObjects() }
        try await read.step("chip authentication") { () async throws(MRTDError) in try await read.authenticateChip() }
        if read.options.terminal != nil {
            try await read.step("terminal authentication") { () async throws(MRTDError) in try await read.authenticateTerminal() }
        }
        try await read.step("data groups") { () async throws(MRTDError) in try await read.readDataGroups() }
        let readingDone = ContinuousClock.now

        var result = read.assembleResult()
        read.report(.verifying, percent: 92)
        var active: ActiveAuthenticationProtocol.Result?
        try await read.step("active authentication") { () async throws(MRTDError) in
            active = try await read.authenticateActively(dg15: result.dg15, dg14: result.dg14)
        }
        if let active {
            result.activeAuthenticationPerformed = true
            result.active = active.outcome
            result.activeAuthenticationExchange = active.exchange
        }
        read.verify(&result)
        read.report(.verifying, percent: 100)
        let session = read.session
        result.steps = read.steps
        result.statistics = ReadStatistics(
            apdus: session.traffic.apdus, bytesSent: session.traffic.bytesSent, bytesReceived: session.traffic.bytesReceived,
            fileBytes: read.bytesOfFiles, cardTime: session.traffic.cardTime, totalTime: ContinuousClock.now - started, readingTime: readingDone - started,
            verificationTime: ContinuousClock.now - readingDone,
            readSize: session.limits.readLength(shortLimit: session.shortReadLimit(.secure)),
            extendedLength: session.limits.extendedLength == true, reauthentications: read.reauthentications,
            reconnections: read.recovery.reconnections)
        return result
    }
}
