import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// How every gbgbridge binary runs its root command: usage errors exit with status 2 (not
/// ArgumentParser's 64), as scripts and the documented exit codes of `gbgbridge read` expect, and
/// a peer that goes away (a signer command that exits early, a closed pipe on stdout) is an EPIPE
/// error where it happens, never a SIGPIPE that kills the process.
package enum CommandMain {
    ///
    /// The process ends with `_exit` once the output is flushed, never `exit`: `exit` runs the C
    /// libraries' destructors while their threads may still be inside a call — pcsc-lite's card
    /// thread, blocked in a transmit or a status wait, dereferenced freed memory and crashed a
    /// `read` that had already printed its error (a clean-clone CI run). Nothing this program needs
    /// happens in a destructor: files are closed where they are written.
    package static func run<Root: ParsableCommand>(_ root: Root.Type) async -> Never {
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try Root.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            end(0)
        } catch {
            let code = Root.exitCode(for: error)
            let message = Root.fullMessage(for: error)
            if code == .validationFailure {
                if !message.isEmpty { printError(message) }
                end(2)
            }
            if !message.isEmpty {
                // Help and version go to standard output, errors to standard error (as ArgumentParser's exit does).
                if code == .success { print(message) } else { printError(message) }
            }
            end(code.rawValue)
        }
    }

    /// Flushes standard output and error, then ends the process without running destructors.
    static func end(_ status: Int32) -> Never {
        fflush(nil)
        _exit(status)
    }

    /// `gbgbridge read …` runs in `gbgbridge-read` (the reader's code without the server's: about
    /// less resident memory) when that binary sits beside this one or in ../libexec/gbgbridge or
    /// /usr/libexec/gbgbridge; execv replaces this process, so the peak is the lean binary's alone.
    /// Returns only when there is no such binary (the read then runs in this process).
    package static func execLeanReader(arguments: [String] = CommandLine.arguments) {
        // --mrz-from-camera needs the cameras and the MRZ reader, which only the full binary has.
        guard arguments.count > 1, arguments[1] == "read", !arguments.contains("--mrz-from-camera"),
              ProcessInfo.processInfo.environment["GBGBRIDGE_READ_IN_PROCESS"] == nil else { return }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? arguments[0]
        let directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // Beside it (a build tree), ../libexec/gbgbridge (the package, wherever its root is), /usr/libexec/gbgbridge.
        let candidates = [directory.appendingPathComponent("gbgbridge-read").path,
                          directory.appendingPathComponent("../libexec/gbgbridge/gbgbridge-read").standardizedFileURL.path,
                          "/usr/libexec/gbgbridge/gbgbridge-read"]
        guard let helper = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return }
        let argv = ([helper] + arguments.dropFirst()).map { strdup($0) } + [nil]
        execv(helper, argv)
        // execv returned: the helper could not be run; read in this process instead.
        argv.forEach { free($0) }
    }
}
