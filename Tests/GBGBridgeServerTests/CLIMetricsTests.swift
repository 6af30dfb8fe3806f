import ChildProcesses
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `/metrics` as a fleet's Prometheus scrapes it: a real `gbgbridge demo` does a read for a page,
/// then the exposition is parsed by Python's prometheus_client (an independent parser).
@Suite("gbgbridge /metrics (Prometheus)", .serialized)
struct CLIMetricsTests {
    static let python = "/usr/bin/python3"

    /// The HTTP answer to GET `path` on 127.0.0.1:`port`: status and body.
    static func get(port: Int, path: String, origin: String? = nil) async throws -> (status: Int, body: String) {
        let socket = try await RawSocket.connect(port: port, timeout: 10)
        await socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + (origin.map { "Origin: \($0)\r\n" } ?? "") + "Connection: close\r\n\r\n")
        var bytes: [UInt8] = []
        while let chunk = await socket.receive(), !chunk.isEmpty { bytes += chunk }
        let text = String(decoding: bytes, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, body)
    }

    /// The samples prometheus_client's parser reads from `exposition`: "name{k=v,…}" → value.
    static func parse(_ exposition: String) async throws -> [String: Double] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).txt")
        try Data(exposition.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = {}
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for s in family.samples:
                    labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                    out[s.name + "{" + labels + "}"] = s.value
            print(json.dumps(out))
            """
        let outcome = try await runCommand(python, ["-c", script, file.path], timeout: .seconds(60))
        try #require(outcome.status == 0, "prometheus_client could not parse the exposition: \(outcome.standardError)\n\(exposition)")
        return try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Double])
    }

    @Test("a read through the demo shows in /metrics: reads, requests, phases, APDUs, pages; a page's Origin gets 403",
          .enabled(if: FileManager.default.isExecutableFile(atPath: CLIShutdownTests.binary), "needs the gbgbridge binary (swift build)"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: python), "needs /usr/bin/python3 with python3-prometheus-client"))
    func readThenScrape() async throws {
        let port = try freeLoopbackPort()
        let operators = try freeLoopbackPort()
        let demo = try ChildProcess(executable: CLIShutdownTests.binary, arguments: ["demo", "--port", "\(port)", "--operator-listen", "127.0.0.1:\(operators)"])
        defer { if demo.isRunning { demo.terminateBlocking(gracePeriod: .seconds(1)) } }
        let script = try await waitForScript(port: port)
        let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
        let origin = "http://127.0.0.1:\(port)"
        let page = try await RawWebSocket.connect(port: port, path: "/gbg-bridge/ws?token=\(token)", origin: origin, timeout: 30)
        let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#
        await page.sendText(requestJSON("nfc.read", id: "m1", data: #"{"accessKey":\#(key),"timeoutSeconds":20}"#))
        let response = try #require(await page.response(to: "m1"))
        let payload = try #require(response["payload"] as? [String: Any])
        #expect(payload["status"] as? String == "success", "\(payload)")

        #expect(try await Self.get(port: port, path: "/metrics").status == 404, "the journey's origin serves no metrics (issue 49)")
        #expect(try await Self.get(port: operators, path: "/metrics", origin: origin).status == 403)
        let scraped = try await Self.get(port: operators, path: "/metrics")
        #expect(scraped.status == 200)
        let samples = try await Self.parse(scraped.body)
        // The response counter is bumped as the answer goes out; a scrape right after may race it.
        var requests = samples["gbgbridge_requests_total{action=nfc.read,status=success}"]
        if requests == nil { requests = try await Self.parse(try await Self.get(port: operators, path: "/metrics").body)["gbgbridge_requests_total{action=nfc.read,status=success}"] }
        #expect(requests == 1)
        // The demo's passport opens with PACE (its MRZ as the password).
        #expect(samples["gbgbridge_reads_total{access_control=PACE,outcome=success}"] == 1, "\(samples.keys.sorted())")
        #expect(samples["gbgbridge_read_duration_seconds_count{phase=access_control}"] == 1)
        #expect(samples["gbgbridge_read_apdus_count{}"] == 1)
        // Every APDU's status word: a read is mostly 9000.
        #expect((samples["gbgbridge_card_status_words_total{sw=9000}"] ?? 0) >= 5, "\(samples.keys.filter { $0.contains("status_words") })")
        #expect(samples["gbgbridge_read_duration_seconds_count{phase=total}"] == 1)
        #expect(samples.keys.contains { $0.hasPrefix("gbgbridge_read_duration_seconds_bucket{le=") && $0.contains("phase=total") })
        #expect(samples["gbgbridge_pages_connected{}"] == 1)
        #expect(samples["gbgbridge_readers{}"] == 1)
        #expect(samples["gbgbridge_build_info{version=0.1.0}"] == 1)
        #expect((samples["gbgbridge_trust_anchor_expiry_timestamp_seconds{}"] ?? 0) > Date().timeIntervalSince1970)
        // Nothing of the document in the metrics.
        #expect(!scraped.body.contains("L898902C3") && !scraped.body.contains("ERIKSSON"))
    }

    @Test("serve --metrics-listen serves /metrics alone on its own address",
          .enabled(if: FileManager.default.isExecutableFile(atPath: CLIShutdownTests.binary), "needs the gbgbridge binary (swift build)"))
    func metricsListen() async throws {
        let port = try freeLoopbackPort()
        let metricsPort = try freeLoopbackPort()
        let serve = try ChildProcess(executable: CLIShutdownTests.binary, arguments: [
            "serve", "--port", "\(port)", "--metrics-listen", "127.0.0.1:\(metricsPort)",
        ])
        defer { if serve.isRunning { serve.terminateBlocking(gracePeriod: .seconds(1)) } }
        _ = try await waitForScript(port: port)
        var scraped = (status: 0, body: "")
        for _ in 0..<100 {
            if let answer = try? await Self.get(port: metricsPort, path: "/metrics"), answer.status == 200 {
                scraped = answer
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(scraped.status == 200)
        #expect(try await Self.parse(scraped.body)["gbgbridge_build_info{version=0.1.0}"] == 1)
        #expect(try await Self.get(port: metricsPort, path: "/gbg-bridge.js").status == 404)
        #expect(try await Self.get(port: metricsPort, path: "/metrics", origin: "http://127.0.0.1:\(port)").status == 403)
    }
}
