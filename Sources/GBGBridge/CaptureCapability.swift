import Observation

/// A typed capability slot (document or selfie capture) that an app fills by setting `handler`:
/// setting it declares the capability supported, and the host routes its requests here.
///
/// When a request arrives the slot records it in `activeRequest` and calls the handler, which
/// starts the capture (a camera, a stub) and eventually calls `complete(_:)`. The host answers
/// the page from that result. A second request while one is active is answered `BUSY`.
@MainActor
@Observable
public final class CaptureCapability {
    /// The capability id reported by `capability.query`, e.g. `camera.document`.
    public let id: String
    /// The request action routed to this slot, e.g. `camera.document.capture`.
    public let actionId: String
    /// Called with each accepted request. `nil` means the host does not offer this capability.
    public var handler: (@MainActor (BridgeMessage) -> Void)?
    /// Turns the capability off without removing the handler.
    public var isEnabled: Bool = true
    /// The request being served, `nil` when idle.
    public private(set) var activeRequest: BridgeMessage?
    public var permissionState: PermissionState = .notDetermined
    public var version: String = "1.0"
    /// Optional constraints reported in `capability.query` (Linux addition; `nil` on iOS).
    public var constraints: [String: JSONValue]?

    @ObservationIgnored private var waiters: [Int: CheckedContinuation<CaptureResult, Never>] = [:]
    @ObservationIgnored private var nextWaiter = 0
    @ObservationIgnored var onComplete: (@MainActor (BridgeMessage, CaptureResult) -> Void)?

    public init(id: String, actionId: String) {
        self.id = id
        self.actionId = actionId
    }

    /// A slot is supported when it has a handler and is enabled.
    public var isSupported: Bool { handler != nil && isEnabled }

    /// The slot's entry for `capability.query`.
    public func buildCapabilityInfo() -> BridgeCapabilityInfo {
        BridgeCapabilityInfo(supported: isSupported, version: version, permissionState: permissionState,
                             constraints: constraints)
    }

    /// Waits for the active (or next) request to be completed and returns its result. A task that
    /// is cancelled while waiting gets `.cancelled`.
    public func awaitCompletion() async -> CaptureResult {
        let key = nextWaiter
        nextWaiter += 1
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(returning: .cancelled)
                } else {
                    waiters[key] = continuation
                }
            }
        } onCancel: {
            Task { @MainActor [weak self] in self?.waiters.removeValue(forKey: key)?.resume(returning: .cancelled) }
        }
    }

    /// Finishes the active request with `result`: the host answers the page and the slot becomes
    /// idle. Ignored when no request is active (for example a second call for the same request).
    public func complete(_ result: CaptureResult) {
        guard let request = activeRequest else { return }
        activeRequest = nil
        let pending = waiters
        waiters.removeAll()
        pending.values.forEach { $0.resume(returning: result) }
        onComplete?(request, result)
    }

    /// Accepts `request` as the active one and runs the handler.
    func begin(_ request: BridgeMessage) {
        activeRequest = request
        handler?(request)
    }
}
