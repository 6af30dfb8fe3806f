import CV4L2Shim
import Foundation
import ImageCodecs
import Synchronization

/// What a capture asks of a camera.
public struct CaptureRequest: Sendable, Hashable {
    /// The frame size wanted: the largest the camera offers within it is taken (else its smallest).
    public var target: Resolution
    /// A pixel format to use instead of the preference order (`camera capture --format`).
    public var format: PixelFormat?
    /// Frames taken and dropped before the one kept, so that exposure and white balance settle.
    public var warmupFrames: Int
    /// The longest wait for any one frame.
    public var frameTimeout: Duration
    /// The longest a whole capture may take, opening the device to the frame in RGB. Past it the
    /// caller gets `CAMERA_ERROR` at once, even when the driver is stuck inside a call (that
    /// camera is then refused until the call returns).
    public var timeLimit: Duration
    /// Frames kept from the stream, the photo last (1…4): a reader of the page compares them.
    public var keep: Int = 1

    /// The frame as large as a document camera gives, within 1920×1080.
    public static let document = CaptureRequest(target: Resolution(width: 1920, height: 1080))
    /// 1280×720 for a selfie.
    public static let selfie = CaptureRequest(target: Resolution(width: 1280, height: 720))

    public init(target: Resolution, format: PixelFormat? = nil, warmupFrames: Int = 4,
                frameTimeout: Duration = .seconds(3), timeLimit: Duration = .seconds(20)) {
        self.target = target
        self.format = format
        self.warmupFrames = max(0, min(warmupFrames, 120))
        self.frameTimeout = frameTimeout
        self.timeLimit = timeLimit
    }
}

/// One frame from a camera, in RGB, and what it was taken as.
public struct CapturedFrame: Sendable {
    public let device: String
    public let format: PixelFormat
    /// The photo: the last frame of the stream.
    public let image: ImageCodecs.RGBImage
    /// The frames kept before it (`CaptureRequest.keep` − 1 of them), oldest first.
    public let earlierFrames: [ImageCodecs.RGBImage]
    public let framesTaken: Int
    /// Frames the driver flagged as broken and that were skipped.
    public let brokenFrames: Int
    public let duration: Duration
}

/// Captures from V4L2 devices: one frame at a time per device, on a thread of its own (never the
/// Swift cooperative pool), every wait bounded.
public enum V4L2Capture {
    /// The largest frame a camera may hand over (an MJPEG frame or a raw 4K frame fit easily).
    static let maxFrameBytes = 96 << 20

    /// One frame from `device` (a node or a `/dev/v4l/by-id/…` link).
    public static func capture(_ device: String, _ request: CaptureRequest) async throws(CameraError) -> CapturedFrame {
        let started = ContinuousClock.now
        let deadline = started + request.timeLimit
        guard let camera = CameraDevice.describe(device) else {
            throw CameraError(.unplugged, device: device, "no such camera (nothing at \(device), or it is not a V4L2 capture device)")
        }
        guard camera.accessible else { throw CameraError(errno: camera.openError, device: device, stage: "") }
        let modes = request.format.map { format in camera.modes.filter { $0.format == format } } ?? camera.modes
        guard let mode = CameraDevice.choose(from: modes, target: request.target) else {
            let offered = Set(camera.modes.map(\.format.description)).sorted().joined(separator: ", ")
            throw CameraError(.unsupported, device: device, request.format.map { "the camera does not offer \($0) (it offers \(offered.isEmpty ? "nothing" : offered))" }
                              ?? "none of the camera's formats (\(offered.isEmpty ? "none" : offered)) is one this host converts")
        }
        let lock = try await DeviceLocks.shared.acquire(camera.path, until: deadline)
        defer { lock.release() }
        let job = CaptureJob(path: camera.path, name: device, mode: mode, request: request)
        let image = try await job.run(until: deadline, onStuck: { lock.markStuck() })
        return CapturedFrame(device: camera.path, format: image.format, image: image.images[image.images.count - 1],
                             earlierFrames: Array(image.images.dropLast()), framesTaken: image.frames, brokenFrames: image.broken,
                             duration: ContinuousClock.now - started)
    }
}

