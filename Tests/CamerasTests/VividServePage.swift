import Foundation
import ImageCodecs
import TestSupport
import Testing

/// A page talking to `gbgbridge serve` inside the vivid VM (through the forwarded port; the
/// server checks Host, so the page says 127.0.0.1:8450 as a browser there would), and an
/// operator's GETs of /diagnostics.json and /metrics.
struct ServePage {
    let guest: Guest
    private static let hostHeader = "127.0.0.1:8450"

    func check() async throws {
        // As a page does: the bridge script first (it carries the session's token), then the socket.
        let script = try await get("/gbg-bridge.js")
        let token = try #require(script.firstMatch(of: /var token = "([^"]+)";/).map { String($0.output.1) }, "no token in gbg-bridge.js: \(script.prefix(300))")
        let port = guest.port
        let socket = try await onThread { try RawWebSocket(port: port, path: "/gbg-bridge/ws?token=\(token)", origin: VividScenario.origin,
                                                           timeout: 60, hostHeader: Self.hostHeader) }

        // The camera is root's (0600) and serve runs as a user without its group: denied.
        var document = try await camera(socket, "camera.document")
        #expect(document.permission == "denied" && document.state == "denied", "\(document)")
        var answer = try await capture(socket, "camera.document.capture")
        #expect(answer.code == "CAMERA_DENIED" && answer.recoverable == true, "\(answer)")

        // Access granted (the node's mode changes): the slot follows without a restart.
        try await guest.command("grant")
        document = try await waitFor(socket, "camera.document", state: "ready")
        #expect(document.permission == "granted" && document.device == "/dev/video0" && document.format == "YUYV" && document.resolution == "1280x720",
                "\(document)")
        answer = try await capture(socket, "camera.document.capture")
        #expect(answer.status == "success" && answer.mimeType == "image/png" && answer.mrz == nil, "colour bars hold no MRZ: \(answer)")
        if let data = answer.image {
            let image = try ImageCodecs.decodePNG(data)
            #expect(image.width == 1280 && image.height == 720)
            FrameConversionTests.assertBars(image, FrameConversionTests.barsRGB, barWidth: 160, tolerance: 8, "serve's document PNG")
        }
        let selfie = try await capture(socket, "camera.selfie.capture")
        #expect(selfie.status == "success" && selfie.mimeType == "image/jpeg", "\(selfie)")
        if let data = selfie.image { #expect(try ImageCodecs.decodeJPEG(data).width == 640) }

        // What the operator sees.
        let diagnostics = try await operatorGet("/diagnostics.json")
        let cameras = (try? JSONSerialization.jsonObject(with: Data(diagnostics.utf8)) as? [String: Any])?["cameras"] as? [[String: Any]] ?? []
        let documentStatus = cameras.first { $0["slot"] as? String == "camera.document" }
        #expect((documentStatus?["lastCapture"] as? [String: Any])?["outcome"] as? String == "success", "\(diagnostics.prefix(600))")
        #expect((documentStatus?["probe"] as? [String: Any])?["state"] as? String == "ready")
        let metrics = try await operatorGet("/metrics")
        #expect(metrics.contains(#"gbgbridge_captures_total{outcome="success",slot="document"} 1"#)
                || metrics.contains(#"gbgbridge_captures_total{slot="document",outcome="success"} 1"#), "\(metrics.prefix(2000))")
        #expect(metrics.contains("CAMERA_DENIED"))

        // Another process streams: busy, recoverable; free again afterwards.
        try await guest.command("stream-start")
        answer = try await capture(socket, "camera.document.capture")
        #expect(answer.code == "CAMERA_BUSY" && answer.recoverable == true, "\(answer)")
        try await guest.command("stream-stop")

        // Pulled away in the middle of a capture (vivid's disconnect, at one frame a second so
        // that it lands mid-stream): a recoverable CAMERA_ERROR; vivid reconnects once the capture
        // has let go, and the next capture works.
        try await guest.command("slow")
        let pending = try await send(socket, "camera.document.capture")
        try await guest.command("disconnect-later")
        answer = try await awaitAnswer(socket, pending)
        #expect(answer.code == "CAMERA_ERROR" && answer.recoverable == true && answer.message?.contains("gone") == true, "\(answer)")
        try await guest.command("fast")
        answer = try await capture(socket, "camera.document.capture")
        #expect(answer.status == "success", "after vivid reconnected: \(answer)")

        // Unplugged (the driver goes, and its node): the slot says so, a capture is a recoverable
        // CAMERA_ERROR; plugged back (a new node): used again without restarting the host.
        try await guest.command("unload")
        document = try await waitFor(socket, "camera.document", state: "unplugged")
        #expect(document.permission == "notDetermined")
        answer = try await capture(socket, "camera.document.capture")
        #expect(answer.code == "CAMERA_ERROR" && answer.recoverable == true, "\(answer)")
        try await guest.command("load")
        document = try await waitFor(socket, "camera.document", state: "ready")
        answer = try await capture(socket, "camera.document.capture")
        #expect(answer.status == "success", "after the camera came back: \(answer)")
        // A data page in front of the camera (vivid's HDMI loop): the capture's data.mrz, read from
        // frames that agree; the operator's page says an MRZ was read, never what it says.
        try await guest.command("loop-start")
        // vivid switches to its HDMI input and starts showing the looped page within a second or
        // so; on a loaded machine a capture's frames may still come from before. A person would
        // take the photo again: so does the test, at most three times.
        answer = try await capture(socket, "camera.document.capture")
        for _ in 0..<2 where answer.mrz == nil {
            try await Task.sleep(for: .seconds(1))
            answer = try await capture(socket, "camera.document.capture")
        }
        #expect(answer.status == "success", "\(answer)")
        #expect(answer.mrz?["documentNumber"] as? String == "L898902C3" && answer.mrz?["accessKeyValid"] as? Bool == true
                && answer.mrz?["dateOfBirth"] as? String == "740812" && answer.mrz?["format"] as? String == "TD3",
                "the looped page's MRZ: \(answer.mrz ?? [:])")
        let afterLoop = try await operatorGet("/diagnostics.json")
        #expect(afterLoop.contains("\"mrz\"") && !afterLoop.contains("L898902C3"), "\(afterLoop.prefix(800))")
        // gbgbridge read --mrz-from-camera on the same page: the MRZ from frames that agree, then
        // the chip (no reader in the VM: it ends there, not at the MRZ, and never prints the MRZ).
        try await guest.command("read-mrz")
        let readError = guest.text("read-mrz.err") + guest.text("read-mrz.out")
        #expect(guest.status("read-mrz") != 7 && readError.contains("read from the camera; now the chip decides"), "\(guest.status("read-mrz") ?? -1): \(readError)")
        #expect(!readError.contains("L898902C3") && !readError.contains("ERIKSSON"), "the MRZ in the output: \(readError)")
        try await guest.command("loop-stop")
        try await guest.command("finish")
    }

