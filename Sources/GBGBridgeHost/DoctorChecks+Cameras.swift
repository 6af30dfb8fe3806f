import Cameras
import GBGBridge

extension DoctorChecks {
    /// Each capture slot as `serve` would run it: the camera its setting names (or `auto` finds),
    /// and one frame taken from it, so that a camera that opens but gives nothing (busy, denied,
    /// a broken driver) shows here and not in front of a customer.
    package static func cameras(settings: ServeSettings?) async -> [DoctorCheck] {
        let document: CameraSettings, selfie: CameraSettings
        do {
            document = try HostSettings.camera(settings?.documentCamera, settings?.documentResolution, base: .document, option: "document")
            selfie = try HostSettings.camera(settings?.selfieCamera, settings?.selfieResolution, base: .selfie, option: "selfie")
        } catch {
            return [DoctorCheck(name: "cameras", status: .error, finding: error.description, fix: "Fix the camera keys of the configuration file")]
        }
        return await cameras(document: document, selfie: selfie)
    }

    package static func cameras(document: CameraSettings, selfie: CameraSettings) async -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        for (slot, settings) in [("camera.document", document), ("camera.selfie", selfie)] {
            checks.append(await camera(slot: slot, settings: settings))
        }
        return checks
    }

    static func camera(slot: String, settings: CameraSettings) async -> DoctorCheck {
        let probe = await CameraTool.onThread { CameraProbe.probe(settings) }
        let configured = "\(slot) (\(settings.source))"
        switch probe.state {
        case .stub:
            let finding = settings.source == .stub ? "\(configured): the drawn placeholder, as configured"
                : "\(configured): no V4L2 camera, so captures answer with the drawn placeholder"
            return DoctorCheck(name: slot, status: .ok, finding: finding, fix: "")
        case .denied:
            return DoctorCheck(name: slot, status: .error, finding: "\(configured): \(probe.device ?? "the camera") cannot be opened: \(probe.message ?? "permission denied")",
                               fix: "Add the service user to the camera's group: sudo usermod -aG video gbgbridge (then restart gbgbridge)")
        case .unplugged, .unsupported:
            return DoctorCheck(name: slot, status: .error, finding: "\(configured): \(probe.message ?? "no camera")",
                               fix: "Plug the camera in, or name one that exists: gbgbridge camera list shows the devices and their /dev/v4l/by-id names")
        case .ready:
            break
        }
        guard let device = probe.device else { return DoctorCheck(name: slot, status: .error, finding: "\(configured): no device", fix: "") }
        var request = settings.request
        request.warmupFrames = min(request.warmupFrames, 2)
        do throws(CameraError) {
            let frame = try await V4L2Capture.capture(device, request)
            let milliseconds = frame.duration.components.seconds * 1000 + frame.duration.components.attoseconds / 1_000_000_000_000_000
            return DoctorCheck(name: slot, status: .ok,
                               finding: "\(configured): \(device) (\(probe.name ?? "camera")) gave a \(frame.image.width)x\(frame.image.height) \(frame.format) frame in \(milliseconds) ms",
                               fix: "")
        } catch {
            switch error.kind {
            case .busy:
                return DoctorCheck(name: slot, status: .warning, finding: "\(configured): \(error.message)",
                                   fix: "Stop the other program using \(device) (fuser -v \(device) names it); a running gbgbridge serve holds it only while it captures")
            case .denied:
                return DoctorCheck(name: slot, status: .error, finding: "\(configured): \(error.message)",
                                   fix: "sudo usermod -aG video gbgbridge (then restart gbgbridge)")
            default:
                return DoctorCheck(name: slot, status: .error, finding: "\(configured): \(error.message)",
                                   fix: "Check the camera's cable and driver (dmesg); gbgbridge camera capture --device \(device) --out /tmp/frame.png tries it by hand")
            }
        }
    }
}
