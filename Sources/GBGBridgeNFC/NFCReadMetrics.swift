import CoreMetrics
import GBGBridge
import MRTD

/// What reads cost and how they end, through swift-metrics (the host process picks the backend:
/// `gbgbridge serve` exposes them in the Prometheus format on /metrics). Nothing of a document
/// goes into a metric: outcomes are error codes, phases are step names.
enum NFCReadMetrics {
    static let reads = "gbgbridge_reads_total"
    static let duration = "gbgbridge_read_duration_seconds"
    static let apdus = "gbgbridge_read_apdus"
    static let tagLosses = "gbgbridge_tag_losses_total"
    static let readers = "gbgbridge_readers"

    /// The label values these metrics use, each from a closed set (`other` for anything else), so
    /// that no page or card can add a series.
    static let outcomes: Set<String> = Set(["success"] + BridgeErrorCode.allCases.map(\.rawValue))
    static let accessControls: Set<String> = ["PACE", "BAC", "none"]
    /// The read's steps (`PassportReader.steps`), with the wait before and the whole.
    static let phases: Set<String> = Set(["wait_for_card", "total"] + PassportReader.stepNames.map(phaseLabel))

    static func label(_ value: String, in known: Set<String>) -> String { known.contains(value) ? value : "other" }

    /// One finished read: `outcome` is `success` or the nfc.read error code.
    static func finished(outcome: String, waitForCard: Duration?, result: PassportReadResult?) {
        Counter(label: reads, dimensions: [("outcome", label(outcome, in: outcomes)),
                                           ("access_control", label(result?.accessControl ?? "none", in: accessControls))]).increment()
        if let waitForCard { record(waitForCard, phase: "wait_for_card") }
        guard let result else { return }
        record(result.statistics.totalTime, phase: "total")
        for step in result.steps { record(step.duration, phase: phaseLabel(step.name)) }
        Recorder(label: apdus, aggregate: true).record(result.statistics.apdus)
        if result.statistics.reconnections > 0 {
            Counter(label: tagLosses).increment(by: result.statistics.reconnections)
        }
    }

    /// A step name as a label value in Prometheus's style: "access control" → access_control.
    static func phaseLabel(_ name: String) -> String { String(name.map { $0 == " " ? "_" : $0 }) }

    static func record(_ duration: Duration, phase: String) {
        let (seconds, attoseconds) = duration.components
        Timer(label: NFCReadMetrics.duration, dimensions: [("phase", label(phase, in: phases))])
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    static func readersConnected(_ count: Int) {
        Gauge(label: readers).record(count)
    }
}
