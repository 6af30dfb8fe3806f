import CoreMetrics
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

    /// One finished read: `outcome` is `success` or the nfc.read error code.
    static func finished(outcome: String, waitForCard: Duration?, result: PassportReadResult?) {
        Counter(label: reads, dimensions: [("outcome", outcome), ("access_control", result?.accessControl ?? "none")]).increment()
        if let waitForCard { record(waitForCard, phase: "wait_for_card") }
        guard let result else { return }
        record(result.statistics.totalTime, phase: "total")
        // Step names as label values in Prometheus's style: "access control" → access_control.
        for step in result.steps { record(step.duration, phase: String(step.name.map { $0 == " " ? "_" : $0 })) }
        Recorder(label: apdus, aggregate: true).record(result.statistics.apdus)
        if result.statistics.reconnections > 0 {
            Counter(label: tagLosses).increment(by: result.statistics.reconnections)
        }
    }

    static func record(_ duration: Duration, phase: String) {
        let (seconds, attoseconds) = duration.components
        Timer(label: NFCReadMetrics.duration, dimensions: [("phase", phase)])
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    static func readersConnected(_ count: Int) {
        Gauge(label: readers).record(count)
    }
}