    struct Slot: CustomStringConvertible {
        var permission: String?
        var state: String?
        var device: String?
        var format: String?
        var resolution: String?
        var description: String { "permission \(permission ?? "-"), state \(state ?? "-"), device \(device ?? "-"), \(format ?? "-") \(resolution ?? "-")" }
    }

    struct Answer: CustomStringConvertible {
        var status: String?
        var code: String?
        var recoverable: Bool?
        var mimeType: String?
        var image: [UInt8]?
        var message: String?
        var mrz: [String: Any]?
        var description: String { "\(status ?? "-") \(code ?? "") \(message ?? "") \(mimeType ?? "") mrz \(mrz.map { "\($0["accessKeyValid"] ?? "-")" } ?? "none")" }
    }

    private static let ids = Guest.Counter()

    func request(_ socket: RawWebSocket, _ action: String) async throws -> [String: Any] {
        try await response(socket, try await send(socket, action))
    }

    /// Sends a request; returns its correlation id.
    func send(_ socket: RawWebSocket, _ action: String) async throws -> String {
        let id = "vm-\(Self.ids.next())"
        let message = #"{"version":"1.0","correlationId":"\#(id)","type":"request","timestamp":1700000000000,"payload":{"action":"\#(action)"}}"#
        let sent = try await onThread { socket.sendText(message) }
        try #require(sent, "sending \(action) failed")
        return id
    }

