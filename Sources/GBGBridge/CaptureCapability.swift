import Observation

/// A typed capability slot for a capture operation (document or selfie). Setting `handler`
/// declares support; the host routes the slot's requests to it, encodes the `CaptureResult` the
/// handler returns, and answers a second request while one is active with `BUSY`.
///
/// The handler either captures imperatively and returns the result, or calls `awaitCompletion()`
/// and lets view-layer code finish the capture with `complete(_:)`.
@MainActor
@Observable
public final class CaptureCapability {
    /// The capability identifier reported by `capability.query`, e.g. `camera.document`.
    public let id: String
    /// The bridge action this slot handles, e.g. `camera.document.capture`.
    public let actionId: String
    /// The handler: called for each accepted request, off the main actor; its result is the
    /// response. Setting it declares support.
    public var handler: (@Sendable (BridgeMessage) async -> CaptureResult)? {
        didSet { onSupportChange?() }
    }
    /// Runtime toggle: when `false` the slot reports as unsupported even with a handler.
    public var isEnabled: Bool = true {
        didSet { onSupportChange?() }
    }
    /// The request in flight, or `nil`: set before the handler runs, cleared when it has answered.
    public private(set) var activeRequest: BridgeMessage?
    /// The current permission state, included in query responses.
    public var permissionState: PermissionState = .notDetermined
    /// Version override; queries report `"1.0"` for a supported slot without one.
    public var version: String?
    /// Constraints reported in `capability.query` (Linux addition; `nil` on iOS).
    public var constraints: [String: JSONValue]?

    @ObservationIgnored private var waiters: [Int: CheckedContinuation<CaptureResult, Never>] = [:]
    @ObservationIgnored private var nextWaiter = 0
    /// A `complete(_:)` that came before the handler started waiting (the first one wins).
    @ObservationIgnored private var earlyResult: CaptureResult?
    /// Why the host last cancelled a request here, for its handler's `awaitCompletion()`.
    @ObservationIgnored private var lastCancelReason: String?
    @ObservationIgnored private var task: Task<Void, Never>?
    /// Bumped per request, so a handler that returns after its request was cancelled is ignored.
    @ObservationIgnored private var generation = 0
    @ObservationIgnored var onSupportChange: (@MainActor () -> Void)?

    public init(id: String, actionId: String, version: String? = nil) {
        self.id = id
        self.actionId = actionId
        self.version = version
    }

    /// `handler != nil && isEnabled`.
    public var isSupported: Bool { handler != nil && isEnabled }

    /// The slot's entry for `capability.query`: supported with its version (`"1.0"` by default)
    /// and permission state; unsupported with no permission state and the version override only.
    public func buildCapabilityInfo() -> BridgeCapabilityInfo {
        guard isSupported else { return BridgeCapabilityInfo(supported: false, version: version) }
        return BridgeCapabilityInfo(supported: true, version: version ?? "1.0", constraints: constraints,
                                    permissionState: permissionState.rawValue)
    }

    /// Suspends the calling handler until `complete(_:)` is called, and returns that result. A
    /// result completed before the handler got here is returned at once; a cancelled task gets
    /// `.cancelled`.
    public func awaitCompletion() async -> CaptureResult {
        if Task.isCancelled {
            // The handler of a request the host cancelled (perhaps before it began to wait).
            return .cancelled(reason: lastCancelReason ?? Self.cancelledReason)
        }
        if let result = earlyResult {
            earlyResult = nil
            return result
        }
        let key = nextWaiter
        nextWaiter += 1
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(returning: .cancelled(reason: lastCancelReason ?? Self.cancelledReason))
                } else {
                    waiters[key] = continuation
                }
            }
        } onCancel: {
            Task { @MainActor [weak self] in
                guard let self else { return }
                self.waiters.removeValue(forKey: key)?.resume(returning: .cancelled(reason: self.lastCancelReason ?? Self.cancelledReason))
            }
        }
    }

    nonisolated static let cancelledReason = "The capture was cancelled"

    /// Resumes the waiting handler with `result`. When the handler has not started waiting yet the
    /// first result is kept for it; with no request active the call is ignored.
    public func complete(_ result: CaptureResult) {
        if !waiters.isEmpty {
            let pending = waiters
            waiters.removeAll()
            pending.sorted { $0.key < $1.key }.forEach { $0.value.resume(returning: result) }
        } else if activeRequest != nil, earlyResult == nil {
            earlyResult = result
        }
    }

    /// Accepts `request` and runs the handler; `answer` is called with the result unless the
    /// request is cancelled first. The slot must be supported and idle.
    func start(_ request: BridgeMessage, answer: @escaping @MainActor (BridgeMessage, CaptureResult) -> Void) {
        guard let handler else { return }
        generation &+= 1
        let current = generation
        activeRequest = request
        earlyResult = nil
        task = Task { [weak self] in
            let result = await handler(request)
            guard let self, self.generation == current, self.activeRequest != nil else { return }
            self.finish()
            answer(request, result)
        }
    }

    /// Ends the active request without answering it (the host answers `cancelled`): the handler's
    /// task is cancelled and whoever waits in `awaitCompletion()` gets `.cancelled(reason:)`.
    func cancelActive(reason: String) {
        guard activeRequest != nil else { return }
        let handlerTask = task
        lastCancelReason = reason
        finish()
        handlerTask?.cancel()
        complete(.cancelled(reason: reason))
    }

    private func finish() {
        generation &+= 1
        activeRequest = nil
        earlyResult = nil
        task = nil
    }
}
