/// The host → page delivery channel: the Linux stand-in for a `WKWebView`. `deliver` receives the
/// JSON text that the page's `window.GBGBridge.receive` must be called with.
@MainActor
public protocol BridgeTransport: AnyObject {
    func deliver(_ json: String)
}

/// A transport that keeps what the host sent and lets a test or an embedder post page messages
/// into the host, with no browser involved.
@MainActor
public final class InMemoryBridgeTransport: BridgeTransport {
    /// Everything the host delivered, oldest first, as JSON text.
    public private(set) var sent: [String] = []
    weak var host: BridgeHost?

    public init() {}

    public func deliver(_ json: String) {
        sent.append(json)
    }

    /// Hands JSON text to the attached host, as if the page had posted it.
    public func post(_ json: String) {
        host?.receive(json)
    }

    /// What the host sent, decoded (messages that do not decode are skipped).
    public var sentMessages: [BridgeMessage] {
        sent.compactMap { try? BridgeMessage.decode(json: $0) }
    }

    /// Forgets what was sent so far.
    public func clear() {
        sent.removeAll()
    }
}
