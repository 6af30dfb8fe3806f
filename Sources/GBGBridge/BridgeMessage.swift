import Foundation

/// The three kinds of message the bridge carries.
public enum BridgeMessageType: String, Codable, Sendable, CaseIterable {
    /// Web → host: asks a capability to do something; answered by exactly one response.
    case request
    /// Host → web: the answer to a request, carrying the request's `correlationId` and `action`.
    case response
    /// Either way: a notification with its own correlation id (progress, state changes).
    case event
}

/// The outcome a response reports.
public enum BridgeResponseStatus: String, Codable, Sendable, CaseIterable {
    case success
    case error
    case cancelled
    case unsupported
    case acknowledged
}

/// Why a request failed: a stable `code` for programs, a `message` for people, and whether trying
/// again may help.
public struct BridgeErrorPayload: Codable, Sendable, Hashable {
    public var code: String
    public var message: String
    public var recoverable: Bool

    public init(code: String, message: String, recoverable: Bool) {
        self.code = code
        self.message = message
        self.recoverable = recoverable
    }
}

/// The body of every message: which action it concerns and, depending on the type, its data,
/// status and error.
public struct BridgePayload: Codable, Sendable, Hashable {
    public var action: String
    public var data: [String: JSONValue]?
    public var status: BridgeResponseStatus?
    public var error: BridgeErrorPayload?

    public init(action: String, data: [String: JSONValue]?, status: BridgeResponseStatus?, error: BridgeErrorPayload?) {
        self.action = action
        self.data = data
        self.status = status
        self.error = error
    }

    private enum CodingKeys: String, CodingKey { case action, data, status, error }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        action = try container.decode(String.self, forKey: .action)
        data = try container.decodeIfPresent([String: JSONValue].self, forKey: .data)
        status = try container.decodeIfPresent(BridgeResponseStatus.self, forKey: .status)
        error = try container.decodeIfPresent(BridgeErrorPayload.self, forKey: .error)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(data, forKey: .data)
        try container.encodeIfPresent(status, forKey: .status)
        try container.encodeIfPresent(error, forKey: .error)
    }
}

/// The envelope every bridge message travels in, identical on iOS and Linux:
/// `{version, correlationId, type, timestamp, payload}`.
public struct BridgeMessage: Codable, Identifiable, Sendable, Hashable {
    /// The protocol version this host speaks.
    public static let protocolVersion = "1.0"

    public var version: String
    public var correlationId: String
    public var type: BridgeMessageType
    /// Milliseconds since the Unix epoch.
    public var timestamp: TimeInterval
    public var payload: BridgePayload

    /// `"{correlationId}-{timestamp}-{type}"`, as on iOS: unique per message even when a
    /// response shares its request's correlation id.
    public var id: String { "\(correlationId)-\(timestamp)-\(type.rawValue)" }

    public init(version: String, correlationId: String, type: BridgeMessageType, timestamp: TimeInterval,
                payload: BridgePayload) {
        self.version = version
        self.correlationId = correlationId
        self.type = type
        self.timestamp = timestamp
        self.payload = payload
    }

    /// The current time in milliseconds since the Unix epoch (whole milliseconds).
    public static func now() -> TimeInterval {
        (Date().timeIntervalSince1970 * 1000).rounded()
    }

    /// A request for `action`, as a journey sends it (Linux addition, for tests and tools).
    public static func request(action: String, data: [String: JSONValue]? = nil,
                               correlationId: String = UUID().uuidString) -> BridgeMessage {
        BridgeMessage(version: protocolVersion, correlationId: correlationId, type: .request, timestamp: now(),
                      payload: BridgePayload(action: action, data: data, status: nil, error: nil))
    }

    /// The response to a request with the given correlation id and action (Linux addition).
    public static func response(to correlationId: String, action: String, status: BridgeResponseStatus,
                                data: [String: JSONValue]? = nil, error: BridgeErrorPayload? = nil) -> BridgeMessage {
        BridgeMessage(version: protocolVersion, correlationId: correlationId, type: .response, timestamp: now(),
                      payload: BridgePayload(action: action, data: data, status: status, error: error))
    }

    /// An event with a fresh correlation id (Linux addition).
    public static func event(action: String, data: [String: JSONValue]? = nil) -> BridgeMessage {
        BridgeMessage(version: protocolVersion, correlationId: UUID().uuidString, type: .event, timestamp: now(),
                      payload: BridgePayload(action: action, data: data, status: nil, error: nil))
    }

    private enum CodingKeys: String, CodingKey { case version, correlationId, type, timestamp, payload }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(String.self, forKey: .version)
        correlationId = try container.decode(String.self, forKey: .correlationId)
        type = try container.decode(BridgeMessageType.self, forKey: .type)
        timestamp = try container.decode(TimeInterval.self, forKey: .timestamp)
        payload = try container.decode(BridgePayload.self, forKey: .payload)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(correlationId, forKey: .correlationId)
        try container.encode(type, forKey: .type)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encode(payload, forKey: .payload)
    }
}

