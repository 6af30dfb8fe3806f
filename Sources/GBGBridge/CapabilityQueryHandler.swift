/// Answers `capability.query` with `{environment, hostVersion, capabilities}` so a journey can
/// decide which steps to offer before it asks for any of them.
///
/// Two providers, as on iOS: the *rich* one computes the capability map on every query (from the
/// host's slots and custom capabilities); the *simple* one reports a fixed dictionary from a
/// `BridgeConfiguration`.
@MainActor
public final class CapabilityQueryHandler: BridgeCapabilityHandler {
    public static let queryAction = "capability.query"

    public let action = CapabilityQueryHandler.queryAction
    public let hostVersion: String
    private let provider: @MainActor () -> [String: BridgeCapabilityInfo]

    /// Rich provider: `provider` is asked on every query.
    public init(hostVersion: String, provider: @escaping @MainActor () -> [String: BridgeCapabilityInfo]) {
        self.hostVersion = hostVersion
        self.provider = provider
    }

    /// Simple provider: reports `configuration.capabilities` as configured.
    public init(configuration: BridgeConfiguration) {
        self.hostVersion = configuration.hostVersion
        let capabilities = configuration.capabilities
        self.provider = { capabilities }
    }

    /// The capabilities a query would report now.
    public var capabilities: [String: BridgeCapabilityInfo] { provider() }

    /// The `data` of a query response.
    public func responseData() -> JSONValue {
        .object([
            "environment": .string(BridgeConfiguration.environment),
            "hostVersion": .string(hostVersion),
            "capabilities": .object(provider().mapValues(\.jsonValue)),
        ])
    }

    public func handle(_ request: BridgeMessage, responder: BridgeResponder) {
        responder.succeed(responseData())
    }
}
