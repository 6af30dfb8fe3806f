import Foundation
import TestSupport
import Testing

/// Every subcommand's file paths given wrong, as users do: missing, a directory where a file
/// belongs, a path through a file (ENOTDIR), a file that is no such thing, an output nobody can
/// write. Each must end with a short error in words naming the file — never a Foundation error dump
/// ("Error Domain=… UserInfo=…"), "The operation could not be completed", OpenSSL's own error
/// strings, a crash, or a hang.
@Suite("every subcommand's error paths: one line in words, no Foundation dumps",
       .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
struct CommandErrorPathTests {
    /// A scratch directory: `file` (text), `dir/`, and the paths made from them.
    struct Paths {
        let root: URL
        var missing: String { root.appendingPathComponent("missing").path }
        var directory: String { root.appendingPathComponent("dir").path }
        var file: String { root.appendingPathComponent("file").path }
        /// A path through a regular file: ENOTDIR.
        var throughFile: String { root.appendingPathComponent("file/child").path }
        /// An output nobody can write, even root: /proc refuses new files.
        let unwritable = "/proc/gbgbridge-cannot-write-here"

        static func make() throws -> Paths {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("error-paths-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("dir"), withIntermediateDirectories: true)
            try Data("not what it claims to be\n".utf8).write(to: root.appendingPathComponent("file"))
            return Paths(root: root)
        }
    }

    /// Each case: the arguments; the report commands (doctor, trust status) print a report, so
    /// their line count is not held to the short-error rule.
    static func cases(_ p: Paths) -> [(name: String, arguments: [String], report: Bool)] {
        let key = TestFixtures.packageRoot.appendingPathComponent("Fixtures/cvc/UTIS0000001.pkcs8").path
        let csca = TestFixtures.packageRoot.appendingPathComponent("Fixtures/pki/csca.cert.pem").path
        // A reader no test has: each of these must fail on its file before any card is touched,
        // and none may open another suite's emulated card meanwhile (one did, with a wrong CAN).
        let can = ["--can", "123456", "--timeout", "1", "--reader", "no such reader (error-path test)"]
        var all: [(String, [String], Bool)] = []
        for (kind, path) in [("missing", p.missing), ("directory", p.directory), ("through a file", p.throughFile)] {
            all += [
                ("serve --config \(kind)", ["serve", "--config", path], false),
                ("demo --passport \(kind)", ["demo", "--passport", path, "--port", "0"], false),
                ("read --trust \(kind)", ["read"] + can + ["--trust", path], false),
                ("read --terminal-certificates \(kind)", ["read"] + can + ["--terminal-certificates", path, "--terminal-key", key], false),
                ("verify --sod \(kind)", ["verify", "--sod", path, "--trust", csca], false),
                ("verify --dump \(kind)", ["verify", "--dump", path, "--trust", csca], false),
                ("verify --evidence \(kind)", ["verify", "--evidence", path, "--trust", csca], false),
                ("verify --trust \(kind)", ["verify", "--sod", p.file, "--trust", path], true),
                ("emulate --passport \(kind)", ["emulate", "--passport", path], false),
                ("emulate --dump \(kind)", ["emulate", "--dump", path], false),
                ("emulate --eac-cvca \(kind)", ["emulate", "--profile", "de-passport-2023", "--eac-cvca", path], false),
                ("trust import \(kind)", ["trust", "import", "--store", p.root.appendingPathComponent("store").path, path], false),
                ("trust status \(kind)", ["trust", "status", "--trust", path], true),
                ("doctor --config \(kind)", ["doctor", "--config", path, "--port", "1"], true),
                ("terminal print \(kind)", ["terminal", "print", path], false),
                ("terminal check \(kind)", ["terminal", "check", "--terminal-certificates", path, "--terminal-key", key], false),
                ("terminal request --key \(kind)", ["terminal", "request", "--key", path, "--chr", "UTIS0000002", "--out", p.root.appendingPathComponent("new.cvreq").path], false),
                ("mrz \(kind)", ["mrz", path], false),
            ]
        }
        all += [
            // (An empty trust directory is a warning, not an error: serve would start.)
            ("serve --trust missing", ["serve", "--trust", p.missing, "--port", "0"], false),
            ("serve --trust through a file", ["serve", "--trust", p.throughFile, "--port", "0"], false),
        ]
        // Files that are not what they claim to be.
        all += [
            ("verify --sod garbage", ["verify", "--sod", p.file, "--trust", csca], true),
            ("verify --evidence garbage", ["verify", "--evidence", p.file, "--trust", csca], false),
            ("verify --trust garbage", ["verify", "--sod", p.file, "--trust", p.file], true),
            ("emulate --passport garbage", ["emulate", "--passport", p.file], false),
            ("emulate --dump a file", ["emulate", "--dump", p.file], false),
            ("trust import garbage", ["trust", "import", "--store", p.root.appendingPathComponent("store").path, p.file], false),
            ("terminal print garbage", ["terminal", "print", p.file], false),
            ("terminal request --key garbage", ["terminal", "request", "--key", p.file, "--chr", "UTIS0000002", "--out", p.root.appendingPathComponent("new.cvreq").path], false),
            ("serve --config garbage", ["serve", "--config", p.file], false),
            ("mrz garbage", ["mrz", p.file], false),
        ]
        // Outputs that cannot be written: refused before any work.
        for (kind, path) in [("unwritable", p.unwritable), ("a directory", p.directory), ("through a file", p.throughFile)] {
            all += [
                ("read --photo \(kind)", ["read"] + can + ["--photo", path], false),
                ("read --evidence \(kind)", ["read"] + can + ["--evidence", path], false),
                ("read --trace \(kind)", ["read"] + can + ["--trace", path], false),
                ("terminal request --out \(kind)", ["terminal", "request", "--key", key, "--chr", "UTIS0000002", "--out", path], false),
                ("camera capture --out \(kind)", ["camera", "capture", "--device", "/dev/null", "--out", path + ".png"], false),
            ]
        }
        all += [
            ("read --dump through a file", ["read"] + can + ["--dump", p.throughFile], false),
            ("read --dump a file", ["read"] + can + ["--dump", p.file], false),
            ("trust import into a store through a file", ["trust", "import", "--store", p.throughFile, csca], false),
            ("trust import into a store that is a file", ["trust", "import", "--store", p.file, csca], false),
        ]
        return all
    }

    static let forbidden = ["Error Domain=", "NSCocoaErrorDomain", "NSPOSIXErrorDomain", "UserInfo=", "could not be completed",
                            "Fatal error", "error:0", "Swift runtime failure", "Backtrace"]

    @Test("missing, directory, ENOTDIR, garbage and unwritable paths: a short error in words, a non-zero exit")
    func errorPaths() async throws {
        let paths = try Paths.make()
        defer { try? FileManager.default.removeItem(at: paths.root) }
        for (name, arguments, report) in Self.cases(paths) {
            let outcome = try await runCommand(GBGBridgeBinary.path, arguments, timeout: .seconds(60), directory: paths.root)
            let said = outcome.standardError + outcome.standardOutput
            #expect(outcome.status != 0, "\(name) succeeded: \(said.prefix(300))")
            #expect(!said.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(name) said nothing")
            for word in Self.forbidden {
                #expect(!said.contains(word), "\(name) printed '\(word)': \(said.prefix(600))")
            }
            if !report {
                // One line of error, plus ArgumentParser's two lines of usage for argument errors.
                let lines = outcome.standardError.split(separator: "\n", omittingEmptySubsequences: true)
                #expect(lines.count <= 3, "\(name) printed \(lines.count) lines: \(outcome.standardError.prefix(600))")
            }
        }
    }
}