    func response(_ socket: RawWebSocket, _ id: String) async throws -> [String: Any] {
        let text = try await onThread { () -> String? in
            guard let response = socket.response(to: id) else { return nil }
            return String(decoding: (try? JSONSerialization.data(withJSONObject: response)) ?? Data(), as: UTF8.self)
        }
        return try #require(text.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }, "no response to \(id)")
    }

    func awaitAnswer(_ socket: RawWebSocket, _ id: String) async throws -> Answer {
        Self.answer(try await response(socket, id))
    }

    func camera(_ socket: RawWebSocket, _ id: String) async throws -> Slot {
        let response = try await request(socket, "capability.query")
        let data = (response["payload"] as? [String: Any])?["data"] as? [String: Any]
        let entry = (data?["capabilities"] as? [String: Any])?[id] as? [String: Any]
        let constraints = entry?["constraints"] as? [String: Any]
        return Slot(permission: entry?["permissionState"] as? String, state: constraints?["state"] as? String, device: constraints?["device"] as? String,
                    format: constraints?["format"] as? String, resolution: constraints?["resolution"] as? String)
    }

    func waitFor(_ socket: RawWebSocket, _ id: String, state: String) async throws -> Slot {
        var slot = try await camera(socket, id)
        let deadline = ContinuousClock.now + .seconds(30)
        while slot.state != state, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(300))
            slot = try await camera(socket, id)
        }
        #expect(slot.state == state, "\(id) never became \(state): \(slot)")
        return slot
    }

    func capture(_ socket: RawWebSocket, _ action: String) async throws -> Answer {
        Self.answer(try await request(socket, action))
    }

    static func answer(_ response: [String: Any]) -> Answer {
        let payload = response["payload"] as? [String: Any] ?? [:]
        let data = payload["data"] as? [String: Any]
        let error = payload["error"] as? [String: Any]
        let encoded = data?["imageBase64"] as? String
        return Answer(status: payload["status"] as? String, code: error?["code"] as? String, recoverable: error?["recoverable"] as? Bool,
                      mimeType: data?["mimeType"] as? String, image: encoded.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) },
                      message: error?["message"] as? String, mrz: data?["mrz"] as? [String: Any])
    }

    /// An operator's GET of the operators' listener (127.0.0.1:8452 in the guest, never forwarded:
    /// busybox wget there, no Origin), its body from the share.
    func operatorGet(_ path: String) async throws -> String {
        try await guest.command("operator-get \(path)")
        return guest.text("operator.out")
    }

    /// A plain HTTP GET through the forwarded port (no Origin: an operator's tool, not a page).
    func get(_ path: String) async throws -> String {
        let port = guest.port
        return try await onThread {
            let socket = try RawSocket(port: port, timeout: 30)
            _ = socket.send("GET \(path) HTTP/1.1\r\nHost: \(Self.hostHeader)\r\nConnection: close\r\n\r\n")
            var received: [UInt8] = []
            while let bytes = socket.receive(), !bytes.isEmpty { received += bytes }
            // The body (the server answers with Content-Length and closes).
            guard let end = received.firstRange(of: [13, 10, 13, 10]) else { return "" }
            return String(decoding: received[end.upperBound...], as: UTF8.self)
        }
    }

    func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }
}
