import Foundation
import MRTD
import Synchronization

/// One `nfc.read` as an operator sees it (`gbgbridge serve --diagnostics`): when and on which
/// reader, how it ended, how long each phase took, what it cost. Nothing of the document: no MRZ,
/// CAN, names, photos or file contents — phases are step and file names, outcomes error codes.
public struct NFCReadRecord: Codable, Sendable, Hashable {
    /// A span of the read, in order: `wait for card`, `access control`, `read EF.COM` …,
    /// `verification`; `wait for card (document removed)` after a tag loss.
    public struct Phase: Codable, Sendable, Hashable {
        public var name: String
        public var seconds: Double
    }

    /// One of the reader's own steps (access control, security objects, chip authentication, data
    /// groups, active authentication) with its outcome and APDUs; known when the chip was read.
    public struct Step: Codable, Sendable, Hashable {
        public var name: String
        public var outcome: String
        public var apdus: Int
        public var seconds: Double
    }

    /// Numbers the reads of this process, from 1.
    public var id: Int
    /// When the request began (ISO 8601, UTC).
    public var started: String
    /// The reader the card was found on; `nil` when none was.
    public var reader: String?
    /// `success`, the nfc.read error code (`ACCESS_DENIED`, `CARD_TIMEOUT` …), or `inProgress`.
    public var outcome: String
    /// `PACE` or `BAC` once the chip was opened.
    public var accessControl: String?
    /// From the request to the answer.
    public var seconds: Double
    /// APDUs exchanged with the chip, when the read got that far.
    public var apdus: Int?
    /// How often the document left the field and came back during the read.
    public var tagLosses: Int
    public var phases: [Phase]
    public var steps: [Step]
    /// The files read (`DG1`, `DG2` …), on success.
    public var dataGroups: [String]
}

/// The last reads of this process (at most `capacity`, newest last) and the one in progress.
public final class NFCReadLog: Sendable {
    public let capacity: Int
    private let state = Mutex(State())

    private struct State {
        var records: [NFCReadRecord] = []
        var current: ReadTimeline?
        var count = 0
        var begun = 0
    }

    public init(capacity: Int = 50) { self.capacity = max(1, capacity) }

    /// Finished reads, oldest first.
    public var records: [NFCReadRecord] { state.withLock { $0.records } }

    /// The read in progress as it stands now (`outcome` = `inProgress`), or `nil`.
    public var current: NFCReadRecord? {
        let timeline = state.withLock { $0.current }
        return timeline?.record(outcome: "inProgress", at: .now)
    }

    /// How many reads this process has finished.
    public var finishedCount: Int { state.withLock { $0.count } }

    func begin() -> ReadTimeline {
        state.withLock { state in
            state.begun += 1
            let timeline = ReadTimeline(id: state.begun)
            state.current = timeline
            return timeline
        }
    }

    func finish(_ timeline: ReadTimeline, outcome: String, result: PassportReadResult?) {
        let record = timeline.record(outcome: outcome, at: .now, result: result)
        state.withLock { state in
            if state.current === timeline { state.current = nil }
            state.count += 1
            state.records.append(record)
            if state.records.count > capacity { state.records.removeFirst(state.records.count - capacity) }
        }
    }
}

/// The phases of one read as its progress reports them, timed as they happen.
final class ReadTimeline: Sendable {
    private struct State {
        var reader: String?
        var phases: [NFCReadRecord.Phase] = []
        var openPhase: (name: String, since: ContinuousClock.Instant)
        var tagLosses = 0
        var apdus: Int?
    }

    let id: Int
    private let startedAt = Date()
    private let startedClock = ContinuousClock.now
    private let state: Mutex<State>

    init(id: Int) {
        self.id = id
        state = Mutex(State(openPhase: ("wait for card", .now)))
    }

    func cardFound(on reader: String) { state.withLock { $0.reader = reader } }

    func apdus(_ count: Int) { state.withLock { $0.apdus = count } }

    /// Moves the timeline on with one progress report of the read.
    func note(_ progress: ReadProgress) {
        let now = ContinuousClock.now
        state.withLock { state in
            let name: String
            switch progress.phase {
            case .waitingForCard:
                if progress.reason == ReadProgress.cardRemovedReason {
                    name = "wait for card (document removed)"
                    if state.openPhase.name != name { state.tagLosses += 1 }
                } else {
                    name = "wait for card"
                }
            case .cardDetected, .authenticating: name = "access control"
            case .reading: name = progress.file.map { "read \($0)" } ?? state.openPhase.name
            case .verifying: name = "verification"
            }
            guard name != state.openPhase.name else { return }
            state.phases.append(.init(name: state.openPhase.name, seconds: Self.seconds(now - state.openPhase.since)))
            state.openPhase = (name, now)
        }
    }

    func record(outcome: String, at now: ContinuousClock.Instant, result: PassportReadResult? = nil) -> NFCReadRecord {
        state.withLock { state in
            let phases = state.phases + [.init(name: state.openPhase.name, seconds: Self.seconds(now - state.openPhase.since))]
            return NFCReadRecord(
                id: id, started: Self.iso8601(startedAt), reader: state.reader, outcome: outcome,
                accessControl: result?.accessControl, seconds: Self.seconds(now - startedClock),
                apdus: result?.statistics.apdus ?? state.apdus, tagLosses: max(state.tagLosses, result?.statistics.reconnections ?? 0),
                phases: phases,
                steps: result?.steps.map { .init(name: $0.name, outcome: $0.outcome, apdus: $0.apdus, seconds: Self.seconds($0.duration)) } ?? [],
                dataGroups: result?.dataGroupsRead ?? [])
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return ((Double(seconds) + Double(attoseconds) / 1e18) * 1_000).rounded() / 1_000
    }

    static func iso8601(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
