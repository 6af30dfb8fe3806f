import CoreMetrics
import Foundation
import GBGBridgeRead
import GBGBridge
import MRTD
import Prometheus

/// The host's metrics: swift-metrics as the API everywhere, swift-prometheus as the backend here.
/// Bootstrapped once per process by `serve` and `demo`.
package enum HostMetrics {
    package static let registry = PrometheusCollectorRegistry()

    /// The Prometheus text exposition (format 0.0.4) of everything recorded so far.
    @Sendable package static func exposition() -> [UInt8] { registry.emitToBuffer() }

    package static func bootstrap(trust: TrustStore, now: Double = Date().timeIntervalSince1970) {
        var factory = PrometheusMetricsFactory(registry: registry)
        // A contactless read takes from a fraction of a second to tens of seconds.
        factory.durationHistogramBuckets["gbgbridge_read_duration_seconds"] = [
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2),
            .seconds(3), .seconds(5), .seconds(10), .seconds(20), .seconds(30), .seconds(60),
        ]
        factory.valueHistogramBuckets["gbgbridge_read_apdus"] = [5, 10, 20, 50, 100, 200, 500, 1000]
        // mdoc.read: the holder waited for, the engagement, the session, the verification.
        factory.durationHistogramBuckets["gbgbridge_mdoc_read_seconds"] = [
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
        ]
        MetricsSystem.bootstrap(factory)
        Gauge(label: "gbgbridge_build_info", dimensions: [("version", GBGBridgeVersion.current)]).record(1)
        // The trust list's health: the earliest expiry of a CSCA still valid, the earliest CRL due.
        if let earliest = trust.certificates.compactMap(\.notAfter).filter({ $0 >= now }).min() {
            Gauge(label: "gbgbridge_trust_anchor_expiry_timestamp_seconds").record(earliest)
        }
        if let due = trust.revocationLists.compactMap(\.nextUpdate).min() {
            Gauge(label: "gbgbridge_crl_next_update_timestamp_seconds").record(due)
        }
    }

    /// The actions `gbgbridge_requests_total` names; every other action a page sends is counted as
    /// `other`, so a page cannot make a series per made-up action (label values come from a
    /// closed set: Docs/kiosk-deployment.md, "Metrics").
    package static let knownActions: Set<String> = ["capability.query", "camera.document.capture", "camera.selfie.capture", "nfc.read", "mdoc.read"]

    /// `action` as `gbgbridge_requests_total` labels it.
    package static func actionLabel(_ action: String) -> String { knownActions.contains(action) ? action : "other" }

    /// Counts the responses a page's host sends, by action and status, until the host goes away.
    @MainActor
    package static func countRequests(of host: BridgeHost) -> Task<Void, Never> {
        let traffic = host.messages
        return Task {
            for await item in traffic where item.direction == .sent && item.message.type == .response {
                // The status is one of BridgeResponseStatus's five.
                let status = item.message.payload.status?.rawValue ?? "none"
                Counter(label: "gbgbridge_requests_total",
                        dimensions: [("action", actionLabel(item.message.payload.action)), ("status", status)]).increment()
            }
        }
    }
}
