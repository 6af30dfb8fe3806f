import Synchronization

/// Answers one request. Handlers receive it with the request and call `respond` once, from any
/// thread or task, whenever the work is done; only the first call has any effect.
public final class BridgeResponder: Sendable {
    /// The request being answered.
    public let request: BridgeMessage

    private struct State {
        var responded = false
        var cancelled = false
        var cancelHandlers: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())
    private let deliver: @Sendable (BridgeMessage, _ onMainActor: Bool) -> Void

    /// Creates a responder whose response goes to `deliver`, which must be safe to call from any
    /// thread; its second argument says whether the caller runs on the main actor.
    public init(request: BridgeMessage, deliver: @escaping @Sendable (BridgeMessage, _ onMainActor: Bool) -> Void) {
        self.request = request
        self.deliver = deliver
    }

    /// Whether a response has been sent already.
    public var hasResponded: Bool { state.withLock { $0.responded } }

    /// Sends the response with the request's correlation id and action. Returns `false` (and sends
    /// nothing) when the request was already answered.
    @discardableResult
    public func respond(status: BridgeResponseStatus, data: JSONValue? = nil,
                        error: BridgeErrorPayload? = nil,
                        isolation: isolated (any Actor)? = #isolation) -> Bool {
        let first = state.withLock { state -> Bool in
            guard !state.responded else { return false }
            state.responded = true
            state.cancelHandlers.removeAll()
            return true
        }
        guard first else { return false }
        deliver(.response(to: request.correlationId, action: request.payload.action, status: status,
                          data: data, error: error), isolation === MainActor.shared)
        return true
    }

    /// Sends `status: success` with `data`.
    @discardableResult
    public func succeed(_ data: JSONValue? = nil, isolation: isolated (any Actor)? = #isolation) -> Bool {
        respond(status: .success, data: data, isolation: isolation)
    }

    /// Sends `status: error` with the given error.
    @discardableResult
    public func fail(code: String, message: String, recoverable: Bool,
                     isolation: isolated (any Actor)? = #isolation) -> Bool {
        respond(status: .error, error: BridgeErrorPayload(code: code, message: message, recoverable: recoverable),
                isolation: isolation)
    }

    /// Registers work to run if the host cancels this request (its page went away, the transport
    /// closed). Runs at once when the request was cancelled already; never runs after a response.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if !state.responded { state.cancelHandlers.append(handler) }
            return false
        }
        if runNow { handler() }
    }

    /// Whether the host cancelled this request.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels the request: runs the cancellation handlers and answers `cancelled` with code
    /// `CANCELLED`, unless a response was sent first.
    @discardableResult
    public func cancel(reason: String = "The request was cancelled",
                       isolation: isolated (any Actor)? = #isolation) -> Bool {
        let handlers = state.withLock { state -> [@Sendable () -> Void]? in
            guard !state.responded else { return nil }
            state.responded = true
            state.cancelled = true
            defer { state.cancelHandlers.removeAll() }
            return state.cancelHandlers
        }
        guard let handlers else { return false }
        handlers.forEach { $0() }
        deliver(.response(to: request.correlationId, action: request.payload.action, status: .cancelled,
                          error: BridgeErrorPayload(code: "CANCELLED", message: reason, recoverable: true)),
                isolation === MainActor.shared)
        return true
    }
}
