import Foundation
import Synchronization
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

func eventJSON(_ action: String, id: String, data: String? = nil) -> String {
    let dataPart = data.map { #","data":\#($0)"# } ?? ""
    return #"{"version":"1.0","correlationId":"\#(id)","type":"event","timestamp":1700000000000,"payload":{"action":"\#(action)"\#(dataPart)}}"#
}

/// A host with an in-memory transport, as a page would drive it.
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

    /// The one response to `id`, waiting for it (handlers answer from tasks of their own).
    func response(to id: String) async throws -> BridgeMessage {
        _ = await eventually { !self.responses(to: id).isEmpty }
        // Give a wrongly doubled answer the chance to show up.
        for _ in 0..<3 { await Task.yield() }
        let all = responses(to: id)
        try #require(all.count == 1, "expected one response to \(id), got \(all.count)")
        return all[0]
    }

    /// The `data` of the answer to a fresh `capability.query`.
    func query(id: String = UUID().uuidString) async throws -> [String: JSONValue] {
        post("capability.query", id: id)
        return try #require(try await response(to: id).payload.data)
    }
}

@MainActor
final class RecordingDelegate: BridgeHostDelegate {
    var received: [BridgeMessage] = []
    var unhandled: [BridgeMessage] = []
    var sent: [BridgeMessage] = []
    var errors: [String] = []
    func bridgeHost(_ host: BridgeHost, didReceive message: BridgeMessage) { received.append(message) }
    func bridgeHost(_ host: BridgeHost, unhandledRequest message: BridgeMessage) { unhandled.append(message) }
    func bridgeHost(_ host: BridgeHost, didSend message: BridgeMessage) { sent.append(message) }
    func bridgeHost(_ host: BridgeHost, didEncounterError error: String) { errors.append(error) }
}

/// A protocol-based handler, written the way the reference shows them: a final class that is
/// `@unchecked Sendable`, with a `let action` and an async `handle`.
final class EchoHandler: BridgeCapabilityHandler, @unchecked Sendable {
    let action: String
    private let log = Mutex<[BridgeMessage]>([])
    init(action: String) { self.action = action }
    var handled: [BridgeMessage] { log.withLock { $0 } }
    func handle(request: BridgeMessage, responder: BridgeResponder) async {
        log.withLock { $0.append(request) }
        responder.respond(status: .success, data: ["handledBy": "registered", "action": .string(action)], error: nil)
    }
}

/// Counts calls from any thread.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
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

/// Lets handler tasks run for a moment (for checks that something did *not* happen).
@MainActor
func settle() async {
    for _ in 0..<5 {
        await Task.yield()
        try? await Task.sleep(for: .milliseconds(5))
    }
}
