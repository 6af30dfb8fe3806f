import CV4L2Shim
import Foundation
import GBGBridge

/// Whether the machine has a camera and whether this process may use it: V4L2 capture devices
/// under `/dev/video*` (the Linux counterpart of the iOS detector's AVCaptureDevice checks).
public struct CameraDetector {
    /// A V4L2 capture device (Linux addition).
    public struct Device: Sendable, Hashable {
        public let path: String
        public let name: String
        public let accessible: Bool
    }

    /// Camera hardware availability and permission status.
    public struct Result: Sendable, Hashable {
        /// Whether camera hardware was detected (a V4L2 video capture device).
        public let hardwareAvailable: Bool
        /// `granted` when a camera can be opened, `denied` when cameras exist but none can be
        /// opened (not in the `video` group), `notDetermined` when there is no camera.
        public let permissionState: PermissionState
        /// The capture devices found (Linux addition).
        public let devices: [Device]
    }

    /// Checks camera hardware and permission now (`/dev/video*`).
    public static func check() -> CameraDetector.Result {
        check(devDirectory: "/dev")
    }

    /// Checks the capture devices under `devDirectory` (Linux addition, for tests and containers).
    public static func check(devDirectory: String) -> CameraDetector.Result {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: devDirectory)) ?? [])
            .compactMap { name in name.hasPrefix("video") ? Int(name.dropFirst(5)).map { (name, $0) } : nil }
            .sorted { $0.1 < $1.1 }
            .map(\.0)
        var devices: [Device] = []
        var deniedCount = 0
        for name in names {
            let path = devDirectory + "/" + name
            var isCapture: Int32 = 0
            var card = [CChar](repeating: 0, count: 64)
            let error = CV4L2Shim_query(path, &isCapture, &card, Int32(card.count))
            if error == 0 {
                guard isCapture != 0 else { continue }  // metadata or output nodes are not cameras
                let label = String(decoding: card.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                devices.append(Device(path: path, name: label.isEmpty ? name : label, accessible: true))
            } else if error == EACCES || error == EPERM {
                deniedCount += 1
                devices.append(Device(path: path, name: name, accessible: false))
            }
        }
        let available = !devices.isEmpty
        let permission: PermissionState = !available ? .notDetermined
            : devices.contains(where: \.accessible) ? .granted : (deniedCount > 0 ? .denied : .restricted)
        return Result(hardwareAvailable: available, permissionState: permission, devices: devices)
    }
}
