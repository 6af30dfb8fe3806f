import ChildProcesses
import Foundation
import TestSupport
import Testing

/// A `serve` started before a `trust refresh` answers its next nfc.read with the refreshed store, no
/// restart (issue 45): a real pcscd with the emulator (its EF.SOD signed by the test PKI's document
/// signer), a trust store of the test CSCA and a CRL that revokes nothing, then a refresh from a
/// loopback HTTPS server brings the CRL that revokes the document signer.
@Suite("gbgbridge serve reloads a refreshed trust store", .serialized)
struct CLITrustReloadTests {
    static let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#

    @Test("a revoked document signer is reported as revoked on the read after the refresh",
          .enabled(if: FileManager.default.isExecutableFile(atPath: CLIShutdownTests.binary), "needs the gbgbridge binary (swift build)"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3 with cryptography"))
    func revokedAfterRefresh() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("trust-reload-\(UUID().uuidString)")
        let served = root.appendingPathComponent("served")
        let store = root.appendingPathComponent("trust")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try await TrustRefreshServer.writeTestCRLs(into: served)
        try FileManager.default.copyItem(at: TestFixtures.url("pki/csca.cert.der"), to: store.appendingPathComponent("csca.der"))
        try FileManager.default.copyItem(at: served.appendingPathComponent("mid.crl"), to: store.appendingPathComponent("csca.crl"))
        let server = try await TrustRefreshServer.start(files: served)
        defer { server.stop() }

        try await PCSCDHarness.withEmulatorCommand(["--passport", "Fixtures/passports/utopia-demo.json"]) {
            let serve = try await ServeProcess.start(["serve", "--port", "0", "--config", "/dev/null", "--trust", store.path])
            defer { serve.stop() }
            let port = serve.port
            let script = try await waitForScript(port: port)
            let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
            let page = try await RawWebSocket.connect(port: port, path: "/gbg-bridge/ws?token=\(token)", origin: "http://127.0.0.1:\(port)", timeout: 30)
            func passive(_ id: String) async throws -> [String: Any] {
                await page.sendText(requestJSON("nfc.read", id: id, data: #"{"accessKey":\#(Self.key),"timeoutSeconds":30,"dataGroups":["DG1"]}"#))
                let read = try #require(await page.response(to: id))
                let payload = try #require(read["payload"] as? [String: Any])
                try #require(payload["status"] as? String == "success", "\(read)")
                let data = try #require(payload["data"] as? [String: Any])
                return try #require((data["verification"] as? [String: Any])?["passive"] as? [String: Any], "\(data.keys)")
            }
            let first = try await passive("before")
            #expect(first["status"] as? String == "valid", "\(first)")

            let refresh = try await runCommand(CLIShutdownTests.binary, [
                "trust", "refresh", "--config", "/dev/null", "--store", store.path, "--ca-file", server.caFile,
                "--source", "crl=" + server.https("/files/new.crl"),
            ], timeout: .seconds(120))
            #expect(refresh.status == 0, "\(refresh.standardOutput) \(refresh.standardError)")

            // The watcher looks every 2 s; its log line says it reloaded (with counts, no restart).
            var reloaded = false
            for _ in 0..<300 where !reloaded {
                reloaded = serve.standardError.contains("trust store reloaded")
                if !reloaded { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(reloaded, "serve never logged a reload: \(serve.standardError.suffix(1500))")
            #expect(serve.standardError.contains("1 CRLs"), "\(serve.standardError.suffix(800))")
            #expect(serve.process.isRunning)

            let second = try await passive("after")
            #expect(second["status"] as? String == "invalid", "\(second)")
            #expect((second["detail"] as? String ?? "").contains("revoked"), "\(second)")

            // SIGHUP reloads at once, too.
            _ = serve.process.send(SIGHUP)
            var hups = false
            for _ in 0..<100 where !hups {
                hups = serve.standardError.contains("trust store reloaded (SIGHUP)")
                if !hups { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(hups, "\(serve.standardError.suffix(800))")
            #expect(serve.process.isRunning, "SIGHUP must not end serve")
        }
    }
}
