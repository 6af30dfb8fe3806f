import ChildProcesses
import Foundation
import TestSupport
import Testing

/// `serve --config FILE` (and /etc/gbgbridge/gbgbridge.conf): every option from one YAML file,
/// the command line over it, and a typo never silently ignored.
@Suite("gbgbridge serve --config", .serialized)
struct CLIConfigTests {
    static let binary = CLIShutdownTests.binary

    static func file(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gbgbridge-\(UUID().uuidString).conf")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test("bad files are refused naming the key and line, never the default silently",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"),
          arguments: [
              ("prot: 8450\n", "line 1): unknown key 'prot'"),
              ("port: 8450\ndiagnostic: true\n", "line 2): unknown key 'diagnostic'"),
              ("port: 8450\nport: 8451\n", "duplicated key(s): 'port'"),
              ("port: eighty\n", "'port' must be a whole number from 0 to 65535"),
              ("port: 70000\n", "'port' must be a whole number from 0 to 65535"),
              ("diagnostics: maybe\n", "'diagnostics' must be true or false"),
              ("log-format: xml\n", "'log-format' must be 'text' or 'json'"),
              ("allow-origin: {a: b}\n", "'allow-origin' must be a text or a list of texts"),
              ("metrics-listen: nowhere\n", "'metrics-listen' must be HOST:PORT"),
              ("- port\n- 8450\n", "expected 'key: value' lines"),
              ("port: [8450\n", "not valid YAML"),
              ("static: /nonexistent-gbg-dir\n", "--static /nonexistent-gbg-dir is not a directory"),
              ("kiosk: javascript:alert(1)\n", "--kiosk needs an http(s) URL"),
              ("inspect: 9222\n", "--inspect goes with --kiosk URL"),
              ("kiosk: http://127.0.0.1:1/\ninspect: 70000\n", "'inspect' must be PORT or HOST:PORT"),
              ("kiosk: http://127.0.0.1:1/\ninspect: host:port\n", "'inspect' must be PORT or HOST:PORT"),
              ("document-camera: video0\n", "'document-camera' must be auto, stub, or a device path"),
              ("selfie-camera: /etc/passwd\n", "'selfie-camera' must be auto, stub, or a device path"),
              ("document-resolution: 1920\n", "'document-resolution' must be WIDTHxHEIGHT"),
              ("selfie-resolution: 99999x1\n", "'selfie-resolution' must be WIDTHxHEIGHT"),
          ])
    func badFiles(_ text: String, _ expected: String) async throws {
        let url = try Self.file(text)
        defer { try? FileManager.default.removeItem(at: url) }
        let outcome = try await runCommand(Self.binary, ["serve", "--port", "0", "--config", url.path], timeout: .seconds(30))
        #expect(outcome.status != 0)
        #expect(outcome.standardError.contains(expected), "\(outcome.standardError)")
        #expect(outcome.standardError.contains(url.path) || expected.hasPrefix("--"), "the error names the file")
    }

    @Test("a missing --config file is an error; an empty one is no setting at all",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func missingAndEmpty() async throws {
        let missing = try await runCommand(Self.binary, ["serve", "--config", "/nonexistent/gbgbridge.conf"], timeout: .seconds(30))
        #expect(missing.status != 0)
        #expect(missing.standardError.contains("/nonexistent/gbgbridge.conf: no such file"))
        let comments = try Self.file("# nothing set here\n")
        defer { try? FileManager.default.removeItem(at: comments) }
        let port = try freeLoopbackPort()
        let serve = try await ServeProcess.start(["serve", "--config", comments.path, "--port", "\(port)"])
        defer { serve.stop() }
        #expect(serve.port == port)
    }

    @Test("the file's settings take effect and the command line overrides them",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func settingsApplyAndFlagsOverride() async throws {
        let filePort = try freeLoopbackPort()
        let metricsPort = try freeLoopbackPort()
        let url = try Self.file("""
            # gbgbridge serve settings
            port: \(filePort)
            allow-origin:
              - https://journey.example.com
            trust: \(TestFixtures.url("pki/csca.cert.pem").path)
            diagnostics: true
            metrics-listen: 127.0.0.1:\(metricsPort)
            log-format: json
            """)
        defer { try? FileManager.default.removeItem(at: url) }
        let serve = try await ServeProcess.start(["serve", "--config", url.path])
        #expect(serve.port == filePort, "the file's port")
        // diagnostics: true from the file (on the operators' listener); the trust store from the file.
        let operators = try #require(serve.operatorPort, "serve names its operators' listener")
        #expect(try await CLIMetricsTests.get(port: filePort, path: "/diagnostics.json").status == 404, "never on the journey's origin")
        let diagnostics = try await CLIMetricsTests.get(port: operators, path: "/diagnostics.json")
        #expect(diagnostics.status == 200)
        // (the file's trust is the kit's test CSCA: loaded, and flagged as test anchors)
        #expect(diagnostics.body.contains(#""anchors":1"#) && diagnostics.body.contains(#""testAnchors":1"#), "\(diagnostics.body.prefix(600))")
        var metrics = 0
        for _ in 0..<100 where metrics != 200 {
            metrics = (try? await CLIMetricsTests.get(port: metricsPort, path: "/metrics").status) ?? 0
            if metrics != 200 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(metrics == 200)
        serve.stop()

        // --port and --no-diagnostics on the command line win over the file.
        let overridden = try await ServeProcess.start([
            "serve", "--config", url.path, "--port", "0", "--no-diagnostics", "--metrics-listen", "127.0.0.1:\(try freeLoopbackPort())",
        ])
        defer { overridden.stop() }
        #expect(overridden.port != filePort)
        #expect(try await CLIMetricsTests.get(port: overridden.port, path: "/diagnostics.json").status == 404)
        let overriddenOperators = try #require(overridden.operatorPort)
        #expect(try await CLIMetricsTests.get(port: overriddenOperators, path: "/diagnostics.json").status == 404)
        #expect(try await CLIMetricsTests.get(port: overriddenOperators, path: "/metrics").status == 200)
    }
}
