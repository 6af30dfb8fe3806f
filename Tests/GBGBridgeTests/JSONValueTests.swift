import Foundation
import Testing
@testable import GBGBridge

@Suite("JSONValue")
struct JSONValueTests {
    @Test("decodes in the order null → bool → number → string → object → array",
          arguments: [
            ("null", JSONValue.null),
            ("true", .bool(true)),
            ("false", .bool(false)),
            ("0", .number(0)),
            ("1", .number(1)),
            ("-2.5e3", .number(-2500)),
            ("\"1\"", .string("1")),
            ("\"true\"", .string("true")),
            ("{}", .object([:])),
            ("[]", .array([])),
            (#"{"a":[1,true,null,"x",{"b":false}]}"#, .object(["a": .array([1, true, .null, "x", ["b": false]])])),
          ])
    func decodeOrder(json: String, expected: JSONValue) throws {
        #expect(try parse(json) == expected)
    }

    @Test func roundTripsThroughJSONText() throws {
        let value: JSONValue = ["n": 42, "f": 1.5, "s": "ü/\"", "b": true, "z": .null, "a": [1, [2]], "o": ["k": "v"]]
        let text = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        #expect(try parse(text) == value)
        #expect(text.contains("\"n\":42"))
    }

    @Test func integralNumbersEncodeWithoutFraction() throws {
        let text = String(decoding: try JSONEncoder().encode(JSONValue.number(1_700_000_000_000)), as: UTF8.self)
        #expect(text == "1700000000000")
    }

    @Test func anyValueGivesFoundationTypes() throws {
        let value: JSONValue = ["n": 3, "b": true, "s": "x", "z": .null, "a": [1, "two"]]
        let any = try #require(value.anyValue as? [String: Any])
        #expect(any["n"] as? Double == 3)
        #expect(any["b"] as? Bool == true)
        #expect(any["s"] as? String == "x")
        #expect(any["z"] is NSNull)
        let array = try #require(any["a"] as? [Any])
        #expect(array.count == 2)
        #expect(array[1] as? String == "two")
        #expect(JSONValue(any: any) == value)
    }

    @Test func accessors() {
        let value: JSONValue = ["n": 7, "f": 7.5, "list": ["a", "b"]]
        #expect(value["n"]?.intValue == 7)
        #expect(value["f"]?.intValue == nil)
        #expect(value["f"]?.doubleValue == 7.5)
        #expect(value["list"]?[1]?.stringValue == "b")
        #expect(value["list"]?[5] == nil)
        #expect(value["missing"] == nil)
        #expect(JSONValue.string("x")["key"] == nil)
        #expect(JSONValue.null.isNull)
    }

    @Test func rejectsNonJSONFoundationValues() {
        #expect(JSONValue(any: Date()) == nil)
        #expect(JSONValue(any: ["a": Date()]) == nil)
    }

    // MARK: encoding straight into a JSONValue (JSONValueEncoder) agrees with JSONEncoder

    struct Sample: Encodable {
        enum Shape: Encodable { case circle(radius: Double), square(Int), none }
        var name = "a \"quoted\" / slashed name"
        var missing: String?
        var present: Int? = 7
        var flags = [true, false]
        var nested = [["x": 1], ["y": 2]]
        var numbered: [Int: String] = [3: "three", 11: "eleven"]
        var blob = Data([0, 1, 2, 250, 251])
        var link = URL(string: "https://example.com/a?b=c")!
        var when = Date(timeIntervalSinceReferenceDate: 12.5)
        var shapes: [Shape] = [.circle(radius: 1.5), .square(4), .none]
        var big: Int64 = 1 << 52
        var small: Int8 = -5
        var empty: [String: Int] = [:]
        var json: JSONValue = ["k": [1, "two", .null]]
    }

    class Base: Encodable {
        var base = 1
        private enum CodingKeys: String, CodingKey { case base }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(base, forKey: .base)
        }
    }

    final class Derived: Base {
        var derived = "d"
        private enum CodingKeys: String, CodingKey { case derived, parent }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(derived, forKey: .derived)
            try super.encode(to: container.superEncoder(forKey: .parent))
            var list = container.nestedUnkeyedContainer(forKey: .parent)  // same key: the later container wins, as in JSONEncoder
            try list.encode(1)
        }
    }

    static func throughText<T: Encodable>(_ value: T) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
    }

    @Test func encodesAsJSONEncoderDoes() throws {
        let direct = try JSONValue(encoding: Sample())
        #expect(direct == (try Self.throughText(Sample())))
        #expect(direct["missing"] == nil)
        #expect(direct["blob"] == .string("AAEC+vs="))
        #expect(direct["numbered"]?["11"] == .string("eleven"))
        #expect(try JSONValue(encoding: [1, 2, 3]) == [1, 2, 3])
        #expect(try JSONValue(encoding: "text") == "text")
        #expect(try JSONValue(encoding: Optional<Int>.none) == .null)
    }

    @Test func encodesSuperEncodersAndNestedContainers() throws {
        let direct = try JSONValue(encoding: Derived())
        #expect(direct["derived"] == "d")
        #expect(direct["parent"] != nil)
    }

    @Test func refusesNumbersJSONCannotHold() {
        #expect(throws: EncodingError.self) { try JSONValue(encoding: ["x": Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONValue(encoding: [Double.infinity]) }
    }
}
