import ArgumentParser
import Foundation
import GBGBridgeHost

@main
struct GBGBridgeCommand: AsyncParsableCommand {
    /// Runs the tool. Usage errors exit with status 2 (not ArgumentParser's 64), as scripts and
    /// the documented exit codes of `gbgbridge read` expect.
    static func main() async {
        // A peer that goes away (a signer command that exits early, a closed pipe on stdout) is an
        // EPIPE error where it happens, never a SIGPIPE that kills the host.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                // Print the usage message, then exit 2.
                let message = fullMessage(for: error)
                if !message.isEmpty { FileHandle.standardError.write(Data((message + "\n").utf8)) }
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "gbgbridge",
        abstract: "GBGBridge for Linux: the native host for GBG identity-verification web journeys.",
        discussion: """
            Runs the GBGBridge host that lets an unmodified web journey use the native \
            capabilities of a Linux kiosk over the GBGBridge JSON message protocol.
            """,
        version: GBGBridgeVersion.current,
        subcommands: [ServeCommand.self, DemoCommand.self, ReadersCommand.self, ReadCommand.self, VerifyCommand.self,
                      EmulateCommand.self, TranscriptCommand.self, DoctorCommand.self, TrustCommand.self, TerminalCommand.self],
        defaultSubcommand: nil
    )
}