/// One capture on its own thread, with a pipe that ends its wait for frames at once.
private final class CaptureJob: Sendable {
    struct Output: Sendable {
        var format: PixelFormat
        /// Oldest first; never empty.
        var images: [ImageCodecs.RGBImage]
        var frames: Int
        var broken: Int
    }

    let path: String
    let name: String
    let mode: CameraDevice.Mode
    let request: CaptureRequest
    private let cancelPipe: (read: Int32, write: Int32)?
    private let waiter = Mutex<CheckedContinuation<Result<Output, CameraError>, Never>?>(nil)

    init(path: String, name: String, mode: CameraDevice.Mode, request: CaptureRequest) {
        self.path = path
        self.name = name
        self.mode = mode
        self.request = request
        var fds: [Int32] = [-1, -1]
        cancelPipe = pipe(&fds) == 0 ? (fds[0], fds[1]) : nil
        if let cancelPipe { _ = fcntl(cancelPipe.write, F_SETFD, FD_CLOEXEC); _ = fcntl(cancelPipe.read, F_SETFD, FD_CLOEXEC) }
    }

    deinit {
        if let cancelPipe {
            close(cancelPipe.read)
            close(cancelPipe.write)
        }
    }

    /// Runs the capture; past `deadline` (or when the task is cancelled) the wait for frames is
    /// ended, and if the driver does not give the thread back within a second the caller is
    /// answered anyway and `onStuck` is told.
    func run(until deadline: ContinuousClock.Instant, onStuck: @escaping @Sendable () -> Void) async throws(CameraError) -> Output {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Output, CameraError>, Never>) in
                waiter.withLock { $0 = continuation }
                let thread = Thread { [self] in
                    let result = Result { () throws(CameraError) -> Output in try self.captureBlocking() }
                    if !self.finish(result) {
                        // The caller was answered when the driver held on; it has let go now.
                        DeviceLocks.shared.unstick(self.path)
                    }
                }
                thread.name = "gbgbridge.camera"
                thread.start()
                let remaining = deadline - ContinuousClock.now
                DispatchQueue.global().asyncAfter(deadline: .now() + Self.seconds(remaining)) { [self] in
                    self.interrupt()
                    DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [self] in
                        // Still running a second after the interruption: the driver holds the
                        // thread in a call. The camera is marked stuck before the caller hears.
                        self.finish(.failure(CameraError(.timeout, device: name, "the camera did not give a frame within \(Self.seconds(request.timeLimit)) s, and its driver has not returned from its last call")),
                                    first: onStuck)
                    }
                }
            }
        } onCancel: {
            interrupt()
        }
        return try result.get()
    }

    /// Hands `result` to the waiting caller, once (`first` runs just before, under the same lock);
    /// false when the caller was answered already.
    @discardableResult
    private func finish(_ result: Result<Output, CameraError>, first: () -> Void = {}) -> Bool {
        guard let continuation = waiter.withLock({ state -> CheckedContinuation<Result<Output, CameraError>, Never>? in
            defer { state = nil }
            if state != nil { first() }
            return state
        }) else { return false }
        continuation.resume(returning: result)
        return true
    }

    private func interrupt() {
        guard let cancelPipe else { return }
        var byte: UInt8 = 1
        _ = write(cancelPipe.write, &byte, 1)
    }

    private func captureBlocking() throws(CameraError) -> Output {
        let keep = max(1, min(4, request.keep))
        var data = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: keep)
        var sizes = [Int](repeating: 0, count: keep)
        var frame = CV4L2Shim_frame()
        var stage = [CChar](repeating: 0, count: 96)
        let timeoutMs = Int32(clamping: Int(Self.seconds(request.frameTimeout) * 1000))
        let rc = CV4L2Shim_capture_frames(path, mode.format.fourcc, UInt32(mode.width), UInt32(mode.height), Int32(request.warmupFrames),
                                          Int32(keep), max(1, timeoutMs), V4L2Capture.maxFrameBytes, cancelPipe?.read ?? -1, &data, &sizes,
                                          &frame, &stage, Int32(stage.count))
        defer { data.forEach { if let pointer = $0 { CV4L2Shim_free(pointer) } } }
        let step = String(decoding: stage.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let wanted = request.warmupFrames + keep
        guard rc == 0, data.allSatisfy({ $0 != nil }) else {
            if rc == ETIMEDOUT {
                throw CameraError(.timeout, device: name, "no frame within \(Self.seconds(request.frameTimeout)) s (\(frame.frames_dequeued) of \(wanted) frames came)")
            }
            if rc == ECANCELED {
                throw CameraError(.timeout, device: name, "the capture was stopped after \(Self.seconds(request.timeLimit)) s or cancelled (\(frame.frames_dequeued) of \(wanted) frames came)")
            }
            throw CameraError(errno: rc == 0 ? EPROTO : rc, device: name, stage: step)
        }
        let format = PixelFormat(fourcc: frame.fourcc)
        let encoding = FrameConversion.Encoding(colorspace: frame.colorspace, ycbcrEncoding: frame.ycbcr_enc, quantization: frame.quantization)
        var images: [ImageCodecs.RGBImage] = []
        for (pointer, size) in zip(data, sizes) {
            guard let pointer else { continue }
            let bytes = Array(UnsafeBufferPointer(start: pointer, count: size))
            do {
                images.append(try FrameConversion.rgb(bytes, format: format, width: Int(frame.width), height: Int(frame.height),
                                                      bytesPerLine: Int(frame.bytes_per_line), encoding: encoding))
            } catch {
                throw CameraError(.corruptFrame, device: name, error.description)
            }
        }
        return Output(format: format, images: images, frames: Int(frame.frames_dequeued), broken: Int(frame.error_frames))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// One capture per camera at a time in this process: a second waits (bounded by its own
/// deadline); a camera whose driver kept an abandoned capture is refused until that call returns.
final class DeviceLocks: Sendable {
    static let shared = DeviceLocks()

    private struct Entry {
        var held = false
        var stuck = false
    }
    private let entries = Mutex<[String: Entry]>([:])

    final class Lock: Sendable {
        let path: String
        let owner: DeviceLocks
        init(path: String, owner: DeviceLocks) {
            self.path = path
            self.owner = owner
        }
        /// The capture was abandoned inside the driver: the camera stays refused until `unstick`.
        func markStuck() { owner.entries.withLock { $0[path, default: Entry()].stuck = true } }
        func release() { owner.entries.withLock { $0[path, default: Entry()].held = false } }
    }

    func acquire(_ path: String, until deadline: ContinuousClock.Instant) async throws(CameraError) -> Lock {
        while true {
            let state = entries.withLock { entries -> (acquired: Bool, stuck: Bool) in
                var entry = entries[path] ?? Entry()
                defer { entries[path] = entry }
                if entry.stuck { return (false, true) }
                if entry.held { return (false, false) }
                entry.held = true
                return (true, false)
            }
            if state.stuck {
                throw CameraError(.busy, device: path, "the last capture from this camera has not come back from its driver; unplug and replug it, or restart the host")
            }
            if state.acquired { return Lock(path: path, owner: self) }
            guard ContinuousClock.now < deadline, !Task.isCancelled else {
                throw CameraError(.busy, device: path, "another capture from this camera is in progress in this host")
            }
            try? await Task.sleep(for: .milliseconds(25))
        }
    }

    /// The abandoned call on `path` has returned: the camera may be used again.
    func unstick(_ path: String) {
        entries.withLock { $0[path]?.stuck = false }
    }
}
