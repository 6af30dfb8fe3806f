import Foundation
import GBGBridgeRead
import GBGBridge

/// `gbgbridge transcript`: a scripted "journey" posts requests into an in-memory transport and
/// the host's answers are given as they would reach the page — capabilities, a document capture
/// from a demonstration slot, a slot with no handler, a custom capability, a malformed message.
package enum Transcript {
    @MainActor
    package static func play(quiet: Bool, emit: (String) -> Void) async {
        let transport = InMemoryBridgeTransport()
        let host = BridgeHost(hostVersion: GBGBridgeVersion.current)
        host.attach(transport: transport)

        host.documentCapture.permissionState = .notApplicable
        host.documentCapture.handler = { _ in
            // A demonstration capture: a 1×1 transparent PNG.
            let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABh6FO1AAAAABJRU5ErkJggg==") ?? Data()
            return .document(DocumentCaptureResult(imageData: png, width: 1, height: 1))
        }
        host.registerCustomCapability("demo.echo", version: "1.0") { request, responder in
            responder.respond(status: .success, data: ["echo": request.payload.data.map(JSONValue.object) ?? .null], error: nil)
        }

        let script: [(String, String)] = [
            ("query the host's capabilities",
             #"{"version":"1.0","correlationId":"q-1","type":"request","timestamp":1700000000000,"payload":{"action":"capability.query"}}"#),
            ("capture a document",
             #"{"version":"1.0","correlationId":"d-1","type":"request","timestamp":1700000000001,"payload":{"action":"camera.document.capture"}}"#),
            ("ask for a selfie (no handler on this host)",
             #"{"version":"1.0","correlationId":"s-1","type":"request","timestamp":1700000000002,"payload":{"action":"camera.selfie.capture"}}"#),
            ("call a custom capability",
             #"{"version":"1.0","correlationId":"e-1","type":"request","timestamp":1700000000003,"payload":{"action":"demo.echo","data":{"hello":"kiosk"}}}"#),
            ("post something that is not a bridge message", #"{"type":"request"}"#),
        ]
        for (title, json) in script {
            if !quiet { emit("\n# \(title)\nweb → host  \(json)") }
            let before = transport.sent.count
            transport.post(json)
            // Handlers answer from tasks of their own: wait for the answer (a second at most).
            let request = try? BridgeMessage.decode(json: json)
            for _ in 0..<1_000 where request?.type == .request {
                if transport.sentMessages.dropFirst(before).contains(where: { $0.correlationId == request?.correlationId }) { break }
                try? await Task.sleep(for: .milliseconds(1))
            }
            for reply in transport.sent[before...] {
                emit(quiet ? reply : "host → web  \(reply)")
            }
            if let error = host.lastError {
                if !quiet { emit("host error  \(error)") }
                host.clearError()
            }
        }
        if !quiet {
            emit("\n\(host.receivedMessages.count) valid messages received, \(transport.sent.count) sent.")
        }
    }
}
