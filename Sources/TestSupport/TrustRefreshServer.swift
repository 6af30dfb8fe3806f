import ChildProcesses
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The loopback HTTPS and HTTP servers `trust refresh` is tested against
/// (Fixtures/trust-refresh/server.py: Python's http.server + ssl, a test CA of its own), serving a
/// directory of trust material and the misbehaviours a refresh must survive; plus the test PKI's
/// CRLs (Fixtures/trust-refresh/crls.py). Both need Debian's python3-cryptography.
public final class TrustRefreshServer: @unchecked Sendable {
    public let process: ChildProcess
    /// Where the served files are (`/files/NAME`): a test may add or replace files while it runs.
    public let files: URL
    public let httpsPort: Int
    public let httpPort: Int
    /// The server's test CA (PEM), for `--ca-file`.
    public let caFile: String
    private let work: URL

    /// Starts the servers over `files` and waits (up to 30 s) for their "READY" line.
    public static func start(files: URL) async throws -> TrustRefreshServer {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("trust-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let outPath = work.appendingPathComponent("out").path
        let out = open(outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let err = open(work.appendingPathComponent("err").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let openError = errno
        // Ours to close once the child holds its copies, or when it could not be started.
        defer {
            if out >= 0 { close(out) }
            if err >= 0 { close(err) }
        }
        guard out >= 0, err >= 0 else {
            try? FileManager.default.removeItem(at: work)
            throw TrustRefreshServerError(description: "cannot create the server's output files in \(work.path): errno \(openError)")
        }
        let script = TestFixtures.url("trust-refresh/server.py").path
        let process: ChildProcess
        do {
            process = try ChildProcess(executable: "/usr/bin/python3", arguments: [script, files.path, work.path], inheriting: [1: out, 2: err])
        } catch {
            try? FileManager.default.removeItem(at: work)
            throw error
        }
        for _ in 0..<600 {
            let text = (try? String(contentsOf: URL(fileURLWithPath: outPath), encoding: .utf8)) ?? ""
            if let match = text.firstMatch(of: /READY (\d+) (\d+) (\S+)/), let https = Int(match.1), let http = Int(match.2) {
                return TrustRefreshServer(process: process, files: files, httpsPort: https, httpPort: http, caFile: String(match.3), work: work)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = (try? String(contentsOf: work.appendingPathComponent("err"), encoding: .utf8)) ?? ""
        if process.isRunning { process.terminateBlocking(gracePeriod: .seconds(1)) }
        try? FileManager.default.removeItem(at: work)
        throw TrustRefreshServerError(description: "Fixtures/trust-refresh/server.py did not start (python3-cryptography missing?): \(log.suffix(1500))")
    }

    private init(process: ChildProcess, files: URL, httpsPort: Int, httpPort: Int, caFile: String, work: URL) {
        (self.process, self.files, self.httpsPort, self.httpPort, self.caFile, self.work) = (process, files, httpsPort, httpPort, caFile, work)
    }

    public func https(_ path: String) -> String { "https://127.0.0.1:\(httpsPort)\(path)" }
    public func http(_ path: String) -> String { "http://127.0.0.1:\(httpPort)\(path)" }

    public func stop() {
        if process.isRunning { process.terminateBlocking(gracePeriod: .seconds(1)) }
        try? FileManager.default.removeItem(at: work)
    }

    deinit { stop() }

    /// Writes the test PKI CSCA's CRLs into `directory` (`mid.crl`, `new.crl` revoking the
    /// document signer `ds.cert.pem`, `old.crl`, `future.crl`, `forged.crl`: crls.py says how).
    public static func writeTestCRLs(into directory: URL) async throws {
        let outcome = try await runCommand("/usr/bin/python3", [
            TestFixtures.url("trust-refresh/crls.py").path, TestFixtures.url("pki/csca.cert.pem").path,
            TestFixtures.url("pki/csca.key.pem").path, TestFixtures.url("pki/ds.cert.pem").path, directory.path,
        ], timeout: .seconds(60))
        guard outcome.status == 0 else {
            throw TrustRefreshServerError(description: "crls.py failed (python3-cryptography missing?): \(outcome.standardError.suffix(1000))")
        }
    }
}

public struct TrustRefreshServerError: Error, CustomStringConvertible {
    public let description: String
}
