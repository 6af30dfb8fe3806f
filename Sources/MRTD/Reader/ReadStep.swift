import SmartCardCore

/// One step of a read (`PassportReader.steps`): what it needs comes from its `StepScope` (the
/// session, the key, the options, the files read so far, the results of the steps before it, read
/// only), and what it achieved is its `Output`, which the runner records for the steps after it.
/// No step writes another's result. A new step is a type conforming to this protocol and a line in
/// `PassportReader.steps`.
protocol ReadStep: Sendable {
    associatedtype Output
    /// The step's name in the result, the trace and the metrics (`access control`, `data groups`).
    var name: String { get }
    /// The progress phase the step reports when it starts; `nil` continues the current one.
    var phase: ReadProgress.Phase? { get }
    /// Whether this read runs the step (the options, and what the steps before it found).
    func isNeeded(_ scope: StepScope) -> Bool
    /// What the step expects the chip to send, in bytes: its share of the progress bar, worked out
    /// when the step before it ends (so with what that one learnt).
    func plannedBytes(_ scope: StepScope) -> Int
    func run(_ scope: StepScope) async throws(MRTDError) -> Output
}

extension ReadStep {
    func isNeeded(_ scope: StepScope) -> Bool { true }
}

/// A step whose effect lives in the chip's session (access control, Chip Authentication, Terminal
/// Authentication): when the session is lost, `TagLossRecovery` runs the established ones again,
/// in the order they first ran, each from its own recorded output.
protocol SessionStep: ReadStep {
    /// Establishes the step's effect again on a new session and returns the output that now holds.
    func restore(_ done: Output, after loss: SessionLoss, _ scope: StepScope) async throws(MRTDError) -> Output
}

/// Why the session has to be set up again.
enum SessionLoss {
    /// The chip ended secure messaging on the same connection: only access control runs again.
    case droppedSession
    /// The card left the field and came back: everything the session held runs again, and the
    /// chip must prove it is the one that left.
    case cardReturned
}

/// The outputs of the steps run so far, by step type. Written only by the runner (a step's output
/// when it ends) and by `TagLossRecovery` (a session step's output when restored).
final class StepLedger {
    private var outputs: [ObjectIdentifier: Any] = [:]

    subscript<S: ReadStep>(_ step: S.Type) -> S.Output? { outputs[ObjectIdentifier(step)] as? S.Output }

    func record<S: ReadStep>(_ output: S.Output, of step: S.Type) { outputs[ObjectIdentifier(step)] = output }
}

/// What the steps before this one achieved, read only.
struct StepResults {
    fileprivate let ledger: StepLedger
    subscript<S: ReadStep>(_ step: S.Type) -> S.Output? { ledger[step] }
}

/// What every step of one read works with; the same objects for every step.
struct ReadEnvironment {
    let session: CardSession
    let key: AccessKey
    let options: ReadOptions
    let files: FileShelf
    let ledger: StepLedger
    let meter: ProgressMeter
}

/// What one step sees: the read's environment, earlier results read only, and the recovery that
/// sets the session up again.
struct StepScope {
    let environment: ReadEnvironment
    let recovery: TagLossRecovery

    var session: CardSession { environment.session }
    var key: AccessKey { environment.key }
    var options: ReadOptions { environment.options }
    var files: FileShelf { environment.files }
    var results: StepResults { StepResults(ledger: environment.ledger) }
    var meter: ProgressMeter { environment.meter }

    /// Reads `file` through the shelf (once per read: a file read or found absent before is not
    /// asked for again), under secure messaging unless told otherwise, surviving tag loss.
    /// `reportAbsence: false` for a file whose absence is the step's own finding, not the read's.
    func read(_ file: LDSFile, _ protection: CardSession.Protection = .secure, reportAbsence: Bool = true) async throws(MRTDError) -> FileOutcome {
        try await files.read(CardSession.FileRequest(file, protection), on: session, recovery: recovery, meter: meter,
                             reportAbsence: reportAbsence)
    }

    /// What came of reading a public file of the MF in plain before access control.
    enum PublicFile {
        /// 6A82: the chip has no such file (the normal answer for most chips).
        case missing
        /// The file is there but the chip would not give it, or gave it broken; why, in words.
        case unreadable(String)
        case content([UInt8])
    }

    /// Reads a public file of the MF (EF.CardAccess, EF.DIR) in plain before access control, through
    /// the shelf: a file most chips lack and nobody asked for, so its absence is not reported and a
    /// chip that refuses it is a finding of the step, not a failed read.
    func readPublicFile(_ request: CardSession.FileRequest) async throws(MRTDError) -> PublicFile {
        session.traceContext.step = nil
        let name = request.file.name
        let outcome: FileOutcome
        do {
            outcome = try await files.read(request, on: session, recovery: nil, meter: meter, reportAbsence: false)
        } catch where error.code == .unexpectedStatus || error.code == .malformedData {
            return .unreadable("\(name) could not be read (\(error.statusWord?.meaning ?? error.reason))")
        }
        switch outcome {
        case .absent(.notPresent): return .missing
        case .absent(let why): return .unreadable("\(name) is on the chip but could not be read (\(why))")
        case .content(let bytes): return .content(bytes)
        }
    }

    /// A new secure-messaging session on the same connection (the access control that opened the
    /// chip, again), after a protocol left the session unusable (a failed Chip Authentication).
    func reestablishSecureMessaging() async throws(MRTDError) {
        try await recovery.reestablishSecureMessaging(on: session)
    }
}
