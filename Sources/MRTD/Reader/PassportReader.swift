#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SmartCardCore

/// Reads an eMRTD over an established card connection. The read is the list of steps in
/// `PassportReader.steps`, run in order on one `CardSession` (the only code that speaks APDUs),
/// each a type that says what it needs and returns what it achieved (`ReadStep`):
///
/// 1. card access — EF.CardAccess on the MF: the PACE offers;
/// 2. directory — EF.DIR on the MF (the applications of an LDS2 chip), on chips that offer PACE;
/// 3. access control — PACE (GM, IM, CAM; `PACEProtocol`) or BAC (`BasicAccessControl`), the
///    eMRTD application selected;
/// 4. security objects — EF.COM and EF.SOD, which say what the chip holds;
/// 5. access control again — only for a chip opened with BAC that reads no short EF identifiers:
///    its EF.CardAccess is looked for by file identifier, and PACE used when it offers it;
/// 6. chip authentication — PACE-CAM's proof, or Chip Authentication (`ChipAuthenticationProtocol`)
///    on the EF.CardSecurity or DG14 key;
/// 7. terminal authentication — with terminal credentials, before DG3/DG4 (Extended Access
///    Control: `TerminalAuthenticationProtocol`);
/// 8. data groups — those asked for, with as few APDUs as the chip allows;
/// 9. active authentication — INTERNAL AUTHENTICATE against DG15 (`ActiveAuthenticationProtocol`);
/// 10. verification — passive authentication and the consistency rules (`ReadVerification`).
///
/// Each step's outcome, APDUs and time are in `PassportReadResult.steps` and the trace. Progress
/// is derived from the list: each step plans the bytes it expects, files by their size.
///
/// Tag loss: given a `reconnect` closure, a card that leaves the field mid-read does not end the
/// read. The reader reports `waitingForCard` (reason `cardRemoved`), gets a new connection from
/// the closure (which waits for the card, within the caller's timeout), runs the session steps
/// that were established again (the same access control; Chip Authentication with the same key,
/// which the chip that came back must prove; Terminal Authentication), and continues from the file
/// and offset where it stopped (`TagLossRecovery`). Without the closure, or when it gives up, the
/// read fails with `cardRemoved`: never a half-read document.
public final class PassportReader {
    public typealias ProgressHandler = @Sendable (ReadProgress) -> Void
    /// Gives a new connection to the card once it is back in the field; throws when it does not
    /// come back in time (`SmartCardError.timeout`) or the read is cancelled.
    public typealias Reconnect = @Sendable () async throws -> any CardConnection

    /// The read, step by step. A new step is a `ReadStep` type and a line here.
    static let steps: [any ReadStep] = [
        CardAccessStep(),
        DirectoryStep(),
        AccessControlStep(),
        SecurityObjectsStep(),
        AccessControlStep(lookingAgainForPACE: true),
        ChipAuthenticationStep(),
        TerminalAuthenticationStep(),
        DataGroupsStep(),
        ActiveAuthenticationStep(),
        VerificationStep(),
    ]

    /// The names the steps are recorded under (metrics label them by these).
    package static var stepNames: [String] {
        var names: [String] = []
        for step in steps where !names.contains(step.name) { names.append(step.name) }
        return names
    }

    /// What a journey can show while the read waits for the document to come back.
    package static var cardRemovedMessage: String { TagLossRecovery.cardRemovedMessage }

    private let environment: ReadEnvironment
    private let recovery: TagLossRecovery

