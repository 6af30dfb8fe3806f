import Foundation

/// Encodes an `Encodable` value straight into a `JSONValue` tree — no JSON text in between — so a
/// result (an nfc.read report with its base64 photo) is encoded once, when the message goes out.
/// It follows `JSONEncoder`'s defaults: `Data` as base64, `URL` as its absolute string, `Date` as
/// its own encoding (seconds since 2001), `nil` optionals left out, an object that encodes nothing
/// as `{}`; a non-finite number is an `EncodingError`, as there.
struct JSONValueEncoder {
    func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        let slot = Slot()
        try Slot.encode(value, into: slot, codingPath: [])
        return slot.resolved
    }
}

/// Where one value goes; objects and arrays are boxes so nested containers can fill them later.
private final class Slot {
    enum Content {
        case empty
        case leaf(JSONValue)
        case object(ObjectBox)
        case array(ArrayBox)
    }

    var content = Content.empty

    var resolved: JSONValue {
        switch content {
        case .empty: return .object([:])
        case .leaf(let value): return value
        case .object(let box): return .object(box.entries.mapValues(\.resolved))
        case .array(let box): return .array(box.items.map(\.resolved))
        }
    }

    var object: ObjectBox {
        if case .object(let box) = content { return box }
        let box = ObjectBox()
        content = .object(box)
        return box
    }

    var array: ArrayBox {
        if case .array(let box) = content { return box }
        let box = ArrayBox()
        content = .array(box)
        return box
    }

    static func number(_ value: Double, codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: codingPath, debugDescription: "\(value) is not valid JSON"))
        }
        return .number(value)
    }

    static func encode<T: Encodable>(_ value: T, into slot: Slot, codingPath: [any CodingKey]) throws {
        switch value {
        case let data as Data: slot.content = .leaf(.string(data.base64EncodedString()))
        case let url as URL: slot.content = .leaf(.string(url.absoluteString))
        case let decimal as Decimal: slot.content = .leaf(try number(NSDecimalNumber(decimal: decimal).doubleValue, codingPath: codingPath))
        case let json as JSONValue: slot.content = .leaf(json)
        default: try value.encode(to: ValueEncoder(slot: slot, codingPath: codingPath))
        }
    }
}

private final class ObjectBox {
    var entries: [String: Slot] = [:]

    func slot(for key: any CodingKey) -> Slot {
        let slot = Slot()
        entries[key.stringValue] = slot
        return slot
    }
}

private final class ArrayBox {
    var items: [Slot] = []

    func append() -> Slot {
        let slot = Slot()
        items.append(slot)
        return slot
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String { "Index \(intValue ?? 0)" }
    var intValue: Int?
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) {}
    init?(intValue: Int) { nil }
}

private struct ValueEncoder: Encoder {
    let slot: Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer<Key>(box: slot.object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(box: slot.array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(slot: slot, codingPath: codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: ObjectBox
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { box.slot(for: key).content = .leaf(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { box.slot(for: key).content = .leaf(.bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { box.slot(for: key).content = .leaf(.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        box.slot(for: key).content = .leaf(try Slot.number(value, codingPath: codingPath + [key]))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Double(value), forKey: key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { box.slot(for: key).content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { box.slot(for: key).content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { box.slot(for: key).content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { box.slot(for: key).content = .leaf(.number(Double(value))) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try Slot.encode(value, into: box.slot(for: key), codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(KeyedContainer<NestedKey>(box: box.slot(for: key).object, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        UnkeyedContainer(box: box.slot(for: key).array, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { ValueEncoder(slot: box.slot(for: SuperKey()), codingPath: codingPath + [SuperKey()]) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { ValueEncoder(slot: box.slot(for: key), codingPath: codingPath + [key]) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: ArrayBox
    let codingPath: [any CodingKey]
    var count: Int { box.items.count }

    private var nextPath: [any CodingKey] { codingPath + [IndexKey(box.items.count)] }

    mutating func encodeNil() throws { box.append().content = .leaf(.null) }
    mutating func encode(_ value: Bool) throws { box.append().content = .leaf(.bool(value)) }
    mutating func encode(_ value: String) throws { box.append().content = .leaf(.string(value)) }
    mutating func encode(_ value: Double) throws { box.append().content = .leaf(try Slot.number(value, codingPath: nextPath)) }
    mutating func encode(_ value: Float) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int) throws { box.append().content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: Int8) throws { try encode(Int(value)) }
    mutating func encode(_ value: Int16) throws { try encode(Int(value)) }
    mutating func encode(_ value: Int32) throws { try encode(Int(value)) }
    mutating func encode(_ value: Int64) throws { box.append().content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: UInt) throws { box.append().content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: UInt8) throws { try encode(Int(value)) }
    mutating func encode(_ value: UInt16) throws { try encode(Int(value)) }
    mutating func encode(_ value: UInt32) throws { try encode(Int(value)) }
    mutating func encode(_ value: UInt64) throws { box.append().content = .leaf(.number(Double(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = nextPath
        try Slot.encode(value, into: box.append(), codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: box.append().object, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        return UnkeyedContainer(box: box.append().array, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        return ValueEncoder(slot: box.append(), codingPath: path)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { slot.content = .leaf(.null) }
    mutating func encode(_ value: Bool) throws { slot.content = .leaf(.bool(value)) }
    mutating func encode(_ value: String) throws { slot.content = .leaf(.string(value)) }
    mutating func encode(_ value: Double) throws { slot.content = .leaf(try Slot.number(value, codingPath: codingPath)) }
    mutating func encode(_ value: Float) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int) throws { slot.content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: Int8) throws { try encode(Int(value)) }
    mutating func encode(_ value: Int16) throws { try encode(Int(value)) }
    mutating func encode(_ value: Int32) throws { try encode(Int(value)) }
    mutating func encode(_ value: Int64) throws { slot.content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: UInt) throws { slot.content = .leaf(.number(Double(value))) }
    mutating func encode(_ value: UInt8) throws { try encode(Int(value)) }
    mutating func encode(_ value: UInt16) throws { try encode(Int(value)) }
    mutating func encode(_ value: UInt32) throws { try encode(Int(value)) }
    mutating func encode(_ value: UInt64) throws { slot.content = .leaf(.number(Double(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { try Slot.encode(value, into: slot, codingPath: codingPath) }
}
