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
        slot.handler = { [weak self] _ in
            guard let self else { return .cancelled(reason: "the host is shutting down") }
            return await self.capture()
        }
        apply(to: slot)
        hosts[ObjectIdentifier(host)] = WeakHost(host: host)
    }

    public func detach(from host: BridgeHost) {
        hosts.removeValue(forKey: ObjectIdentifier(host))
    }

    /// Looks at the camera again (off the main actor) and tells every page's slot.
    public func refresh() async {
        let probe = await CameraProbe.run(settings)
        status.probe = probe
        for (id, entry) in hosts {
            guard let host = entry.host else {
                hosts.removeValue(forKey: id)
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
        status.capturing = true
        let started = ContinuousClock.now
        let outcome = await CameraPhoto.take(role: role, settings: settings)
        status.capturing = false
        let duration = ContinuousClock.now - started
        status.record(outcome, duration: duration)
        CameraMetrics.captured(role: role, outcome: outcome.label, duration: duration)
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
        switch outcome {
        case .photo(_, let frame):
            lastCapture = LastCapture(time: time, outcome: "success", durationMs: milliseconds, device: frame.device,
                                      format: frame.format.description, resolution: "\(frame.image.width)x\(frame.image.height)")
        case .stub:
            lastCapture = LastCapture(time: time, outcome: "stub", durationMs: milliseconds, device: "stub")
        case .failed(let error):
            lastCapture = LastCapture(time: time, outcome: error.code.rawValue, durationMs: milliseconds, device: error.device,
                                      message: error.message)
        }
    }
}
