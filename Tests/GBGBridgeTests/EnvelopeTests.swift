import Foundation
import PropertyBased
import TestSupport
import Testing
@testable import GBGBridge

/// RFC 8259 as a page's `JSON.parse` reads it, and the bridge envelope on top: what is refused,
/// and that a request whose correlationId can be read is always answered.
@Suite("Strict JSON and the envelope")
@MainActor
struct EnvelopeTests {
    static let valid = #"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#

    @Test("strict JSON refuses what JSON.parse would read differently or not at all", arguments: [
        (#"{"a":1,"a":2}"#, "duplicate key 'a'"),
        (#"{"o":{"k":true,"k":false}}"#, "duplicate key 'k' in 'o'"),
        (#"[1e999]"#, "number out of range"),
        (#"[-1e400]"#, "number out of range"),
        (#"[NaN]"#, "NaN and Infinity"),
        (#"[Infinity]"#, "NaN and Infinity"),
        (#"["\ud800"]"#, "lone UTF-16 surrogate"),
        (#"["\udc00\ud800"]"#, "lone UTF-16 surrogate"),
        (#"["\ud800\u0041"]"#, "lone UTF-16 surrogate"),
        ("[\"a\u{1}b\"]", "control character"),
        (#"[01]"#, "may not start with 0"),
        (#"[1.]"#, "digits after '.'"),
        (#"[.5]"#, "unexpected character"),
        (#"[+1]"#, "unexpected character"),
        (#"{"a":1,}"#, "object key must be a string"),
        (#"[1,]"#, "unexpected character"),
        (#"{} {}"#, "unexpected text after"),
        ("\u{FEFF}{}", "unexpected character"),
        (#"['a']"#, "unexpected character"),
        (#"["\x41"]"#, "unknown escape"),
        ("", "empty text"),
        (String(repeating: "[", count: 200) + String(repeating: "]", count: 200), "nesting deeper"),
    ])
    func strictRefusals(text: String, reason: String) {
        #expect {
            _ = try StrictJSON.parse(text)
        } throws: { error in
            (error as? StrictJSON.SyntaxError)?.reason.contains(reason) == true
        }
    }

    @Test("strict JSON reads what it must: escapes, pairs, exponents, deep but bounded nesting")
    func strictAccepts() throws {
        #expect(try StrictJSON.parse(#"{"s":"\u00e9\ud83d\ude00\n\"\\\/","n":-0.5e+2,"z":0,"b":[true,false,null]}"#) == .object([
            "s": .string("é😀\n\"\\/"), "n": .number(-50), "z": .number(0), "b": .array([.bool(true), .bool(false), .null]),
        ]))
        #expect(try StrictJSON.parse(" \t\r\n[1]\n") == .array([.number(1)]))
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { _ = try StrictJSON.parse(deep) }
        #expect(try StrictJSON.parse(#"["a\u0000b"]"#) == .array([.string("a\u{0}b")]))
    }

    @Test("the issue's envelopes: each answered under its correlationId with a reason", arguments: [
        (#"{"version":"1.0","correlationId":"x","type":"request","payload":{"action":"capability.query"}}"#, "INVALID_REQUEST", "missing field 'timestamp'"),
        (#"{"version":1,"correlationId":"x","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST", "wrong type at 'version'"),
        (#"{"version":"1.0","correlationId":"x","type":"bogus","timestamp":1,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST", "'type'"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":"1","payload":{"action":"capability.query"}}"#, "INVALID_REQUEST", "'timestamp': expected a number"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{}}"#, "INVALID_REQUEST", "missing field 'payload.action'"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":1e999,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST", "number out of range"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":NaN,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST", "NaN"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"capability.query","data":{"k":"\udead"}}}"#, "INVALID_REQUEST", "lone UTF-16 surrogate"),
        (#"{"version":"2.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#, "UNSUPPORTED_VERSION", "unsupported protocol version '2.0'"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"capability.query","action":"nfc.read"}}"#, "INVALID_REQUEST", "duplicate key 'action'"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"capability.query"},"payload":{"action":"nfc.read"}}"#, "INVALID_REQUEST", "duplicate key 'payload'"),
        (#"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"capability.query"}"#, "INVALID_REQUEST", "not valid JSON"),
    ])
    func issueEnvelopes(json: String, code: String, reason: String) {
        let h = Harness()
        h.transport.post(json)
        let answers = h.responses(to: "x")
        #expect(answers.count == 1, "\(h.transport.sent)")
        let error = answers.first?.payload.error
        #expect(answers.first?.payload.status == .error && error?.code == code && error?.recoverable == false)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
        #expect(h.host.lastError?.hasPrefix("Failed to decode message: ") == true)
        #expect(h.host.receivedMessages.isEmpty && h.host.pendingRequests.isEmpty)
        // Never served as something else: no capability.query answer went out.
        #expect(answers.first?.payload.data == nil)
    }

    @Test("an envelope the page cannot have meant as a request is not answered; a readable one is served once")
    func notAnswered() {
        let h = Harness()
        for json in [#"{"correlationId":7,"type":"request"}"#, #"["x"]"#, #"{"type":"request"}"#,
                     #"{"version":"1.0","correlationId":"x","type":"event","timestamp":"t","payload":{"action":"a"}}"#] {
            h.transport.post(json)
        }
        #expect(h.transport.sent.isEmpty)
        h.transport.post(Self.valid)
        #expect(h.responses(to: "x").map(\.payload.status) == [.success])
    }

    /// Envelope fields and raw JSON mutated with hostile text and JSON-level attacks.
    static var hostileEnvelopes: Generator<String, Shrink.None<String>> {
        let ids = HostileText.mutations(of: ["x", "q-1", "0", String(repeating: "i", count: 300)])
        let texts = HostileText.mutations(of: ["1.0", "request", "capability.query", "nfc.read", "2.0", "response"])
        return Generator { rng in
            let id = ids.run(using: &rng)
            let field = texts.run(using: &rng)
            func quoted(_ text: String) -> String {
                String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
            }
            let attacks = [
                #""timestamp":1e999"#, #""timestamp":NaN"#, #""timestamp":-Infinity"#, #""timestamp":"1""#, #""timestamp":1"#,
                #""timestamp":1,"timestamp":2"#, #""x":"\ud800""#, #""timestamp":1,"type":"response""#, #""timestamp":1"#,
            ]
            let attack = attacks.randomElement(using: &rng) ?? #""timestamp":1"#
            let shapes = [
                #"{"version":\#(quoted(field)),"correlationId":\#(quoted(id)),"type":"request",\#(attack),"payload":{"action":"capability.query"}}"#,
                #"{"version":"1.0","correlationId":\#(quoted(id)),"type":\#(quoted(field)),\#(attack),"payload":{"action":\#(quoted(field))}}"#,
                #"{"version":"1.0","correlationId":\#(quoted(id)),"type":"request",\#(attack),"payload":{"action":"capability.query","data":{\#(quoted(field)):\#(quoted(id))}}}"#,
                #"{"version":"1.0","correlationId":\#(quoted(id)),"type":"request","timestamp":1,"payload":{"action":"capability.query","action":\#(quoted(field))}}"#,
            ]
            var text = shapes.randomElement(using: &rng) ?? ""
            if Bool.random(using: &rng) {
                // Cut somewhere, or hostile scalars spliced into the raw text.
                let scalars = Array(text.unicodeScalars)
                let cut = Int.random(in: 0...scalars.count, using: &rng)
                text = Bool.random(using: &rng)
                    ? String(String.UnicodeScalarView(scalars.prefix(cut)))
                    : HostileText.insert(HostileText.lookalikes.randomElement(using: &rng) ?? "\u{0}", into: text, at: cut)
            }
            return text
        }
    }

    @Test("hostile envelopes: never a crash; every readable request answered exactly once with a valid message")
    func hostileEnvelopeProperty() async {
        await propertyCheck(count: 600, input: Self.hostileEnvelopes) { json in
            let h = Harness()
            h.transport.post(json)
            let salvaged = StrictJSON.salvage(json)
            let decoded = try? BridgeMessage.decode(json: json)
            for text in h.transport.sent {
                #expect((try? BridgeMessage.decode(json: text)) != nil, "the host sent an invalid message")
            }
            if let message = decoded {
                if message.type == .request {
                    // Answered, or waiting for the app in pendingRequests (an action nobody handles).
                    let pending = h.host.pendingRequests.contains { $0.correlationId == message.correlationId }
                    #expect(h.responses(to: message.correlationId).count == (pending ? 0 : 1))
                }
            } else if let id = salvaged?["correlationId"]?.stringValue,
                      !["response", "event"].contains(salvaged?["type"]?.stringValue ?? "") {
                let answers = h.responses(to: id)
                #expect(answers.count == 1, "\(json)")
                #expect(["INVALID_REQUEST", "UNSUPPORTED_VERSION"].contains(answers.first?.payload.error?.code ?? ""))
            } else {
                #expect(h.transport.sent.isEmpty, "\(json)")
            }
        }
    }

    @Test("strict JSON agrees with Foundation's reader wherever both accept a text without duplicate keys")
    func agreesWithFoundation() async {
        let values = HostileText.mutations(of: ["a", "é", "😀", "\u{0}", "\"", "\\", "1.5e3", "-0", "true"])
        await propertyCheck(count: 300, input: values, values) { key, value in
            // A generated key may be "n", "b" or "z": the fixed members go in first, the generated one
            // last (a dictionary literal with a key twice traps).
            var object: [String: Any] = ["n": [1, 2.5, -3e10, Double(Int32.max)], "b": true, "z": NSNull()]
            object[key] = value
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
            let text = String(decoding: data, as: UTF8.self)
            let ours = try StrictJSON.parse(text)
            let theirs = try JSONDecoder().decode(JSONValue.self, from: data)
            #expect(ours == theirs, "\(text)")
        }
    }
}
