import CVCertificates
import Foundation

/// The Inspection System's private key as the configuration names it (`--terminal-key`,
/// `terminal-key:`): a PKCS#8 file, a `pkcs11:` URI (RFC 7512) or `exec:COMMAND`.
package enum TerminalKey {
    /// An Inspection System's credentials: the CV certificates at `certificatePaths` (files or
    /// directories; the chain found by CAR/CHR) and the private key `key` names.
    package static func credentials(certificatePaths: [String], key: String) throws(CVCertificateError) -> TerminalCredentials {
        try TerminalCredentials(certificates: try TerminalCredentials.certificates(at: certificatePaths), signer: try signer(key))
    }

    package static func signer(_ key: String) throws(CVCertificateError) -> any TerminalSigner {
        if key.hasPrefix("exec:") {
            let command = String(key.dropFirst(5))
            guard !command.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw CVCertificateError(.malformed, field: "terminal key", "exec: needs a command")
            }
            return CommandSigner(command: command)
        }
        if key.hasPrefix("pkcs11:") { return try PKCS11Signer(uri: key) }
        return try PrivateKeySigner(contentsOf: URL(fileURLWithPath: key))
    }
}

/// `exec:COMMAND`: signs by running COMMAND (with /bin/sh) with the data to sign on stdin; its
/// standard output is the signature (raw bytes, or hex or base64 text). For a signing service or
/// an HSM the host cannot load. The data signed is ID_PICC ‖ r_PICC ‖ Comp(PK_PCD): no secret.
package struct CommandSigner: TerminalSigner {
    package let command: String

    package func sign(_ message: [UInt8], algorithm: CVSignatureAlgorithm) async throws(CVCertificateError) -> [UInt8] {
        let outcome: (status: Int32, output: Data, error: Data)
        do {
            outcome = try await Self.run(command, input: Data(message), algorithm: algorithm)
        } catch {
            throw CVCertificateError(.unsupportedAlgorithm, field: "terminal key", "exec: cannot start /bin/sh to run the signer")
        }
        guard outcome.status == 0 else {
            let said = String(decoding: outcome.error.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw CVCertificateError(.badSignature, field: "terminal key", "exec: the signer exited \(outcome.status)\(said.isEmpty ? "" : ": \(said)")")
        }
        let text = String(decoding: outcome.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if !text.isEmpty, text.count.isMultiple(of: 2), text.allSatisfy(\.isHexDigit) {
            var bytes: [UInt8] = []
            var index = text.startIndex
            while index < text.endIndex {
                let next = text.index(index, offsetBy: 2)
                if let byte = UInt8(text[index..<next], radix: 16) { bytes.append(byte) }
                index = next
            }
            return bytes
        }
        if let decoded = Data(base64Encoded: text), !decoded.isEmpty, text.allSatisfy({ $0.isASCII && !$0.isWhitespace }) { return [UInt8](decoded) }
        guard !outcome.output.isEmpty else { throw CVCertificateError(.badSignature, field: "terminal key", "exec: the signer printed nothing") }
        return [UInt8](outcome.output)
    }

    /// A running signer, stopped if it takes longer than 30 s.
    package final class Watched: @unchecked Sendable {  // Process is used from the timer's queue only to stop it
        package let process: Process
        package init(process: Process) { self.process = process }
    }

    /// Runs the command off the cooperative pool (Process waits on its own thread), at most 30 s.
    package static func run(_ command: String, input: Data, algorithm: CVSignatureAlgorithm) async throws -> (status: Int32, output: Data, error: Data) {
        try await withCheckedThrowingContinuation { continuation in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            var environment = ProcessInfo.processInfo.environment
            environment["GBGBRIDGE_TA_ALGORITHM"] = algorithm.schemeName
            process.environment = environment
            let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
            process.standardInput = stdin
            process.standardOutput = stdout
            process.standardError = stderr
            process.terminationHandler = { finished in
                let output = stdout.fileHandleForReading.readDataToEndOfFile()
                let error = stderr.fileHandleForReading.readDataToEndOfFile()
                continuation.resume(returning: (finished.terminationStatus, output, error))
            }
            do {
                try process.run()
            } catch {
                continuation.resume(throwing: error)
                return
            }
            let watched = Watched(process: process)
            DispatchQueue.global().asyncAfter(deadline: .now() + 30) { if watched.process.isRunning { watched.process.terminate() } }
            // A signer that exits without reading its input is no error of ours: EPIPE is ignored here.
            try? stdin.fileHandleForWriting.write(contentsOf: input)
            try? stdin.fileHandleForWriting.close()
        }
    }
}
