import ChildProcesses
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `gbgbridge serve --log-format json` as journald and a log shipper read it.
@Suite("gbgbridge serve --log-format json")
struct CLILogFormatTests {
    @Test("every line of the log is one JSON object with time, level, label, event; hostile text stays inside its string",
          .enabled(if: FileManager.default.isExecutableFile(atPath: CLIShutdownTests.binary), "needs the gbgbridge binary (swift build)"))
    func jsonLines() async throws {
        let port = try freeLoopbackPort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gbg-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let err = open(directory.appendingPathComponent("err").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let serve = try ChildProcess(executable: CLIShutdownTests.binary, arguments: [
            "serve", "--port", "\(port)", "--allow-origin", "http://journey.example", "--log-format", "json", "--verbose",
        ], inheriting: [2: err])
        close(err)
        defer { if serve.isRunning { serve.terminateBlocking(gracePeriod: .seconds(1)) } }
        _ = try await waitForScript(port: port)
        // A page from an origin that is not allowed, whose name tries to end the line and forge another.
        let socket = try await RawSocket.connect(port: port, timeout: 5)
        await socket.send("GET /gbg-bridge/ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Origin: http://evil.example\\\",\\\"level\\\":\\\"critical\r\n\r\n")
        _ = await socket.receive()
        #expect(await waitUntil(10) { CLIShutdownTests.log(directory, "err").contains("refused") })
        #expect(serve.send(SIGTERM))
        #expect(await waitUntil(10) { !serve.isRunning })
        let lines = CLIShutdownTests.log(directory, "err").split(separator: "\n")
        #expect(lines.count >= 3)
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            #expect(object["time"] is String && object["level"] is String && object["label"] is String && object["event"] is String, "\(line)")
            #expect((object["time"] as? String)?.hasSuffix("Z") == true)
            #expect(["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(object["level"] as? String ?? ""))
            #expect(object["level"] as? String != "critical", "a forged level: \(line)")
        }
        #expect(lines.contains { $0.contains("\"event\":\"stopped\"") })
    }
}
