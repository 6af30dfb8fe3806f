import SmartCardCore

/// The read's progress, derived from the step list and the bytes it plans to receive: when a step
/// starts, the runner gives its plan and the plan of the steps after it (`begin`); the percentage
/// is the bytes the chip has sent so far over the bytes planned. A file whose header gives its
/// length replaces its typical size in the plan. Never goes back, reaches 100 only at the end.
/// The read's own percentages start at `first`: 0 and 1 are the caller's (waiting for the card,
/// card detected).
final class ProgressMeter {
    static let first = 2

    private let handler: PassportReader.ProgressHandler?
    private let session: CardSession
    private(set) var percent = ProgressMeter.first
    private(set) var phase: ReadProgress.Phase = .authenticating
    /// Bytes received before the current step, and the bytes planned from there to the end.
    private var receivedBefore = 0
    private var plannedFromHere = 0
    /// The file being read: its planned size until its header tells the real one.
    private var file: (name: LDSFile, planned: Int)?

    init(session: CardSession, handler: PassportReader.ProgressHandler?) {
        self.session = session
        self.handler = handler
    }

    /// A step starts: `planned` bytes for it and `later` for the steps after it.
    func begin(_ phase: ReadProgress.Phase?, planned: Int, later: Int) {
        receivedBefore = session.traffic.bytesReceived
        plannedFromHere = max(1, planned + later)
        file = nil
        if let phase { self.phase = phase }
        report()
    }

    func fileStarted(_ name: LDSFile) {
        file = (name, name.typicalSize)
        report(file: name.name, bytesRead: 0)
    }

    func fileProgress(_ name: LDSFile, read: Int, total: Int?) {
        if let total, let current = file, current.name == name, current.planned != total {
            // The header told the file's real size: the plan follows it.
            plannedFromHere = max(1, plannedFromHere + total - current.planned)
            file = (name, total)
        }
        report(file: name.name, bytesRead: read, bytesTotal: total)
    }

    /// Reports the current phase again (after the card came back), or `phase` with `reason`.
    func report(_ phase: ReadProgress.Phase? = nil, file: String? = nil, bytesRead: Int? = nil, bytesTotal: Int? = nil,
                reason: String? = nil, message: String? = nil) {
        let received = session.traffic.bytesReceived - receivedBefore
        let base = receivedBefore
        let fraction = Double(base + received) / Double(max(1, base + max(plannedFromHere, received + 1)))
        percent = max(percent, min(99, Self.first + Int(fraction * Double(100 - Self.first))))
        handler?(ReadProgress(phase: phase ?? self.phase, file: file, bytesRead: bytesRead, bytesTotal: bytesTotal, percent: percent,
                              reason: reason, message: message))
    }

    /// The read is over.
    func finish() {
        percent = 100
        handler?(ReadProgress(phase: phase, percent: 100))
    }
}

extension LDSFile {
    /// What the file usually holds, in bytes: its place in the plan until its header says.
    var typicalSize: Int {
        switch self {
        case .com, .cvca, .directory: return 32
        case .sod, .cardSecurity: return 2_048
        case .cardAccess: return 256
        case .atrInfo: return 32
        case .dataGroup(let number):
            switch number {
            case 1: return 96
            case 2: return 20_000
            case 3: return 40_000
            case 4: return 30_000
            case 5, 6, 7: return 8_000
            case 14, 15: return 400
            default: return 256
            }
        }
    }
}
