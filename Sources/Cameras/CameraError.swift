import Foundation
import GBGBridge

/// Why a camera gave no photo, with the bridge error code a page gets. Every one is recoverable
/// for the page (try again, or after the operator fixes the camera), and none is a hang: every
/// wait is bounded.
public struct CameraError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Another process streams from the device (EBUSY).
        case busy
        /// This process may not open it (EACCES/EPERM: not in group `video`).
        case denied
        /// The device is not there, or went away mid-capture (ENOENT, ENODEV, ENXIO).
        case unplugged
        /// No frame within the bound.
        case timeout
        /// A frame that cannot be decoded (corrupt or truncated MJPEG, short raw frame).
        case corruptFrame
        /// Not a capture device, or none of its formats is one this host converts.
        case unsupported
        /// Any other driver or system failure.
        case failed
    }

    public let kind: Kind
    public let device: String
    public let message: String

    public init(_ kind: Kind, device: String, _ message: String) {
        self.kind = kind
        self.device = device
        self.message = message
    }

    /// The error a failed system call on the device stands for; `stage` names the call.
    public init(errno code: Int32, device: String, stage: String) {
        let words = String(cString: strerror(code))
        let at = stage.isEmpty ? "" : " (\(stage))"
        switch code {
        case EBUSY:
            self.init(.busy, device: device, "the camera is in use by another program\(at)")
        case EACCES, EPERM:
            self.init(.denied, device: device, "this user may not open the camera\(at): add it to the group that owns \(device) (usually 'video')")
        case ENOENT, ENODEV, ENXIO:
            self.init(.unplugged, device: device, "the camera is gone (unplugged or disconnected)\(at): \(words)")
        case ETIMEDOUT:
            self.init(.timeout, device: device, "the camera gave no frame in time\(at)")
        case ENOTTY:
            self.init(.unsupported, device: device, "not a V4L2 video capture device\(at)")
        case EFBIG:
            self.init(.corruptFrame, device: device, "the camera sent a frame larger than \(V4L2Capture.maxFrameBytes >> 20) MiB\(at)")
        case EIO, EPROTO:
            self.init(.failed, device: device, "the camera's driver failed\(at): \(words)")
        default:
            self.init(.failed, device: device, "the camera failed\(at): \(words)")
        }
    }

    /// `CAMERA_BUSY`, `CAMERA_DENIED`, or `CAMERA_ERROR`.
    public var code: BridgeErrorCode {
        switch kind {
        case .busy: return .cameraBusy
        case .denied: return .cameraDenied
        default: return .cameraError
        }
    }

    public var description: String { "\(device): \(message)" }
}
