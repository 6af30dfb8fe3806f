import Foundation
import GBGBridge
import GBGBridgeServer
import MRTD
import MRTDEmulator
import TestSupport
import Testing

/// Issue 18's cases through a real BridgeServer on loopback: a frame that used to bring the whole
/// host down, envelopes that used to go unanswered or be read differently from the page, and
/// static paths that hid a different file type.
@Suite("Hostile input through the server (loopback sockets)", .serialized)
struct HostileInputTests {
    static let crashFrame = #"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"nfc.read","data":{"accessKey":{"mrz":"P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL89890\u03012C36UTO7408122F1204159ZE184226B<<<<<10"}}}}"#

    @Test("the frame that crashed the host is answered INVALID_REQUEST; this page and others go on")
    func crashFrame() async throws {
        let rig = try await ServerRig.start()
        defer { Task { await rig.stop() } }
        let page = try await rig.page()
        let bystander = try await rig.page()
        await page.sendText(Self.crashFrame)
        let answer = try #require(await page.response(to: "x"))
        let error = try #require((answer["payload"] as? [String: Any])?["error"] as? [String: Any])
        #expect(error["code"] as? String == "INVALID_REQUEST")
        #expect((error["message"] as? String)?.hasPrefix("accessKey.mrz") == true)
        #expect((error["message"] as? String)?.contains("L89890") == false)
        for (socket, id) in [(page, "after"), (bystander, "other")] {
            await socket.sendText(requestJSON("capability.query", id: id))
            let query = try #require(await socket.response(to: id))
            #expect((query["payload"] as? [String: Any])?["status"] as? String == "success")
        }
        // Document numbers and dates with marks inside are refused the same way, field named.
        for (id, key, field) in [
            ("n", #"{"documentNumber":"L\u0332898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#, "accessKey.documentNumber"),
            ("b", #"{"documentNumber":"L898902C3","dateOfBirth":"7\u030140812","dateOfExpiry":"120415"}"#, "accessKey.dateOfBirth"),
            ("c", #"{"can":"1\u030112233"}"#, "accessKey.can"),
        ] {
            await page.sendText(requestJSON("nfc.read", id: id, data: #"{"accessKey":\#(key)}"#))
            let refusal = try #require(await page.response(to: id))
            let payload = refusal["payload"] as? [String: Any]
            #expect((payload?["error"] as? [String: Any])?["code"] as? String == "INVALID_REQUEST")
            #expect(((payload?["error"] as? [String: Any])?["message"] as? String)?.hasPrefix(field) == true)
        }
        #expect(rig.chip.statistics.apdus == 0, "no bad key reached the chip")
    }

    @Test("every request whose correlationId can be read is answered, as the page's JSON.parse would read it", arguments: [
        (#"{"version":"1.0","correlationId":"e","type":"request","payload":{"action":"capability.query"}}"#, "INVALID_REQUEST"),
        (#"{"version":1,"correlationId":"e","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST"),
        (#"{"version":"1.0","correlationId":"e","type":"bogus","timestamp":1,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST"),
        (#"{"version":"1.0","correlationId":"e","type":"request","timestamp":"1","payload":{"action":"capability.query"}}"#, "INVALID_REQUEST"),
        (#"{"version":"1.0","correlationId":"e","type":"request","timestamp":1,"payload":{}}"#, "INVALID_REQUEST"),
        (#"{"version":"1.0","correlationId":"e","type":"request","timestamp":1e999,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST"),
        (#"{"version":"1.0","correlationId":"e","type":"request","timestamp":NaN,"payload":{"action":"capability.query"}}"#, "INVALID_REQUEST"),
        (#"{"version":"1.0","correlationId":"e","type":"request","timestamp":1,"payload":{"action":"capability.query","data":{"s":"\ud83d"}}}"#, "INVALID_REQUEST"),
        (#"{"version":"2.0","correlationId":"e","type":"request","timestamp":1,"payload":{"action":"capability.query"}}"#, "UNSUPPORTED_VERSION"),
        (#"{"version":"1.0","correlationId":"e","type":"request","timestamp":1,"payload":{"action":"capability.query","action":"nfc.read"}}"#, "INVALID_REQUEST"),
    ])
    func envelopes(json: String, code: String) async throws {
        let rig = try await ServerRig.start()
        defer { Task { await rig.stop() } }
        let page = try await rig.page()
        await page.sendText(json)
        let answer = try #require(await page.response(to: "e"))
        let payload = answer["payload"] as? [String: Any]
        #expect(payload?["status"] as? String == "error")
        #expect((payload?["error"] as? [String: Any])?["code"] as? String == code)
        #expect(payload?["data"] == nil, "served as something: \(answer)")
        #expect(rig.chip.statistics.apdus == 0)
    }

    @Test("static files: encoded NUL and separators are 400, types come from the real extension, nosniff on every answer")
    func staticFiles() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("static-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("console.log('journey')".utf8).write(to: directory.appendingPathComponent("journey.js"))
        try Data("<p>hi</p>".utf8).write(to: directory.appendingPathComponent("index.html"))
        try Data("<script>alert(1)</script>".utf8).write(to: directory.appendingPathComponent("notes.xyz"))
        let rig = try await ServerRig.start(staticDirectory: directory.path)
        defer { Task { await rig.stop() } }

        for path in ["/journey.js%00.html", "/journey.js%00", "/a%2Fjourney.js", "/a%2fb", "/%5Cjourney.js", "/x%5c",
                     "/%2e%2e/etc/passwd", "/journey.js%0a", "/bad%zz", "/..%2f"] {
            let answer = try await rig.rawResponse(path: path)
            #expect(answer.status == 400, "\(path): \(answer.status)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(path)")
        }
        let script = try await rig.rawResponse(path: "/journey.js")
        #expect(script.status == 200)
        #expect(script.headers["content-type"]?.hasPrefix("application/javascript") == true
                || script.headers["content-type"]?.hasPrefix("text/javascript") == true, "\(script.headers)")
        #expect(script.headers["x-content-type-options"] == "nosniff")
        let unknown = try await rig.rawResponse(path: "/notes.xyz")
        #expect(unknown.status == 200 && unknown.headers["content-type"] == "application/octet-stream", "\(unknown.headers)")
        #expect(unknown.headers["x-content-type-options"] == "nosniff")
        for path in ["/", "/index.html", "/gbg-bridge.js", "/missing.html"] {
            let answer = try await rig.rawResponse(path: path)
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(path): \(answer.status)")
        }
        let html = try await rig.rawResponse(path: "/index.html")
        #expect(html.headers["content-type"]?.hasPrefix("text/html") == true)
    }

    @Test("a face that declares 4000×4000 in a few hundred bytes reaches the page decoded at a resolution within budget")
    func imageBomb() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("bomb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(SyntheticJPEG2000.codestream(width: 4000, height: 4000, levels: 5)).write(to: directory.appendingPathComponent("bomb.j2k"))
        let description = PassportDescription(mrz: ["P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<", "L898902C36UTO7408122F1204159ZE184226B<<<<<10"],
                                              faceImage: "bomb.j2k")
        let passport = try EmulatedPassport(description: description, baseDirectory: directory, signer: try TestFixtures.documentSigner())
        let rig = try await ServerRig.start(chip: VirtualPassportChip(passport: passport))
        defer { Task { await rig.stop() } }
        let page = try await rig.page()
        await page.sendText(requestJSON("nfc.read", id: "r", data: #"{"accessKey":{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"},"dataGroups":["DG1","DG2"]}"#))
        let answer = try #require(await page.response(to: "r"))
        let data = try #require((answer["payload"] as? [String: Any])?["data"] as? [String: Any])
        #expect(data["photoWidth"] as? Int == 1000 && data["photoHeight"] as? Int == 1000, "\(data["photoWidth"] ?? "none")")
        #expect(data["photoMimeType"] as? String == "image/jpeg")
    }
}
