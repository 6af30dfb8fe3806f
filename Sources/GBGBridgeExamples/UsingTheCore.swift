import Foundation
import GBGBridge

/// A host for one page: typed slots, a custom capability, and the page wired to a transport.
@MainActor public func startHost(transport: BridgeTransport) -> BridgeHost {
    let host = BridgeHost(hostVersion: "1.0.0")
    host.attach(transport: transport)                  // host → page: transport.deliver(json)
    host.documentCapture.permissionState = .granted
    host.documentCapture.handler = { [weak host] request in   // declares camera.document supported
        guard let host else { return .cancelled(reason: "Host deallocated") }
        return await host.documentCapture.awaitCompletion()   // until the camera UI calls complete(_:)
    }
    host.registerCustomCapability("kiosk.print", version: "1.0") { request, responder in
        let copies = request.payload.data?["copies"] ?? .number(1)
        responder.respond(status: .success, data: ["printed": copies], error: nil)  // any thread; first answer wins
    }
    return host                                        // page → host: host.receive(jsonText)
}

/// What the camera UI calls when it has a picture (or was dismissed).
@MainActor public func cameraFinished(_ host: BridgeHost, png: Data?, width: Int, height: Int) {
    if let png {
        host.documentCapture.complete(.document(DocumentCaptureResult(imageData: png, width: width, height: height)))
    } else {
        host.documentCapture.complete(.cancelled(reason: "User dismissed"))
    }
}
