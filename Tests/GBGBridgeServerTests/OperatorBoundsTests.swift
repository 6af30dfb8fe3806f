import Foundation
import TestSupport
import Testing

/// The operators' surfaces against a hostile page and a hostile local process, through a real
/// `gbgbridge demo` (its emulated reader reads for real): 20,000 made-up actions do not grow
/// /metrics (label values from a closed set; parsed by Python's prometheus_client), and 300
/// `/diagnostics/events` streams do not keep a page from connecting and reading.
@Suite("Operator surfaces are bounded", .serialized)
struct OperatorBoundsTests {
    static let binary = CLIShutdownTests.binary
    static let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#

    static func page(_ port: Int) async throws -> RawWebSocket {
        let script = try await waitForScript(port: port)
        let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
        return try await RawWebSocket.connect(port: port, path: "/gbg-bridge/ws?token=\(token)", origin: "http://127.0.0.1:\(port)")
    }

    @Test("20,000 requests with distinct made-up actions: requests_total stays a handful of series, /metrics stays small",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func metricsCardinality() async throws {
        let operators = try freeLoopbackPort()
        let demo = try await ServeProcess.start(["demo", "--port", "0", "--passport", "utopia-td3-jpeg", "--operator-listen", "127.0.0.1:\(operators)"])
        defer { demo.stop() }
        let before = try await CLIMetricsTests.get(port: operators, path: "/metrics")
        // Sixteen pages (the host's page limit), each sending its share as fast as the host reads.
        let pages = 16, perPage = 1_250
        try await withThrowingTaskGroup(of: Void.self) { group in
            for page in 0..<pages {
                group.addTask {
                    let socket = try await Self.page(demo.port)
                    for index in 0..<perPage {
                        await socket.sendText(requestJSON("made.up.action.\(page).\(index)", id: "r\(page)-\(index)"))
                    }
                    // The last answer means every earlier one was counted.
                    _ = await socket.response(to: "r\(page)-\(perPage - 1)")
                }
            }
            try await group.waitForAll()
        }
        let after = try await CLIMetricsTests.get(port: operators, path: "/metrics")
        let samples = try await CLIMetricsTests.parse(after.body)
        let requestSeries = samples.keys.filter { $0.hasPrefix("gbgbridge_requests_total{") }
        #expect(requestSeries.count <= 5 * 5, "\(requestSeries.count) series: \(requestSeries.prefix(10))")
        #expect(requestSeries.allSatisfy { !$0.contains("made.up") })
        let other = samples.filter { $0.key.hasPrefix("gbgbridge_requests_total{") && $0.key.contains("action=other") }.values.reduce(0, +)
        // Counted (a page past its rate may have some messages refused; what was answered counts).
        #expect(other > Double(pages * perPage) / 4, "\(other) counted as action=\"other\"")
        #expect(after.body.utf8.count < before.body.utf8.count + 16_384, "/metrics grew from \(before.body.utf8.count) to \(after.body.utf8.count) bytes")
        let peak = try #require(HostileCardServeTests.peakMemory(demo.process.pid))
        #expect(peak < 200 * 1_024, "the host peaked at \(peak / 1_024) MiB")
    }

    @Test("300 open /diagnostics/events streams: a page still connects and reads, /diagnostics.json answers, at most 8 streams live",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func diagnosticsStreamsDoNotStarvePages() async throws {
        let demo = try await ServeProcess.start(["demo", "--port", "0", "--diagnostics", "--passport", "utopia-td3-jpeg"])
        defer { demo.stop() }
        let operators = try #require(demo.operatorPort, "the demo names its operators' listener")
        var streams: [RawSocket] = []
        for _ in 0..<300 {
            guard let socket = try? await RawSocket.connect(port: operators, timeout: 10) else { continue }
            await socket.send("GET /diagnostics/events HTTP/1.1\r\nHost: 127.0.0.1:\(operators)\r\nAccept: text/event-stream\r\n\r\n")
            streams.append(socket)
        }
        // A page connects and reads while they are open (and keep opening).
        let page = try await Self.page(demo.port)
        await page.sendText(requestJSON("nfc.read", id: "read", data: #"{"accessKey":\#(Self.key),"timeoutSeconds":20}"#))
        let answer = try #require(await page.response(to: "read"), "the page got no answer")
        #expect((answer["payload"] as? [String: Any])?["status"] as? String == "success", "\(answer)")
        let snapshot = try await CLIMetricsTests.get(port: operators, path: "/diagnostics.json")
        #expect(snapshot.status == 200)
        // The server ended all but the newest streams: their connections are closed.
        var open = 0
        for socket in streams where !(await socket.closedByPeer(within: 0.05)) { open += 1 }
        #expect(open <= 8 + 2, "\(open) of \(streams.count) streams still open")
    }
}
