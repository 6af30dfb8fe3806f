import Foundation
import Testing
@testable import GBGBridge

/// The project's `Fixtures/` folder, found from this file's location.
let fixturesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

func fixtureJSON(_ name: String) throws -> JSONValue {
    let data = try Data(contentsOf: fixturesDirectory.appendingPathComponent("bridge/\(name)"))
    return try JSONDecoder().decode(JSONValue.self, from: data)
}

/// `value` with the named top-level keys removed (for comparing messages across runs).
func without(_ keys: Set<String>, _ value: JSONValue) -> JSONValue {
    guard case .object(var object) = value else { return value }
    for key in keys { object.removeValue(forKey: key) }
    return .object(object)
}

func parse(_ json: String) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
}

func requestJSON(_ action: String, id: String, data: String? = nil) -> String {
    let dataPart = data.map { #","data":\#($0)"# } ?? ""
    return #"{"version":"1.0","correlationId":"\#(id)","type":"request","timestamp":1700000000000,"payload":{"action":"\#(action)"\#(dataPart)}}"#
}

@MainActor
final class Harness {
    let host: BridgeHost
    let transport = InMemoryBridgeTransport()

    init(_ host: BridgeHost = BridgeHost(hostVersion: "2.3.0")) {
        self.host = host
        host.attach(transport: transport)
    }

    func post(_ action: String, id: String, data: String? = nil) {
        transport.post(requestJSON(action, id: id, data: data))
    }

    var sent: [BridgeMessage] { transport.sentMessages }

    func responses(to id: String) -> [BridgeMessage] {
        sent.filter { $0.type == .response && $0.correlationId == id }
    }

    func onlyResponse(to id: String) throws -> BridgeMessage {
        let all = responses(to: id)
        try #require(all.count == 1, "expected one response to \(id), got \(all.count)")
        return all[0]
    }
}

@MainActor
final class RecordingDelegate: BridgeHostDelegate {
    var received: [BridgeMessage] = []
    var unhandled: [BridgeMessage] = []
    var sent: [BridgeMessage] = []
    var errors: [String] = []
    func bridgeHost(_ host: BridgeHost, didReceive message: BridgeMessage) { received.append(message) }
    func bridgeHost(_ host: BridgeHost, unhandledRequest request: BridgeMessage) { unhandled.append(request) }
    func bridgeHost(_ host: BridgeHost, didSend message: BridgeMessage) { sent.append(message) }
    func bridgeHost(_ host: BridgeHost, didEncounterError error: String) { errors.append(error) }
}

@MainActor
final class EchoHandler: BridgeCapabilityHandler {
    let action: String
    var handled: [BridgeMessage] = []
    init(action: String) { self.action = action }
    func handle(_ request: BridgeMessage, responder: BridgeResponder) {
        handled.append(request)
        responder.succeed(["handledBy": "registered", "action": .string(action)])
    }
}

/// Waits (yielding to the main actor) until `condition` holds or about five seconds pass.
@MainActor
func eventually(_ condition: @MainActor () -> Bool) async -> Bool {
    for _ in 0..<500 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
