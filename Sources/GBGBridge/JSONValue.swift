import Foundation

/// A JSON value of any shape, so a message's `data` can carry whatever a capability needs
/// without a Swift type per action.
///
/// Decoding tries the cases in the order null → bool → number → string → object → array,
/// as the iOS framework does: `true` stays a boolean and `1` stays a number.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case object([String: JSONValue])
    case array([JSONValue])

    /// The value as Foundation types (`NSNull`, `Bool`, `Double`, `String`, `[String: Any]`, `[Any]`),
    /// for code that works with `JSONSerialization`-style values.
    public var anyValue: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let value): return value
        case .number(let value): return value
        case .string(let value): return value
        case .object(let value): return value.mapValues { $0.anyValue }
        case .array(let value): return value.map { $0.anyValue }
        }
    }

    /// Builds a value from Foundation types; `nil` when something in it is not representable in JSON.
    public init?(any value: Any?) {
        switch value {
        case nil, is NSNull: self = .null
        case let v as JSONValue: self = v
        case let v as Bool: self = .bool(v)
        case let v as Int: self = .number(Double(v))
        case let v as Int64: self = .number(Double(v))
        case let v as UInt8: self = .number(Double(v))
        case let v as Double: self = .number(v)
        case let v as Float: self = .number(Double(v))
        case let v as String: self = .string(v)
        case let v as [String: Any]:
            var object: [String: JSONValue] = [:]
            for (key, element) in v {
                guard let converted = JSONValue(any: element) else { return nil }
                object[key] = converted
            }
            self = .object(object)
        case let v as [Any]:
            var array: [JSONValue] = []
            for element in v {
                guard let converted = JSONValue(any: element) else { return nil }
                array.append(converted)
            }
            self = .array(array)
        default: return nil
        }
    }
}

// MARK: - Accessors

extension JSONValue {
    public var isNull: Bool { if case .null = self { return true } else { return false } }
    public var boolValue: Bool? { if case .bool(let v) = self { return v } else { return nil } }
    public var doubleValue: Double? { if case .number(let v) = self { return v } else { return nil } }
    public var stringValue: String? { if case .string(let v) = self { return v } else { return nil } }
    public var objectValue: [String: JSONValue]? { if case .object(let v) = self { return v } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let v) = self { return v } else { return nil } }

    /// The number as an `Int` when it is integral and in range, `nil` otherwise.
    public var intValue: Int? {
        guard case .number(let v) = self, v.isFinite, v.rounded() == v,
              v >= Double(Int.min), v < Double(Int.max) else { return nil }
        return Int(v)
    }

    /// Member lookup on an object; `nil` for other cases or a missing key.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// Element lookup on an array; `nil` for other cases or an index out of range.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let array) = self, array.indices.contains(index) else { return nil }
        return array[index]
    }
}

// MARK: - Codable

extension JSONValue: Codable {
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Value is not valid JSON")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // Integral numbers are written without a fraction so ids, sizes and timestamps read naturally.
            if value.isFinite, value.rounded() == value, abs(value) < 9_007_199_254_740_992 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        }
    }
}

// MARK: - Literals

// Deliberately not ExpressibleByNilLiteral: `nil` must always mean "absent" for `JSONValue?`
// (an absent `data` field), never an explicit JSON `null`.

extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue {
    /// Encodes any `Encodable` value into a `JSONValue` directly (no JSON text in between), with
    /// `JSONEncoder`'s default strategies.
    public init<T: Encodable>(encoding value: T) throws {
        self = try JSONValueEncoder().encode(value)
    }

    /// Encodes an `Encodable` value that encodes as a JSON object into message `data`.
    public static func object<T: Encodable>(encoding value: T) throws -> [String: JSONValue] {
        guard case .object(let object) = try JSONValue(encoding: value) else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: [],
                                                                          debugDescription: "the value does not encode as a JSON object"))
        }
        return object
    }

    /// Decodes this value into a `Decodable` type (through JSON text).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let data = try JSONEncoder().encode(self)
        return try JSONDecoder().decode(type, from: data)
    }
}
