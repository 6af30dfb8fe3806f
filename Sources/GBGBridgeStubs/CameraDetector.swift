import CV4L2Shim
import Foundation
import GBGBridge

/// Whether the machine has a camera and whether this process may use it: V4L2 capture devices
/// under `/dev/video*` (the Linux counterpart of the iOS detector's AVCaptureDevice checks).
public enum CameraDetector {
    public struct Device: Sendable, Hashable {
        public var path: String
        public var name: String
        public var accessible: Bool
    }

    public struct Status: Sendable, Hashable {
        /// A video capture device exists.
        public var hardwareAvailable: Bool
        /// `granted` when one can be opened, `denied` when devices exist but none can be opened
        /// (not in the `video` group), `notDetermined` when there is no camera.
        public var permissionState: PermissionState
        public var devices: [Device]
    }

    /// Looks at `/dev/video*` now.
    public static func check(devDirectory: String = "/dev") -> Status {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: devDirectory)) ?? [])
            .filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
            .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }
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
        return Status(hardwareAvailable: available, permissionState: permission, devices: devices)
    }
}
