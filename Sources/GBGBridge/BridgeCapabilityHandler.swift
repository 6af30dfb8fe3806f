/// The interface for objects that handle one bridge request action. Register with
/// `BridgeHost.register(handler:)`; the host calls `handle(request:responder:)` in a task of its own
/// for every matching request, and the handler answers once through the responder.
///
/// When the page goes away (or the host cancels its requests) that task is cancelled and the page
/// has been answered `cancelled` already; a later `respond` has no effect.
public protocol BridgeCapabilityHandler: AnyObject, Sendable {
    /// The action this handler answers, e.g. `"capability.query"` or `"nfc.read"`.
    var action: String { get }
    /// Performs the request and calls `responder.respond(...)` exactly once.
    func handle(request: BridgeMessage, responder: BridgeResponder) async
}

/// An observer of bridge activity. Every method has an empty default.
@MainActor
public protocol BridgeHostDelegate: AnyObject {
    /// Every message received from the web journey (requests, responses, events), after it was logged.
    func bridgeHost(_ host: BridgeHost, didReceive message: BridgeMessage)
    /// A request with no registered handler; it is also in `host.pendingRequests` until
    /// `respond(to:status:data:error:)` answers it.
    func bridgeHost(_ host: BridgeHost, unhandledRequest message: BridgeMessage)
    /// A message the host delivered to the page (Linux addition).
    func bridgeHost(_ host: BridgeHost, didSend message: BridgeMessage)
    /// A new `lastError` (Linux addition).
    func bridgeHost(_ host: BridgeHost, didEncounterError error: String)
}

extension BridgeHostDelegate {
    public func bridgeHost(_ host: BridgeHost, didReceive message: BridgeMessage) {}
    public func bridgeHost(_ host: BridgeHost, unhandledRequest message: BridgeMessage) {}
    public func bridgeHost(_ host: BridgeHost, didSend message: BridgeMessage) {}
    public func bridgeHost(_ host: BridgeHost, didEncounterError error: String) {}
}