    /// - Parameters:
    ///   - connection: the card, connected (PC/SC, libnfc or an emulated chip); the caller
    ///     disconnects it when the read is over (see `connection`, which may be a newer one).
    ///   - accessKey: the MRZ, its three fields or the CAN, as printed on the document.
    ///   - options: the data groups, the checks to run, the trust store, the time limit.
    ///   - progress: called as the read goes, from the read's own task; keep it short.
    ///   - reconnect: how to get the card back after it left the field (see the type's notes);
    ///     `nil` makes tag loss end the read with `cardRemoved`.
    public init(connection: any CardConnection, accessKey: AccessKey, options: ReadOptions = ReadOptions(),
                progress: ProgressHandler? = nil, reconnect: Reconnect? = nil) {
        let session = CardSession(connection: connection, trace: options.trace)
        environment = ReadEnvironment(session: session, key: accessKey, options: options, files: FileShelf(), ledger: StepLedger(),
                                      meter: ProgressMeter(session: session, handler: progress))
        recovery = TagLossRecovery(environment: environment, reconnect: reconnect)
    }

    /// The connection in use: the one given to `init`, or the one `reconnect` gave after tag loss.
    /// The caller disconnects it when the read is over.
    public var connection: any CardConnection { environment.session.connection }

    /// APDUs exchanged so far (also after a read that failed).
    public var apduCount: Int { environment.session.apduCount }

    /// Reads and verifies. Throws `accessDenied` for a wrong key, `cardRemoved`,
    /// `communicationFailure`, `secureMessagingFailure`, `cancelled` …; never returns a
    /// half-read file.
    public func read() async throws(MRTDError) -> PassportReadResult {
        let session = environment.session
        let started = ContinuousClock.now
        session.budget.start(at: started, readTimeout: environment.options.readTimeout)
        await session.adoptReaderCapabilities()
        let scope = StepScope(environment: environment, recovery: recovery)
        var records: [ReadStepRecord] = []
        var readingDone: ContinuousClock.Instant?
        for (index, step) in Self.steps.enumerated() where step.isNeeded(scope) {
            if step is ActiveAuthenticationStep { readingDone = ContinuousClock.now }
            let later = Self.steps[(index + 1)...].filter { $0.isNeeded(scope) }.reduce(0) { $0 + $1.plannedBytes(scope) }
            environment.meter.begin(step.phase, planned: step.plannedBytes(scope), later: later)
            records.append(try await run(step, scope))
        }
        guard var result = environment.ledger[VerificationStep.self] else {
            throw MRTDError(.malformedData, "the read ended without its verification step")
        }
        let end = ContinuousClock.now
        let reading = readingDone ?? end
        result.steps = records
        result.statistics = ReadStatistics(
            apdus: session.traffic.apdus, bytesSent: session.traffic.bytesSent, bytesReceived: session.traffic.bytesReceived,
            fileBytes: environment.files.bytesRead, cardTime: session.traffic.cardTime, totalTime: end - started,
            readingTime: reading - started, verificationTime: end - reading,
            readSize: session.limits.readLength(shortLimit: session.shortReadLimit(.secure)),
            extendedLength: session.limits.extendedLength == true, reauthentications: recovery.counts.reauthentications,
            reconnections: recovery.counts.reconnections)
        environment.meter.finish()
        return result
    }

    /// Runs one step, surviving the card leaving the field, records its output, and returns what
    /// it cost (for the result). A session step is established
    /// for recovery once it has run; access control opening the chip lets recovery re-open it.
    private func run<S: ReadStep>(_ step: S, _ scope: StepScope) async throws(MRTDError) -> ReadStepRecord {
        let session = environment.session
        let started = ContinuousClock.now
        let apdus = session.apduCount
        session.traceContext.phase = step.name
        var output: S.Output?
        try await recovery.surviving { () async throws(MRTDError) in output = try await step.run(scope) }
        if let output { environment.ledger.record(output, of: S.self) }
        if let sessionStep = step as? any SessionStep { establish(sessionStep) }
        if step is AccessControlStep { recovery.chipOpened() }
        return ReadStepRecord(name: step.name, outcome: "done", apdus: session.apduCount - apdus, duration: ContinuousClock.now - started)
    }

    private func establish<S: SessionStep>(_ step: S) { recovery.established(step) }
}
