import Foundation
import GBGBridge
import GBGBridgeStubs
import ImageCodecs

/// Which camera a slot would use now, as `capability.query` and `/diagnostics` report it.
public struct CameraProbe: Sendable, Encodable {
    public enum State: String, Sendable, Encodable {
        /// The drawn placeholder (`stub`, or `auto` without a camera).
        case stub
        /// A camera this process can open.
        case ready
        /// A camera this process may not open.
        case denied
        /// The configured device is not there.
        case unplugged
        /// The device is there but offers nothing this host converts (or is no capture device).
        case unsupported
    }

    public var state: State
    public var device: String?
    public var name: String?
    /// The format and size a capture would ask for.
    public var format: String?
    public var resolution: String?
    public var message: String?

    init(settings: CameraSettings) {
        state = settings.source == .stub ? .stub : .unplugged
    }

    /// The slot's `permissionState`: not applicable for the drawing, else what opening the camera says.
    public var permission: PermissionState {
        switch state {
        case .stub: return .notApplicable
        case .ready, .unsupported: return .granted
        case .denied: return .denied
        case .unplugged: return .notDetermined
        }
    }

    /// The slot's `constraints` in `capability.query`.
    public var constraints: [String: JSONValue] {
        var result: [String: JSONValue] = ["state": .string(state.rawValue), "device": .string(device ?? (state == .stub ? "stub" : "none"))]
        if let format { result["format"] = .string(format) }
        if let resolution { result["resolution"] = .string(resolution) }
        if let name { result["name"] = .string(name) }
        return result
    }

    /// Looks at the configured camera now, on a Dispatch thread (opening a device can block briefly).
    static func run(_ settings: CameraSettings) async -> CameraProbe {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: probe(settings)) }
        }
    }

    public static func probe(_ settings: CameraSettings) -> CameraProbe {
        var probe = CameraProbe(settings: settings)
        let camera: CameraDevice
        switch CameraPhoto.resolve(settings.source) {
        case .stub:
            probe.state = .stub
            probe.format = "drawn"
            return probe
        case .failed(let error):
            probe.state = error.kind == .denied ? .denied : error.kind == .unsupported ? .unsupported : .unplugged
            probe.device = error.device
            probe.message = error.message
            return probe
        case .camera(let found):
            camera = found
        }
        probe.device = camera.path
        probe.name = camera.name
        guard camera.accessible else {
            probe.state = .denied
            probe.message = CameraError(errno: camera.openError, device: camera.path, stage: "").message
            return probe
        }
        let modes = settings.request.format.map { format in camera.modes.filter { $0.format == format } } ?? camera.modes
        guard let mode = CameraDevice.choose(from: modes, target: settings.request.target) else {
            probe.state = .unsupported
            probe.message = "none of the camera's formats is one this host converts"
            return probe
        }
        probe.state = .ready
        probe.format = mode.format.description
        probe.resolution = "\(mode.width)x\(mode.height)"
        return probe
    }
}

/// Taking one photo for a slot: the camera's frame as the slot's result, or the drawing.
enum CameraPhoto {
    /// A camera selfie's unencrypted blob: a real photo, but nothing assessed its liveness.
    static let cameraBlobPlaceholder = Data(#"{"stub":false,"source":"camera","liveness":"not-assessed"}"#.utf8)

    enum Outcome: Sendable {
        case photo(CaptureResult, CapturedFrame)
        case stub(CaptureResult)
        case failed(CameraError)

        var result: CaptureResult {
            switch self {
            case .photo(let result, _), .stub(let result): return result
            case .failed(let error): return .failed(code: error.code.rawValue, message: error.message, recoverable: true)
            }
        }

        /// The metric's outcome label: `success`, `stub`, or the error code.
        var label: String {
            switch self {
            case .photo: return "success"
            case .stub: return "stub"
            case .failed(let error): return error.code.rawValue
            }
        }
    }

    enum Resolved {
        case stub
        case camera(CameraDevice)
        case failed(CameraError)
    }

    /// The camera a source stands for now: `auto` takes the first capture device that offers a
    /// format this host converts and that this process may open; with cameras but none it may
    /// open, that is a permission problem, not a reason to draw.
    static func resolve(_ source: CameraSource) -> Resolved {
        switch source {
        case .stub:
            return .stub
        case .device(let path):
            guard let camera = CameraDevice.describe(path) else {
                return .failed(CameraError(.unplugged, device: path, "no camera at \(path) (unplugged, or not a V4L2 capture device)"))
            }
            return .camera(camera)
        case .auto:
            let cameras = CameraDevice.list()
            if let usable = cameras.first(where: { $0.accessible && CameraDevice.choose(from: $0.modes, target: Resolution(width: 1920, height: 1080)) != nil }) {
                return .camera(usable)
            }
            if let denied = cameras.first(where: { !$0.accessible && ($0.openError == EACCES || $0.openError == EPERM) }) {
                return .camera(denied)
            }
            return .stub
        }
    }

    static func take(role: CameraService.Role, settings: CameraSettings) async -> Outcome {
        let resolved = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: resolve(settings.source)) }
        }
        let camera: CameraDevice
        switch resolved {
        case .stub:
            do {
                return .stub(role == .document ? .document(try StubDocumentCamera.capture()) : .selfie(try StubSelfieCamera.capture()))
            } catch {
                return .failed(CameraError(.failed, device: "stub", "the placeholder image could not be made: \(error)"))
            }
        case .failed(let error):
            return .failed(error)
        case .camera(let found):
            camera = found
        }
        let frame: CapturedFrame
        do {
            frame = try await V4L2Capture.capture(camera.path, settings.request)
        } catch {
            return .failed(error)
        }
        do {
            let image = frame.image
            switch role {
            case .document:
                let png = try await DecodeQueue.shared.run { try ImageCodecs.encodePNG(image) }
                return .photo(.document(DocumentCaptureResult(imageData: Data(png), width: image.width, height: image.height, mimeType: "image/png")), frame)
            case .selfie:
                let jpeg = try await DecodeQueue.shared.run { try ImageCodecs.encodeJPEG(image, quality: 90) }
                return .photo(.selfie(SelfieCaptureResult(previewImageData: Data(jpeg), width: image.width, height: image.height, mimeType: "image/jpeg",
                                                          encryptedBlob: StubSelfieCamera.encryptedBlobPlaceholder,
                                                          unencryptedBlob: cameraBlobPlaceholder)), frame)
            }
        } catch {
            return .failed(CameraError(.failed, device: camera.path, "the photo could not be encoded: \(error)"))
        }
    }
}
