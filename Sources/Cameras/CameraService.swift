import Foundation
import GBGBridge
import GBGBridgeStubs
import ImageCodecs

/// One capture slot (`camera.document` or `camera.selfie`) backed by a camera, installed on every
/// page's host: the iOS stubs' two behaviours on Linux — a plain photo where the kiosk has a camera
/// (no detection, no cropping; document → PNG, selfie → JPEG preview with placeholder blobs and no
/// liveness), the drawn placeholder where it has none or `stub` is chosen. `capability.query` says
/// which, with the camera's state (`constraints`: device, resolution, format, state) and the
/// permission this process has; the state is probed again after every capture and whenever a
/// video device appears, goes or changes owner (`CameraWatcher`), so a camera that comes back is
/// used again without restarting the host.
@MainActor
public final class CameraService {
    public enum Role: String, Sendable, CaseIterable {
        case document, selfie

        @MainActor func slot(of host: BridgeHost) -> CaptureCapability {
            self == .document ? host.documentCapture : host.selfieCapture
        }
    }

    public let role: Role
    public let settings: CameraSettings
    /// What the slot uses now and how its last capture went (for `/diagnostics`).
    public private(set) var status: CameraStatus
    private var hosts: [ObjectIdentifier: WeakHost] = [:]
    /// Each page's last document capture's MRZ (when its access key was valid), for nfc.read's
    /// `{"fromDocumentCapture": true}`: in memory only, for `mrzLifetime`, taken once, never logged.
    /// The page is held weakly and compared on the way out: a page gone without `detach` cannot
    /// hand its MRZ to a new page that happens to get the same address.
    private var capturedMRZ: [ObjectIdentifier: (page: WeakHost, keys: [[String]], at: ContinuousClock.Instant)] = [:]
    public static let mrzLifetime: Duration = .seconds(300)
    /// `mrzLifetime`, shortened by tests.
    var mrzLifetimeHere = CameraService.mrzLifetime

    private struct WeakHost {
        weak var host: BridgeHost?
    }

    public init(role: Role, settings: CameraSettings) {
        self.role = role
        self.settings = settings
        status = CameraStatus(role: role, settings: settings)
    }

    /// Makes `host`'s slot take its photos here.
    public func install(on host: BridgeHost) {
        let slot = role.slot(of: host)
        slot.handler = { [weak self, weak host] _ in
            guard let self, let host else { return .cancelled(reason: "the host is shutting down") }
            return await self.capture(for: host)
        }
        apply(to: slot)
        hosts[ObjectIdentifier(host)] = WeakHost(host: host)
    }

    public func detach(from host: BridgeHost) {
        hosts.removeValue(forKey: ObjectIdentifier(host))
        capturedMRZ.removeValue(forKey: ObjectIdentifier(host))
    }

    /// The access keys of `host`'s last document capture (document number, date of birth, date of
    /// expiry; the frames' agreed key first, then the other candidates, at most 3), taken (they are
    /// gone afterwards), or why there are none.
    public func takeMRZ(for host: BridgeHost) -> Result<[[String]], MRZUnavailable> {
        guard let entry = capturedMRZ.removeValue(forKey: ObjectIdentifier(host)), entry.page.host === host else {
            return .failure(MRZUnavailable(description: "no document capture of this page holds an MRZ access key (capture the data page first, or give the MRZ or the CAN)"))
        }
        guard ContinuousClock.now - entry.at < mrzLifetimeHere else {
            return .failure(MRZUnavailable(description: "the document capture's MRZ is older than \(Self.describe(mrzLifetimeHere)) and was forgotten; capture the data page again"))
        }
        return .success(entry.keys)
    }

    static func describe(_ lifetime: Duration) -> String {
        let seconds = lifetime.components.seconds
        return seconds >= 120 && seconds % 60 == 0 ? "\(seconds / 60) minutes" : "\(seconds) seconds"
    }

    public struct MRZUnavailable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Looks at the camera again (off the main actor) and tells every page's slot.
    public func refresh() async {
        let probe = await CameraProbe.run(settings)
        status.probe = probe
        for (id, entry) in hosts {
            guard let host = entry.host else {
                hosts.removeValue(forKey: id)
                capturedMRZ.removeValue(forKey: id)
                continue
            }
            apply(to: role.slot(of: host))
        }
    }

    private func apply(to slot: CaptureCapability) {
        slot.permissionState = status.probe.permission
        slot.constraints = status.probe.constraints
    }

    /// Takes one photo for a request, and records how it went.
    public func capture() async -> CaptureResult {
        await capture(for: nil)
    }

    func capture(for host: BridgeHost?) async -> CaptureResult {
        status.capturing = true
        let started = ContinuousClock.now
        let outcome = await CameraPhoto.take(role: role, settings: settings)
        status.capturing = false
        let duration = ContinuousClock.now - started
        status.record(outcome, duration: duration)
        CameraMetrics.captured(role: role, outcome: outcome.label, duration: duration)
        if let host, role == .document {
            let page = ObjectIdentifier(host)
            if let mrz = outcome.mrz, !mrz.keys.isEmpty {
                capturedMRZ[page] = (WeakHost(host: host), mrz.keys, .now)
            } else {
                capturedMRZ.removeValue(forKey: page)
            }
        }
        await refresh()
        return outcome.result
    }
}

/// What a slot reports: the camera it uses, the permission, and its last capture.
public struct CameraStatus: Sendable, Encodable {
    public struct LastCapture: Sendable, Encodable {
        public var time: String
        /// `success`, `stub`, or the error code.
        public var outcome: String
        public var durationMs: Int
        public var device: String?
        public var format: String?
        public var resolution: String?
        public var message: String?
        /// For a document: `valid`, `accessKeyValid`, `not valid` or `none` (never the MRZ itself).
        public var mrz: String?
    }

    public let slot: String
    public let configured: String
    public let requestedResolution: String
    public internal(set) var probe: CameraProbe
    public internal(set) var capturing = false
    public internal(set) var lastCapture: LastCapture?
    public internal(set) var captures = 0

    init(role: CameraService.Role, settings: CameraSettings) {
        slot = "camera.\(role.rawValue)"
        configured = settings.source.description
        requestedResolution = settings.request.target.description
        probe = CameraProbe(settings: settings)
    }

    mutating func record(_ outcome: CameraPhoto.Outcome, duration: Duration) {
        captures += 1
        let milliseconds = Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let time = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false))
        switch outcome.source {
        case .camera(let frame):
            lastCapture = LastCapture(time: time, outcome: "success", durationMs: milliseconds, device: frame.device,
                                      format: frame.format.description, resolution: "\(frame.image.width)x\(frame.image.height)")
        case .stub:
            lastCapture = LastCapture(time: time, outcome: "stub", durationMs: milliseconds, device: "stub")
        case .failed(let error):
            lastCapture = LastCapture(time: time, outcome: error.code.rawValue, durationMs: milliseconds, device: error.device,
                                      message: error.message)
        }
        // Whether an MRZ was read, never what it says.
        if let mrz = outcome.mrz {
            lastCapture?.mrz = mrz.reading.valid ? "valid" : mrz.reading.accessKeyValid ? "accessKeyValid" : "not valid"
        } else if lastCapture?.outcome == "success" || lastCapture?.outcome == "stub" {
            lastCapture?.mrz = "none"
        }
    }
}
