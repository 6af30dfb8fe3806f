import Foundation
import SmartCardCore

/// One read's state, shared by the steps of `PassportReader.read()`: the session, what access
/// control and chip authentication achieved (so both can be repeated after the card leaves the
/// field), the files read and why others are absent, progress, and the record of each step.
final class ReadContext {
    let session: CardSession
    let key: AccessKey
    let options: ReadOptions
    let progress: PassportReader.ProgressHandler?
    private(set) lazy var recovery = TagLossRecovery(context: self, reconnect: reconnect)
    private let reconnect: PassportReader.Reconnect?

    // MARK: Access control

    /// How the chip was opened.
    enum Opening {
        case bac
        case pace(PACEInfo)
    }
    var opening: Opening?
    var pace: PACEResult?
    /// Why PACE was not used although the chip offers it (reported, never silent).
    var accessControlNote: String?
    /// What EF.CardAccess held and said.
    var cardAccess: [UInt8]?
    var cardAccessNotFound = false
    var cardAccessNote: String?
    var cardSecurity: [UInt8]?
    var lookedAgainForPACE = false
    var lookingAgainForPACE = false
    var reauthentications = 0

    // MARK: Chip authentication

    /// The chip authentication outcome (CA, or PACE-CAM).
    var chipOutcome: VerificationOutcome?
    /// Where the key that `chipOutcome` rests on came from.
    var chipKeySource: ChipKeySource?
    /// PACE-CAM's outcome when the chip was first opened (a chip that comes back must match it).
    var mappingOutcome: VerificationOutcome?
    /// The Chip Authentication that succeeded: repeated when the card comes back after tag loss.
    var chipAuthentication: ChipAuthenticationResult?
    /// Terminal Authentication's outcome, once tried.
    var terminalOutcome: VerificationOutcome?
    /// The CVCAs EF.CVCA names (kept for Terminal Authentication again after tag loss).
    var cvcaTrustPoints: [String]?
    /// A PACE-CAM chip that offers no Chip Authentication: TA signs the terminal's PACE key.
    var signsPACEKeyForTerminal = false

    // MARK: Files

    var files: [LDSFile: [UInt8]] = [:]
    var absent: [LDSFile: FileAbsence] = [:]
    var parseErrors: [LDSFile: String] = [:]
    var com: EFCOM?
    var sod: SecurityObject?
    var bytesOfFiles = 0
    var lastPercent = 0
    var steps: [ReadStepRecord] = []

    init(connection: any CardConnection, key: AccessKey, options: ReadOptions, progress: PassportReader.ProgressHandler?,
         reconnect: PassportReader.Reconnect?) {
        session = CardSession(connection: connection, trace: options.trace)
        self.key = key
        self.options = options
        self.progress = progress
        self.reconnect = reconnect
    }

    var accessControlName: String {
        if case .pace = opening { return "PACE" }
        return "BAC"
    }

    func report(_ phase: ReadProgress.Phase, file: String? = nil, bytesRead: Int? = nil, bytesTotal: Int? = nil, percent: Int,
                reason: String? = nil, message: String? = nil) {
        lastPercent = max(lastPercent, min(100, percent))
        progress?(ReadProgress(phase: phase, file: file, bytesRead: bytesRead, bytesTotal: bytesTotal, percent: lastPercent,
                               reason: reason, message: message))
    }

    /// Runs one step of the read, surviving the card leaving the field once the chip is open,
    /// and records what it cost and how it ended (for the result and the trace).
    func step(_ name: String, _ body: () async throws(MRTDError) -> Void) async throws(MRTDError) {
        let started = ContinuousClock.now
        let apdus = session.apduCount
        session.traceContext.phase = name
        do {
            try await recovery.surviving(body)
        } catch {
            steps.append(ReadStepRecord(name: name, outcome: error.code.rawValue, apdus: session.apduCount - apdus,
                                        duration: ContinuousClock.now - started))
            throw error
        }
        steps.append(ReadStepRecord(name: name, outcome: "done", apdus: session.apduCount - apdus, duration: ContinuousClock.now - started))
    }

    /// Reads `file` under secure messaging (the one read loop of `CardSession`), reporting progress
    /// as the `index`-th of `count` files.
    func readFile(_ file: LDSFile, index: Int, of count: Int) async throws(MRTDError) -> FileOutcome {
        func percent(_ fraction: Double) -> Int { 10 + Int(80 * (Double(index) + fraction) / Double(max(count, 1))) }
        report(.reading, file: file.name, bytesRead: 0, percent: percent(0))
        let outcome = try await session.readFile(CardSession.FileRequest(file, .secure), recovery: recovery) { read, total in
            report(.reading, file: file.name, bytesRead: read, bytesTotal: total,
                   percent: percent(total.map { Double(min(read, $0)) / Double(max($0, 1)) } ?? (read == 0 ? 0 : 0.5)))
        }
        if case .content(let bytes) = outcome { bytesOfFiles += bytes.count }
        return outcome
    }
}

