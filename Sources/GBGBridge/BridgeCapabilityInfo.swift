/// Whether the host may use the hardware behind a capability, as the journey needs to know
/// before it asks.
public enum PermissionState: String, Codable, Sendable, CaseIterable {
    /// The user or the system has not decided yet.
    case notDetermined
    /// Access is allowed.
    case granted
    /// Access was refused (for example pcscd refusing the connection, or `/dev/video0` not readable).
    case denied
    /// Access is blocked by policy.
    case restricted
    /// The capability needs no permission.
    case notApplicable
}

/// One capability's entry in a `capability.query` answer.
public struct BridgeCapabilityInfo: Codable, Sendable, Hashable {
    public var supported: Bool
    public var version: String
    public var permissionState: PermissionState?
    public var constraints: [String: JSONValue]?

    public init(supported: Bool, version: String = "1.0", permissionState: PermissionState? = nil,
                constraints: [String: JSONValue]? = nil) {
        self.supported = supported
        self.version = version
        self.permissionState = permissionState
        self.constraints = constraints
    }

    /// The entry as a JSON object, exactly as it appears in a query response.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["supported": .bool(supported), "version": .string(version)]
        if let permissionState { object["permissionState"] = .string(permissionState.rawValue) }
        if let constraints { object["constraints"] = .object(constraints) }
        return .object(object)
    }
}
