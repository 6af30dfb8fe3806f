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
}
