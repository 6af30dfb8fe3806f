/// Which camera a capture slot uses: `auto` (the first capture device that works, else the drawn
/// stub), `stub` (always the drawn image, as the iOS Simulator does), or a device path —
/// `/dev/videoN`, or better `/dev/v4l/by-id/…`, which keeps a camera's role across reboots and
/// replugging.
public enum CameraSource: Sendable, Hashable, CustomStringConvertible {
    case auto
    case stub
    case device(String)

    /// `auto`, `stub`, or an absolute path under /dev; nil for anything else.
    public init?(_ text: String) {
        switch text {
        case "auto": self = .auto
        case "stub": self = .stub
        default:
            guard text.hasPrefix("/dev/"), text.utf8.count <= 1_024, !text.contains("/../"), !text.hasSuffix("/.."),
                  text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { return nil }
            self = .device(text)
        }
    }

    public var description: String {
        switch self {
        case .auto: return "auto"
        case .stub: return "stub"
        case .device(let path): return path
        }
    }

    /// What `--document-camera` / `--selfie-camera` accept, for usage errors.
    public static let accepted = "auto, stub, or a device path such as /dev/video0 or /dev/v4l/by-id/usb-…-video-index0"
}

/// How a slot takes its photo: the camera, the frame size, and the capture's bounds.
public struct CameraSettings: Sendable, Hashable {
    public var source: CameraSource
    public var request: CaptureRequest

    public init(source: CameraSource, request: CaptureRequest) {
        self.source = source
        self.request = request
    }

    public static let document = CameraSettings(source: .auto, request: .document)
    public static let selfie = CameraSettings(source: .auto, request: .selfie)
}
