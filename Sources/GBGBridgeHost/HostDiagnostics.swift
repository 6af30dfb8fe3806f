import Cameras
import Foundation
import GBGBridgeRead
import GBGBridge
import GBGBridgeMdoc
import GBGBridgeNFC
import GBGBridgeServer
import MRTD
import SmartCard

/// `/diagnostics.json` of `serve --diagnostics` (and `demo --diagnostics`): the host, its readers
/// and their state, the last reads phase by phase, every page's troubleshooting surfaces and the
/// trust store's health. Nothing of a document: reads carry outcomes, timings and counts only.
@MainActor
package final class HostDiagnostics {
    package let pages = PageDiagnostics()
    private let nfc: NFCReadService
    private let mdoc: MdocReadService?
    private let cameras: [CameraService]
    private let trustPaths: [String]
    private let started = Date()
    private let startedClock = ContinuousClock.now
    /// The trust store's health changes by the day, not the second: worked out once a minute.
    private var trust: (check: [String: Any], at: ContinuousClock.Instant)?

    package init(nfc: NFCReadService, mdoc: MdocReadService? = nil, cameras: [CameraService] = [], trustPaths: [String]) {
        self.nfc = nfc
        self.mdoc = mdoc
        self.cameras = cameras
        self.trustPaths = trustPaths
    }

    /// The document, as `BridgeServerConfiguration.diagnostics` wants it.
    package nonisolated func source() -> @Sendable () async -> [UInt8] {
        { [self] in await self.json() }
    }

    package func json() -> [UInt8] {
        let object = snapshot()
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return Array(data)
    }

    package func snapshot() -> [String: Any] {
        let active = nfc.readLog.current
        let readers: [[String: Any]] = nfc.readers.map { reader in
            var entry: [String: Any] = [
                "name": reader.name, "backend": reader.backend, "cardPresent": reader.cardPresent,
                "state": active?.reader == reader.name ? "reading" : reader.mute ? "card mute"
                    : reader.exclusive ? "card in use elsewhere" : reader.cardPresent ? "card present" : "idle",
            ]
            if let atr = reader.atr { entry["atr"] = atr.map { String(format: "%02X", $0) }.joined() }
            return entry
        }
        let reads = nfc.readLog.records.compactMap { try? JSONValue(encoding: $0).anyValue }
        let uptime = ContinuousClock.now - startedClock
        var object: [String: Any] = [
            "host": [
                "version": GBGBridgeVersion.current, "started": DoctorChecks.iso8601(started.timeIntervalSince1970),
                "uptimeSeconds": Double(uptime.components.seconds), "pid": Int(getpid()),
            ] as [String: Any],
            "readers": readers,
            "readerPermission": nfc.permissionState.rawValue,
            "reads": reads,
            "readInProgress": active.flatMap { try? JSONValue(encoding: $0).anyValue } ?? NSNull(),
            "readsFinished": nfc.readLog.finishedCount,
            "cameras": cameras.compactMap { try? JSONValue(encoding: $0.status).anyValue },
            "pages": pages.snapshot().map(\.anyValue),
            "trust": trustHealth(),
        ]
        if let mdoc {
            // mdoc.read's last reads: outcome, timing, transport and counts, never an element.
            object["mdocReads"] = mdoc.recentReads.compactMap { try? JSONValue(encoding: $0).anyValue }
            object["mdocReadInProgress"] = mdoc.activeRead != nil
            object["mdocReadsFinished"] = mdoc.readsFinished
        }
        return object
    }

    private func trustHealth() -> [String: Any] {
        if let trust, ContinuousClock.now - trust.at < .seconds(60) { return trust.check }
        let check = DoctorChecks.trustHealth(nfc.trustStore, paths: trustPaths).json
        trust = (check, .now)
        return check
    }
}
