/// How a host presents itself to journeys: its version, the capabilities it reports when it is
/// built from a fixed description, the bootstrap script pages run first, and the log bound.
public struct BridgeConfiguration: Sendable {
    /// The name pages post to: `window.webkit.messageHandlers.<name>.postMessage`.
    public static let defaultMessageHandlerName = "gbgBridge"

    /// The script every page runs at document start, before its own scripts: it guarantees that
    /// `window.GBGBridge.receive` exists so an early host message never meets `undefined`.
    public static let defaultBootstrapScript = """
        window.GBGBridge = window.GBGBridge || {};
        window.GBGBridge.receive = window.GBGBridge.receive || function(msg) {};
        """

    /// The `environment` this host reports in `capability.query`.
    public static let environment = "linux"

    public var hostVersion: String
    /// Capabilities reported by the simple query provider (`BridgeHost(configuration:)`).
    public var capabilities: [String: BridgeCapabilityInfo]
    public var bootstrapScript: String
    public var messageHandlerName: String
    /// How many received messages `BridgeHost.receivedMessages` keeps; the oldest are dropped.
    public var receivedMessagesLimit: Int

    public init(hostVersion: String = "1.0",
                capabilities: [String: BridgeCapabilityInfo] = [:],
                bootstrapScript: String = BridgeConfiguration.defaultBootstrapScript,
                messageHandlerName: String = BridgeConfiguration.defaultMessageHandlerName,
                receivedMessagesLimit: Int = 1_000) {
        self.hostVersion = hostVersion
        self.capabilities = capabilities
        self.bootstrapScript = bootstrapScript
        self.messageHandlerName = messageHandlerName
        self.receivedMessagesLimit = max(0, receivedMessagesLimit)
    }
}
