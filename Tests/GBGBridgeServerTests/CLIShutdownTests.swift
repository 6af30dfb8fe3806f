import ChildProcesses
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `gbgbridge serve --kiosk` as an operator runs it: a kiosk Chromium, a page in the middle of an
/// `nfc.read` (a reader with no card: the read waits), then Ctrl-C.
@Suite("gbgbridge serve: stopping", .serialized)
struct CLIShutdownTests {
    static let binary = TestFixtures.packageRoot.appendingPathComponent(".build/debug/gbgbridge").path

    @Test("SIGINT stops quietly: pages closed, the read cancelled, Chromium gone, exit 0",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"),
          .enabled(if: ChromiumAvailable.value, "needs Chromium (scripts/install-deps.sh installs it)"))
    func sigintWithAKioskAndAReadInProgress() async throws {
        // The read waits on an empty vpcd reader of the test's private pcscd (inherited by the child).
        let running = await PCSCDHarness.shared.ensureRunning()
        let reason = await PCSCDHarness.shared.unavailableReason ?? ""
        try #require(running, "\(reason)")
        // Other tests put cards into the vpcd readers: hold them, empty, for this test.
        try await PCSCDHarness.shared.withExclusiveReaders { try await self.stopWithAReadInProgress() }
    }

    func stopWithAReadInProgress() async throws {
        let port = try freeLoopbackPort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gbg-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = open(directory.appendingPathComponent("out").path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let err = open(directory.appendingPathComponent("err").path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let serve = try ChildProcess(executable: Self.binary, arguments: [
            "serve", "--port", "\(port)", "--static", TestFixtures.url("journey").path,
            "--kiosk", "http://127.0.0.1:\(port)/", "--headless",
        ], inheriting: [1: out, 2: err])
        close(out)
        close(err)
        defer { if serve.isRunning { serve.terminateBlocking(gracePeriod: .seconds(1)) } }

        // The server answers, the kiosk shows the journey, and a page starts a read.
        let script = try await waitForScript(port: port)
        let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
        let page = try await RawWebSocket.connect(port: port, path: "/gbg-bridge/ws?token=\(token)", origin: "http://127.0.0.1:\(port)",
                                                  timeout: 10)
        await page.sendText(requestJSON("nfc.read", id: "r", data: #"{"accessKey":{"can":"123456"},"timeoutSeconds":60}"#))
        // The read is under way once the page hears it wait for a card (not before: a loaded machine
        // can take a while to get there, and a stop before that has no read to cancel).
        var waiting = false
        for _ in 0..<20 {
            guard let text = await page.receiveText() else { break }
            if text.contains("waitingForCard") { waiting = true; break }
        }
        try #require(waiting, "the read should report waitingForCard")
        #expect(await waitUntil(15) { Self.log(directory, "err").contains("bridging http://127.0.0.1:\(port)") })
        let browsers = Self.descendants(of: serve.pid)
        #expect(!browsers.isEmpty, "the kiosk's Chromium should run")

        #expect(serve.send(SIGINT))
        #expect(await waitUntil(10) { !serve.isRunning })
        #expect(serve.exitStatus == 0)
        // The page was closed with a close frame, not just dropped.
        #expect(await page.receiveCloseCode() != nil)
        let stderr = Self.log(directory, "err")
        for marker in ["error", "critical", "Waiting on child channel", "Segmentation", "Fatal"] {
            #expect(!stderr.contains(marker), "stderr has '\(marker)':\n\(stderr)")
        }
        #expect(stderr.contains("nfc.read r: CANCELLED"), "\(stderr)")
        #expect(stderr.contains("stopped"))
        #expect(await waitUntil(5) { browsers.allSatisfy { kill($0, 0) != 0 } }, "Chromium processes left: \(browsers)")
    }

    static func log(_ directory: URL, _ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    /// Every process below `pid` (from /proc).
    static func descendants(of pid: pid_t) -> [pid_t] {
        var parents: [pid_t: pid_t] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let child = pid_t(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { parents[child] = parent }
        }
        var result: [pid_t] = []
        var frontier = [pid]
        while let next = frontier.popLast() {
            let children = parents.filter { $0.value == next }.map(\.key)
            result += children
            frontier += children
        }
        return result
    }

}

/// Waits until a `gbgbridge serve` on `port` serves /gbg-bridge.js; returns the answer.
func waitForScript(port: Int) async throws -> String {
    for _ in 0..<200 {
        if let socket = try? await RawSocket.connect(port: port) {
            await socket.send("GET /gbg-bridge.js HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
            var text: [UInt8] = []
            while let bytes = await socket.receive(), !bytes.isEmpty { text += bytes }
            let answer = String(decoding: text, as: UTF8.self)
            if answer.hasPrefix("HTTP/1.1 200") { return answer }
        }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw RawSocketError("the server did not answer on port \(port)")
}

enum ChromiumAvailable {
    static let value = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].contains { FileManager.default.isExecutableFile(atPath: $0) }
}
