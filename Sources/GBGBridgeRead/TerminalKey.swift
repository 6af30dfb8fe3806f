import TextSanitizing
import CVCertificates
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ChildProcesses

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
            guard !command.trimmingWhitespace().isEmpty else {
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
        let outcome: ChildProcess.Outcome
        do {
            outcome = try await ChildProcess.run("/bin/sh", arguments: ["-c", command], input: message,
                                                 environment: ChildProcess.currentEnvironment.merging(["GBGBRIDGE_TA_ALGORITHM": algorithm.schemeName]) { $1 },
                                                 timeLimit: Self.timeLimit, outputLimit: 64 * 1024)
        } catch {
            throw CVCertificateError(.unsupportedAlgorithm, field: "terminal key", "exec: cannot start /bin/sh to run the signer")
        }
        guard !outcome.timedOut else {
            throw CVCertificateError(.badSignature, field: "terminal key", "exec: the signer did not finish within \(Self.timeLimit) and was stopped")
        }
        guard !outcome.overflowed else {
            throw CVCertificateError(.badSignature, field: "terminal key", "exec: the signer printed more than 64 KiB, which is no signature")
        }
        guard outcome.status == 0 else {
            let said = String(decoding: outcome.error.prefix(300), as: UTF8.self).trimmingWhitespace()
            throw CVCertificateError(.badSignature, field: "terminal key", "exec: the signer exited \(outcome.status)\(said.isEmpty ? "" : ": \(LogText.clip(said, to: 300))")")
        }
        let text = String(decoding: outcome.output, as: UTF8.self).trimmingWhitespace()
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

    /// How long a signer may take (an HSM behind a network, a PIN pad): past it, it is killed.
    static let timeLimit: Duration = .seconds(30)
}
