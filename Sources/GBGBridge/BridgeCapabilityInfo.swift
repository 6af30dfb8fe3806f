/// The current authorization status for a native capability, as the journey needs to know it
/// before it asks.
public enum PermissionState: String, Codable, Sendable, CaseIterable {
    /// Access is allowed.
    case granted
    /// Access was refused (for example pcscd refusing the connection, or `/dev/video0` not readable).
    case denied
    /// The user or the system has not decided yet.
    case notDetermined
    /// Access is blocked by policy.
    case restricted
    /// The capability needs no permission.
    case notApplicable
}

/// Metadata about a single capability: whether it is available, its version, constraints and
/// the native permission status.
public struct BridgeCapabilityInfo: Codable, Sendable, Hashable {
    /// Whether the capability is available.
    public var supported: Bool
    /// The capability implementation version, if any.
    public var version: String?
    /// Arbitrary key-value constraints (e.g. `"maxResolution": .number(4096)`).
    public var constraints: [String: JSONValue]?
    /// The native permission status (e.g. `"granted"`); reported in query responses when non-nil.
    public var permissionState: String?

    public init(supported: Bool, version: String? = nil, constraints: [String: JSONValue]? = nil,
                permissionState: String? = nil) {
        self.supported = supported
        self.version = version
        self.constraints = constraints
        self.permissionState = permissionState
    }

    /// The entry exactly as a `capability.query` response carries it: `supported`, `version`
    /// (`null` when there is none), and `permissionState` and `constraints` when they are set.
    public var queryEntry: JSONValue {
        var object: [String: JSONValue] = ["supported": .bool(supported), "version": version.map(JSONValue.string) ?? .null]
        if let permissionState { object["permissionState"] = .string(permissionState) }
        if let constraints { object["constraints"] = .object(constraints) }
        return .object(object)
    }
}
