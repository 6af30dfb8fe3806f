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
    public var data: JSONValue?
    public var status: BridgeResponseStatus?
    public var error: BridgeErrorPayload?

    public init(action: String, data: JSONValue? = nil, status: BridgeResponseStatus? = nil,
                error: BridgeErrorPayload? = nil) {
        self.action = action
        self.data = data
        self.status = status
        self.error = error
    }

    private enum CodingKeys: String, CodingKey { case action, data, status, error }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        action = try container.decode(String.self, forKey: .action)
        // An explicit `"data": null` stays `.null`; an absent key stays `nil`.
        data = container.contains(.data) ? try container.decode(JSONValue.self, forKey: .data) : nil
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
public struct BridgeMessage: Codable, Sendable, Hashable, Identifiable {
    /// The protocol version this host speaks.
    public static let protocolVersion = "1.0"

    public var version: String
    public var correlationId: String
    public var type: BridgeMessageType
    /// Milliseconds since the Unix epoch.
    public var timestamp: Int64
    public var payload: BridgePayload

    public var id: String { correlationId }

    public init(version: String = BridgeMessage.protocolVersion, correlationId: String = UUID().uuidString,
                type: BridgeMessageType, timestamp: Int64 = BridgeMessage.now(), payload: BridgePayload) {
        self.version = version
        self.correlationId = correlationId
        self.type = type
        self.timestamp = timestamp
        self.payload = payload
    }

    /// The current time in milliseconds since the Unix epoch.
    public static func now() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    /// A request for `action` (what a journey sends; useful in tests).
    public static func request(action: String, data: JSONValue? = nil,
                               correlationId: String = UUID().uuidString) -> BridgeMessage {
        BridgeMessage(correlationId: correlationId, type: .request, payload: BridgePayload(action: action, data: data))
    }

    /// The response to a request with the given correlation id and action.
    public static func response(to correlationId: String, action: String, status: BridgeResponseStatus,
                                data: JSONValue? = nil, error: BridgeErrorPayload? = nil) -> BridgeMessage {
        BridgeMessage(correlationId: correlationId, type: .response,
                      payload: BridgePayload(action: action, data: data, status: status, error: error))
    }

    /// An event with a fresh correlation id.
    public static func event(action: String, data: JSONValue? = nil) -> BridgeMessage {
        BridgeMessage(type: .event, payload: BridgePayload(action: action, data: data))
    }

    private enum CodingKeys: String, CodingKey { case version, correlationId, type, timestamp, payload }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(String.self, forKey: .version)
        correlationId = try container.decode(String.self, forKey: .correlationId)
        type = try container.decode(BridgeMessageType.self, forKey: .type)
        // Journeys send `Date.now()`, an integer; tolerate a fractional value too.
        if let integral = try? container.decode(Int64.self, forKey: .timestamp) {
            timestamp = integral
        } else {
            let value = try container.decode(Double.self, forKey: .timestamp)
            guard value.isFinite, abs(value) < 9.2e18 else {
                throw DecodingError.dataCorruptedError(forKey: .timestamp, in: container,
                                                       debugDescription: "timestamp is out of range")
            }
            timestamp = Int64(value.rounded())
        }
        payload = try container.decode(BridgePayload.self, forKey: .payload)
    }
}

extension BridgeMessage {
    /// Decodes a message from the JSON text a page posted; the error names what was wrong.
    public static func decode(json: String) throws(BridgeDecodingError) -> BridgeMessage {
        try decode(data: Data(json.utf8))
    }

    /// Decodes a message from JSON bytes; the error names what was wrong.
    public static func decode(data: Data) throws(BridgeDecodingError) -> BridgeMessage {
        do {
            return try JSONDecoder().decode(BridgeMessage.self, from: data)
        } catch let error as DecodingError {
            throw BridgeDecodingError(reason: BridgeDecodingError.describe(error))
        } catch {
            throw BridgeDecodingError(reason: String(describing: error))
        }
    }

    /// The message as compact JSON text with sorted keys (stable for logs and tests).
    public func jsonString() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}

/// Why a text could not be read as a bridge message.
public struct BridgeDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { "Failed to decode message: \(reason)" }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "message" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return parent == "message" ? "missing field '\(key.stringValue)'"
                : "missing field '\(parent).\(key.stringValue)'"
        case .typeMismatch(_, let context):
            return "wrong type at '\(path(context))': \(context.debugDescription)"
        case .valueNotFound(_, let context):
            return "null at '\(path(context))'"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "not valid JSON" }
            return "invalid value at '\(path(context))': \(context.debugDescription)"
        @unknown default:
            return String(describing: error)
        }
    }
}
