import ChildProcesses
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A `gbgbridge serve` (or `demo`) child whose port is known from its own first line ("GBGBridge
/// host on http://127.0.0.1:PORT/"): printed only once it listens, so a test never mistakes
/// another test's server on a recycled port for its own.
final class ServeProcess: @unchecked Sendable {
    let process: ChildProcess
    let port: Int
    /// The operators' listener (`/metrics`, `/diagnostics`), from the line "Operators on http://127.0.0.1:PORT/".
    let operatorPort: Int?
    let directory: URL

    /// Starts `gbgbridge ARGUMENTS` and waits (up to 20 s) for the line with the port.
    static func start(_ arguments: [String]) async throws -> ServeProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let out = open(directory.appendingPathComponent("out").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let err = open(directory.appendingPathComponent("err").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let process = try ChildProcess(executable: CLIShutdownTests.binary, arguments: arguments, inheriting: [1: out, 2: err])
        close(out)
        close(err)
        for _ in 0..<400 {
            let text = (try? String(contentsOf: directory.appendingPathComponent("out"), encoding: .utf8)) ?? ""
            if let match = text.firstMatch(of: /http:\/\/127\.0\.0\.1:(\d+)\//), let port = Int(match.1) {
                // The operators' line is printed right after the first (serve, demo --diagnostics).
                var operators: Int?
                for _ in 0..<20 {
                    let text = (try? String(contentsOf: directory.appendingPathComponent("out"), encoding: .utf8)) ?? ""
                    if let line = text.firstMatch(of: /(?:Operators on|Diagnostics for operators:) http:\/\/127\.0\.0\.1:(\d+)\//) {
                        operators = Int(line.1)
                        break
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return ServeProcess(process: process, port: port, operatorPort: operators, directory: directory)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("err"), encoding: .utf8)) ?? ""
        if process.isRunning { process.terminateBlocking(gracePeriod: .seconds(1)) }
        try? FileManager.default.removeItem(at: directory)
        throw RawSocketError("gbgbridge \(arguments.joined(separator: " ")) did not start listening: \(log.suffix(1500))")
    }

    private init(process: ChildProcess, port: Int, operatorPort: Int?, directory: URL) {
        self.process = process
        self.port = port
        self.operatorPort = operatorPort
        self.directory = directory
    }

    var standardError: String { (try? String(contentsOf: directory.appendingPathComponent("err"), encoding: .utf8)) ?? "" }

    func stop() {
        if process.isRunning { process.terminateBlocking(gracePeriod: .seconds(2)) }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
