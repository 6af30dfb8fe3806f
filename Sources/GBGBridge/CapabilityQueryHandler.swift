/// The built-in handler that answers `"capability.query"` with
/// `{environment: "linux", hostVersion, capabilities: {id: {supported, version, permissionState?, constraints?}}}`,
/// so a journey can decide which steps to offer before it asks for any of them.
///
/// `BridgeHost` registers one automatically: the rich provider for `init(hostVersion:)` (built from
/// the typed slots and custom capabilities on every query), and for `init(configuration:)` one that
/// reports the configured capabilities.
///
/// The providers are called on the main actor.
public final class CapabilityQueryHandler: BridgeCapabilityHandler, @unchecked Sendable {
    /// `"capability.query"`.
    public static let queryAction = "capability.query"

    public let action = CapabilityQueryHandler.queryAction
    /// The host version the response carries.
    public let hostVersion: String
    private let provider: () -> [String: BridgeCapabilityInfo]

    /// A query handler over a simple map of capability → supported. An entry is reported as
    /// `{supported, version}` with version `"1.0"` when supported and `null` otherwise.
    public init(capabilities: @escaping () -> [String: Bool], hostVersion: String) {
        self.hostVersion = hostVersion
        self.provider = {
            capabilities().mapValues { BridgeCapabilityInfo(supported: $0, version: $0 ? "1.0" : nil) }
        }
    }

    /// A query handler over full capability metadata (version, constraints, permission state).
    public init(richCapabilities: @escaping () -> [String: BridgeCapabilityInfo], hostVersion: String) {
        self.hostVersion = hostVersion
        self.provider = richCapabilities
    }

    /// What a query reports now (call on the main actor).
    @MainActor
    public var capabilities: [String: BridgeCapabilityInfo] { provider() }

    /// The `data` of a query response now (call on the main actor).
    @MainActor
    public func responseData() -> [String: JSONValue] {
        [
            "environment": .string(BridgeConfiguration.environment),
            "hostVersion": .string(hostVersion),
            "capabilities": .object(provider().mapValues(\.queryEntry)),
        ]
    }

    public func handle(request: BridgeMessage, responder: BridgeResponder) async {
        let data = await MainActor.run { self.responseData() }
        responder.respond(status: .success, data: data, error: nil)
    }
}
