/// Declares the host application's version and supported capabilities.
public struct BridgeConfiguration: Sendable {
    /// The name pages post to: `window.webkit.messageHandlers.<name>.postMessage`.
    public static let defaultMessageHandlerName = "gbgBridge"

    /// The script every page runs at document start, before its own scripts: it guarantees that
    /// `window.GBGBridge.receive` exists so an early host message never meets `undefined`.
    public static let defaultBootstrapScript = """
        window.GBGBridge = window.GBGBridge || {};
        window.GBGBridge.receive = window.GBGBridge.receive || function(){};
        """

    /// The `environment` this host reports in `capability.query`.
    public static let environment = "linux"

    /// The host app version string, reported to the journey by capability queries.
    public var hostVersion: String
    /// Capability declarations (reported as configured by `BridgeHost(configuration:)`).
    public var capabilities: [String: BridgeCapabilityInfo]
    /// Custom bootstrap JavaScript, or `nil` for the default.
    public var bootstrapScript: String?

    // Linux additions (set them after `init`): the page-facing handler name and the bounds a host
    // keeps on what a page can make it hold.

    /// The message handler name pages post to (`gbgBridge`).
    public var messageHandlerName = BridgeConfiguration.defaultMessageHandlerName
    /// How many received messages `BridgeHost.receivedMessages` keeps; the oldest are dropped.
    public var receivedMessagesLimit = 1_000
    /// How many bytes (of JSON text) `receivedMessages` keeps at most; the oldest are dropped.
    public var receivedMessagesByteLimit = 2 << 20
    /// A received message larger than this is logged with its `data` elided (routing always sees
    /// the whole message).
    public var loggedMessageByteLimit = 64 << 10
    /// How many requests a host serves or holds at once (handlers running, capture slots busy,
    /// `pendingRequests`); a request beyond that is answered `error` `TOO_MANY_REQUESTS`.
    public var maxRequestsInFlight = 256
    /// How many bytes of requests (as received) a host holds at once while serving them or
    /// waiting for the app; a request beyond that is answered `error` `TOO_MANY_REQUESTS`.
    public var maxRequestBytesInFlight = 16 << 20

    public init(hostVersion: String, capabilities: [String: BridgeCapabilityInfo], bootstrapScript: String? = nil) {
        self.hostVersion = hostVersion
        self.capabilities = capabilities
        self.bootstrapScript = bootstrapScript
    }

    /// The script pages run at document start: `bootstrapScript`, or the default one.
    public var effectiveBootstrapScript: String { bootstrapScript ?? Self.defaultBootstrapScript }
}
