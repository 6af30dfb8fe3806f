import Foundation

extension BridgeMessage {
    /// Decodes a message from the JSON text a page posted. The text must be strict JSON
    /// (`StrictJSON`: no duplicate keys, finite numbers, no lone surrogates) and the envelope
    /// complete and well typed, with version "1.0"; the error names what was wrong and, when the
    /// text still shows them, the `correlationId` and action to answer under.
    public static func decode(json: String) throws(BridgeDecodingError) -> BridgeMessage {
        let root: JSONValue
        do {
            root = try StrictJSON.parse(json)
        } catch {
            var failure = BridgeDecodingError(reason: "not valid JSON: \(error.description)")
            failure.takeIdentity(from: StrictJSON.salvage(json))
            throw failure
        }
        return try decode(root: root)
    }

    /// Decodes a message from UTF-8 JSON bytes (see `decode(json:)`).
    public static func decode(data: Data) throws(BridgeDecodingError) -> BridgeMessage {
        let root: JSONValue
        do {
            root = try StrictJSON.parse(utf8: Array(data))
        } catch {
            var failure = BridgeDecodingError(reason: "not valid JSON: \(error.description)")
            failure.takeIdentity(from: StrictJSON.salvage(String(decoding: data, as: UTF8.self)))
            throw failure
        }
        return try decode(root: root)
    }

    /// The envelope read from a parsed JSON value, field by field.
    static func decode(root: JSONValue) throws(BridgeDecodingError) -> BridgeMessage {
        guard case .object(let fields) = root else {
            throw BridgeDecodingError(reason: "not a bridge message: expected a JSON object")
        }
        var envelope = Envelope(fields: fields)
        let correlationId: String = try envelope.required("correlationId")
        let version: String = try envelope.required("version")
        guard version == protocolVersion else {
            throw envelope.failure(
                "unsupported protocol version '\(LogText.clip(version, to: 20))': this host speaks \(protocolVersion)",
                code: BridgeDecodingError.unsupportedVersion)
        }
        let typeText: String = try envelope.required("type")
        guard let type = BridgeMessageType(rawValue: typeText) else {
            throw envelope.failure("invalid value at 'type': expected request, response or event")
        }
        let timestamp: Double = try envelope.required("timestamp")
        let payload = try envelope.payload()
        return BridgeMessage(version: version, correlationId: correlationId, type: type, timestamp: timestamp, payload: payload)
    }

    /// Reads the envelope's fields with the texts `JSONDecoder` would give, and keeps what is
    /// known of the message's identity for the error.
    private struct Envelope {
        let fields: [String: JSONValue]

        func failure(_ reason: String, code: String = BridgeDecodingError.invalidRequest) -> BridgeDecodingError {
            var error = BridgeDecodingError(reason: reason)
            error.code = code
            error.takeIdentity(from: fields)
            return error
        }

        func required<T: EnvelopeField>(_ name: String, in object: [String: JSONValue]? = nil, path: String? = nil) throws(BridgeDecodingError) -> T {
            let place = path ?? name
            guard let value = (object ?? fields)[name] else { throw failure("missing field '\(place)'") }
            guard !value.isNull else { throw failure("null at '\(place)'") }
            guard let typed = T(json: value) else { throw failure("wrong type at '\(place)': expected \(T.jsonName)") }
            return typed
        }

        func optional<T: EnvelopeField>(_ name: String, in object: [String: JSONValue], path: String) throws(BridgeDecodingError) -> T? {
            guard let value = object[name], !value.isNull else { return nil }
            guard let typed = T(json: value) else { throw failure("wrong type at '\(path)': expected \(T.jsonName)") }
            return typed
        }

        mutating func payload() throws(BridgeDecodingError) -> BridgePayload {
            let payload: [String: JSONValue] = try required("payload")
            let action: String = try required("action", in: payload, path: "payload.action")
            let data: [String: JSONValue]? = try optional("data", in: payload, path: "payload.data")
            var status: BridgeResponseStatus?
            if let text: String = try optional("status", in: payload, path: "payload.status") {
                guard let known = BridgeResponseStatus(rawValue: text) else {
                    throw failure("invalid value at 'payload.status': expected "
                                  + BridgeResponseStatus.allCases.map(\.rawValue).joined(separator: ", "))
                }
                status = known
            }
            var error: BridgeErrorPayload?
            if let object: [String: JSONValue] = try optional("error", in: payload, path: "payload.error") {
                error = BridgeErrorPayload(code: try required("code", in: object, path: "payload.error.code"),
                                           message: try required("message", in: object, path: "payload.error.message"),
                                           recoverable: try required("recoverable", in: object, path: "payload.error.recoverable"))
            }
            return BridgePayload(action: action, data: data, status: status, error: error)
        }
    }

    /// The message as compact JSON text with sorted keys (stable for logs and tests).
    public func jsonString() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}

/// A JSON value of the kind an envelope field must have.
private protocol EnvelopeField {
    init?(json: JSONValue)
    static var jsonName: String { get }
}

extension String: EnvelopeField {
    init?(json: JSONValue) {
        guard let text = json.stringValue else { return nil }
        self = text
    }
    static var jsonName: String { "a string" }
}

extension Double: EnvelopeField {
    init?(json: JSONValue) {
        guard let number = json.doubleValue, number.isFinite else { return nil }
        self = number
    }
    static var jsonName: String { "a number" }
}

extension Bool: EnvelopeField {
    init?(json: JSONValue) {
        guard let flag = json.boolValue else { return nil }
        self = flag
    }
    static var jsonName: String { "true or false" }
}

extension Dictionary: EnvelopeField where Key == String, Value == JSONValue {
    init?(json: JSONValue) {
        guard let object = json.objectValue else { return nil }
        self = object
    }
    static var jsonName: String { "an object" }
}

/// Why a text could not be read as a bridge message: a `reason` for people, a stable `code`
/// (`INVALID_REQUEST`, or `UNSUPPORTED_VERSION` for a version other than "1.0"), and, when the
/// text shows them, the `correlationId`, `type` and action the page sent, so that a request can
/// be answered even though its envelope is wrong.
public struct BridgeDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The code of a malformed envelope.
    public static let invalidRequest = BridgeErrorCode.invalidRequest.rawValue
    /// The code of a message with another protocol version.
    public static let unsupportedVersion = BridgeErrorCode.unsupportedVersion.rawValue

    public var reason: String
    public var code: String = BridgeDecodingError.invalidRequest
    /// The message's `correlationId`, when it could be read as a string.
    public var correlationId: String?
    /// The message's `type` text, when it could be read as a string (possibly not a known type).
    public var type: String?
    /// `payload.action`, when it could be read as a string.
    public var action: String?

    public init(reason: String) { self.reason = reason }

    public var description: String { "Failed to decode message: \(reason)" }

    /// Whether the page should be answered: its correlation id is known and the message does not
    /// say it is a response or an event (which are never answered).
    public var isAnswerable: Bool {
        correlationId != nil && type != BridgeMessageType.response.rawValue && type != BridgeMessageType.event.rawValue
    }

    mutating func takeIdentity(from fields: [String: JSONValue]?) {
        guard let fields else { return }
        correlationId = fields["correlationId"]?.stringValue
        type = fields["type"]?.stringValue
        action = fields["payload"]?["action"]?.stringValue
    }
}
