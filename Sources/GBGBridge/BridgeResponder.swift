import Dispatch
import Synchronization

/// A callback interface used to send a response from a capability handler back to the web journey.
///
/// Safe to call from any thread; the first call wins and later calls have no effect.
public protocol BridgeResponder: Sendable {
    /// Sends the response to the web journey for the associated request.
    func respond(status: BridgeResponseStatus, data: [String: JSONValue]?, error: BridgeErrorPayload?)
}

extension BridgeResponder {
    /// Sends `status: success` with `data` (Linux addition).
    public func succeed(_ data: [String: JSONValue]? = nil) {
        respond(status: .success, data: data, error: nil)
    }

    /// Sends `status: error` with the given error (Linux addition).
    public func fail(code: String, message: String, recoverable: Bool) {
        respond(status: .error, data: nil, error: BridgeErrorPayload(code: code, message: message, recoverable: recoverable))
    }

    /// Sends `status: error` with one of the host's codes (`cancelled` for `.cancelled`).
    public func fail(_ code: BridgeErrorCode, message: String, recoverable: Bool) {
        respond(status: code == .cancelled ? .cancelled : .error, data: nil,
                error: BridgeErrorPayload(code, message: message, recoverable: recoverable))
    }
}

/// The responder a `BridgeHost` hands to handlers: the first answer (or the host's cancellation)
/// claims the request; the answer reaches the host on the main actor.
final class HostResponder: BridgeResponder {
    let request: BridgeMessage
    private let answered = Mutex(false)
    private let finish: @MainActor @Sendable (BridgeMessage) -> Void

    init(request: BridgeMessage, finish: @escaping @MainActor @Sendable (BridgeMessage) -> Void) {
        self.request = request
        self.finish = finish
    }

    /// Marks the request answered; `false` when it was answered (or cancelled) already.
    func claim() -> Bool {
        answered.withLock { answered in
            defer { answered = true }
            return !answered
        }
    }

    func respond(status: BridgeResponseStatus, data: [String: JSONValue]?, error: BridgeErrorPayload?) {
        guard claim() else { return }
        let response = BridgeMessage.response(to: request.correlationId, action: request.payload.action, status: status,
                                              data: data, error: error)
        let finish = self.finish
        MainActorHop.run { finish(response) }
    }
}

/// Runs main-actor work now when the caller is on the main actor already (so a handler's answer
/// keeps its order with the events it sent before), and in a main-actor task otherwise.
enum MainActorHop {
    /// Marks the main queue, which is the main actor's executor: unlike `Thread.isMainThread`
    /// this holds after `dispatch_main()` too, when the main queue runs on a worker thread.
    private static let key: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    static var isOnMainActor: Bool { DispatchQueue.getSpecific(key: key) == true }

    static func run(_ body: @escaping @MainActor @Sendable () -> Void) {
        if isOnMainActor {
            MainActor.assumeIsolated(body)
        } else {
            Task { @MainActor in body() }
        }
    }
}
