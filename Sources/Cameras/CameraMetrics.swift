import CoreMetrics
import GBGBridge

/// Captures by slot and outcome, through swift-metrics (`gbgbridge serve` exposes them on
/// /metrics). Labels come from closed sets.
enum CameraMetrics {
    static let captures = "gbgbridge_captures_total"
    static let duration = "gbgbridge_capture_duration_seconds"
    static let outcomes: Set<String> = ["success", "stub", BridgeErrorCode.cameraBusy.rawValue, BridgeErrorCode.cameraDenied.rawValue,
                                        BridgeErrorCode.cameraError.rawValue]

    static func captured(role: CameraService.Role, outcome: String, duration: Duration) {
        let slot = role.rawValue
        Counter(label: captures, dimensions: [("slot", slot), ("outcome", outcomes.contains(outcome) ? outcome : "other")]).increment()
        let (seconds, attoseconds) = duration.components
        Timer(label: Self.duration, dimensions: [("slot", slot)]).recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
