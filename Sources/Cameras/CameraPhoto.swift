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

    /// How one photo went: the slot's result, and what it came from.
    struct Outcome: Sendable {
        enum Source: Sendable {
            case camera(CapturedFrame)
            case stub
            case failed(CameraError)
        }

        var source: Source
        /// The MRZ read from a document photo (its verdicts already decided across frames).
        var mrz: DocumentMRZ.Outcome?
        private var document: DocumentCaptureResult?
        private var selfie: SelfieCaptureResult?

        static func failed(_ error: CameraError) -> Outcome { Outcome(source: .failed(error)) }

        init(source: Source, document: DocumentCaptureResult? = nil, selfie: SelfieCaptureResult? = nil, mrz: DocumentMRZ.Outcome? = nil) {
            self.source = source
            self.document = document
            self.selfie = selfie
            self.mrz = mrz
        }

        var result: CaptureResult {
            switch source {
            case .failed(let error): return .failed(code: error.code.rawValue, message: error.message, recoverable: true)
            case .camera, .stub:
                if var document {
                    if let mrz, mrz.reading.accessKeyValid || !mrz.candidates.isEmpty { document.mrz = DocumentMRZ.json(mrz) }
                    return .document(document)
                }
                if let selfie { return .selfie(selfie) }
                return .failed(code: BridgeErrorCode.cameraError.rawValue, message: "no photo", recoverable: true)
            }
        }

        /// The metric's outcome label: `success`, `stub`, or the error code.
        var label: String {
            switch source {
            case .camera: return "success"
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
                if role == .document {
                    return Outcome(source: .stub, document: try StubDocumentCamera.capture(), mrz: await DocumentMRZ.stubReading.value)
                }
                return Outcome(source: .stub, selfie: try StubSelfieCamera.capture())
            } catch {
                return .failed(CameraError(.failed, device: "stub", "the placeholder image could not be made: \(error)"))
            }
        case .failed(let error):
            return .failed(error)
        case .camera(let found):
            camera = found
        }
        let frame: CapturedFrame
        var request = settings.request
        // A document photo keeps two frames before it, so that its MRZ is read three times.
        if role == .document { request.keep = 3 }
        do {
            frame = try await V4L2Capture.capture(camera.path, request)
        } catch {
            return .failed(error)
        }
        do {
            let image = frame.image
            switch role {
            case .document:
                let png = try await DecodeQueue.shared.run { try ImageCodecs.encodePNG(image) }
                let mrz = await DocumentMRZ.read(frame.earlierFrames + [image], needsAgreement: true)
                return Outcome(source: .camera(frame), document: DocumentCaptureResult(imageData: Data(png), width: image.width, height: image.height,
                                                                                       mimeType: "image/png"), mrz: mrz)
            case .selfie:
                let jpeg = try await DecodeQueue.shared.run { try ImageCodecs.encodeJPEG(image, quality: 90) }
                return Outcome(source: .camera(frame), selfie: SelfieCaptureResult(previewImageData: Data(jpeg), width: image.width, height: image.height,
                                                                                   mimeType: "image/jpeg", encryptedBlob: StubSelfieCamera.encryptedBlobPlaceholder,
                                                                                   unencryptedBlob: cameraBlobPlaceholder))
            }
        } catch {
            return .failed(CameraError(.failed, device: camera.path, "the photo could not be encoded: \(error)"))
        }
    }
}
