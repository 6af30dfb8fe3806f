/// Handles every request for one action. Register with `BridgeHost.register(handler:)`; the host
/// calls `handle` on the main actor and the handler answers through the responder, now or later.
@MainActor
public protocol BridgeCapabilityHandler: AnyObject {
    /// The action this handler answers, e.g. `"capability.query"`.
    var action: String { get }
    func handle(_ request: BridgeMessage, responder: BridgeResponder)
}

/// Follows what a host receives and sends. Every method has an empty default.
@MainActor
public protocol BridgeHostDelegate: AnyObject {
    /// Every valid message from the page, requests included, after it was logged.
    func bridgeHost(_ host: BridgeHost, didReceive message: BridgeMessage)
    /// A request that no slot, custom capability or handler takes; it waits in `pendingRequests`
    /// until `respond(to:status:data:error:)` answers it.
    func bridgeHost(_ host: BridgeHost, unhandledRequest request: BridgeMessage)
    /// A message the host delivered to the page.
    func bridgeHost(_ host: BridgeHost, didSend message: BridgeMessage)
    /// A new `lastError`.
    func bridgeHost(_ host: BridgeHost, didEncounterError error: String)
}

extension BridgeHostDelegate {
    public func bridgeHost(_ host: BridgeHost, didReceive message: BridgeMessage) {}
    public func bridgeHost(_ host: BridgeHost, unhandledRequest request: BridgeMessage) {}
    public func bridgeHost(_ host: BridgeHost, didSend message: BridgeMessage) {}
    public func bridgeHost(_ host: BridgeHost, didEncounterError error: String) {}
}
