import Foundation
import Testing
@testable import GBGBridge

@Suite("Message model")
struct BridgeMessageTests {
    @Test func encodesTheEnvelopeWithExactFieldNames() throws {
        let message = BridgeMessage(correlationId: "abc", type: .response, timestamp: 1_700_000_000_123,
                                    payload: BridgePayload(action: "camera.document.capture", data: ["k": 1],
                                                           status: .error,
                                                           error: BridgeErrorPayload(code: "BUSY", message: "m",
                                                                                     recoverable: true)))
        let json = try parse(try message.jsonString())
        #expect(json == [
            "version": "1.0", "correlationId": "abc", "type": "response", "timestamp": 1_700_000_000_123,
            "payload": ["action": "camera.document.capture", "data": ["k": 1], "status": "error",
                        "error": ["code": "BUSY", "message": "m", "recoverable": true]],
        ])
    }

    @Test func omitsAbsentPayloadFields() throws {
        let json = try parse(try BridgeMessage.request(action: "capability.query", correlationId: "q").jsonString())
        #expect(json["payload"] == ["action": "capability.query"])
    }

    @Test func decodesEveryStatusAndType() throws {
        for type in BridgeMessageType.allCases {
            for status in BridgeResponseStatus.allCases {
                let text = #"{"version":"1.0","correlationId":"c","type":"\#(type.rawValue)","timestamp":5,"payload":{"action":"a","status":"\#(status.rawValue)"}}"#
                let message = try BridgeMessage.decode(json: text)
                #expect(message.type == type)
                #expect(message.payload.status == status)
            }
        }
    }

    @Test func keepsExplicitNullData() throws {
        let message = try BridgeMessage.decode(json: #"{"version":"1.0","correlationId":"c","type":"event","timestamp":5,"payload":{"action":"a","data":null}}"#)
        #expect(message.payload.data == .null)
    }

    @Test func acceptsAFractionalTimestamp() throws {
        let message = try BridgeMessage.decode(json: #"{"version":"1.0","correlationId":"c","type":"event","timestamp":1700000000000.7,"payload":{"action":"a"}}"#)
        #expect(message.timestamp == 1_700_000_000_001)
    }

    @Test("names what is wrong with an undecodable message",
          arguments: [
            ("not json", "not valid JSON"),
            (#"{"correlationId":"c","type":"request","timestamp":1,"payload":{"action":"a"}}"#, "missing field 'version'"),
            (#"{"version":"1.0","type":"request","timestamp":1,"payload":{"action":"a"}}"#, "missing field 'correlationId'"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":1,"payload":{}}"#, "missing field 'payload.action'"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":1}"#, "missing field 'payload'"),
            (#"{"version":"1.0","correlationId":"c","type":"shout","timestamp":1,"payload":{"action":"a"}}"#, "'type'"),
            (#"{"version":"1.0","correlationId":"c","type":"request","timestamp":"soon","payload":{"action":"a"}}"#, "'timestamp'"),
            (#"{"version":"1.0","correlationId":"c","type":"response","timestamp":1,"payload":{"action":"a","status":"maybe"}}"#, "'payload.status'"),
          ])
    func decodingErrors(json: String, expectedReason: String) {
        #expect {
            _ = try BridgeMessage.decode(json: json)
        } throws: { error in
            guard let error = error as? BridgeDecodingError else { return false }
            return error.reason.contains(expectedReason) && error.description.hasPrefix("Failed to decode message: ")
        }
    }

    @Test func factoriesFillTheEnvelope() {
        let before = BridgeMessage.now()
        let event = BridgeMessage.event(action: "nfc.read.progress", data: ["percent": 10])
        #expect(event.type == .event)
        #expect(event.version == "1.0")
        #expect(!event.correlationId.isEmpty)
        #expect(event.timestamp >= before && event.timestamp <= BridgeMessage.now())
        let response = BridgeMessage.response(to: "r", action: "x", status: .success)
        #expect(response.correlationId == "r" && response.payload.action == "x" && response.payload.status == .success)
    }
}
