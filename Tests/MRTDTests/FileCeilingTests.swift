import BoundedFiles
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every file option of the command line against a sparse file of several GB (it costs no disk):
/// refused from its size alone, the message naming the file, its size and the ceiling, and the
/// process's peak memory flat (measured by `/usr/bin/time`, an independent meter).
@Suite("File ceilings: sparse multi-GB files for every file option", .serialized)
struct FileCeilingTests {
    /// A command that reads `file`, the ceiling it must name, and what it must not exceed.
    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let arguments: @Sendable (_ file: String, _ directory: String) -> [String]
        /// Where the sparse file goes inside the test directory (a dump needs its file name).
        var fileName = "huge.bin"
        let ceiling: String
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "trust import", arguments: { file, directory in ["trust", "import", "--store", directory + "/store", file] }, ceiling: "16 MiB"),
        Case(name: "trust status --trust", arguments: { file, _ in ["trust", "status", "--trust", file] }, ceiling: "16 MiB"),
        Case(name: "verify --trust", arguments: { file, directory in ["verify", "--sod", directory + "/none", "--trust", file] }, ceiling: "16 MiB"),
        Case(name: "verify --evidence", arguments: { file, _ in ["verify", "--evidence", file, "--trust", TestFixtures.url("pki").path] },
             ceiling: "24 MiB"),
        Case(name: "verify --sod", arguments: { file, _ in ["verify", "--sod", file, "--trust", TestFixtures.url("pki").path] }, ceiling: "64 KiB"),
        Case(name: "verify --dump", arguments: { _, directory in ["verify", "--dump", directory, "--trust", TestFixtures.url("pki").path] },
             fileName: "DG2.bin", ceiling: "4 MiB"),
        Case(name: "emulate --dump", arguments: { _, directory in ["emulate", "--dump", directory, "--vpcd-port", "1"] },
             fileName: "DG1.bin", ceiling: "1 KiB"),
        Case(name: "emulate --passport", arguments: { file, _ in ["emulate", "--passport", file, "--vpcd-port", "1"] }, ceiling: "1 MiB"),
        Case(name: "emulate --eac-cvca", arguments: { file, _ in
            ["emulate", "--passport", TestFixtures.url("passports/utopia-demo.json").path, "--eac-cvca", file, "--vpcd-port", "1"]
        }, ceiling: "64 KiB"),
        Case(name: "terminal print", arguments: { file, _ in ["terminal", "print", file] }, ceiling: "64 KiB"),
        Case(name: "terminal check --terminal-key", arguments: { file, _ in
            ["terminal", "check", "--terminal-certificates", TestFixtures.url("cvc").path, "--terminal-key", file]
        }, ceiling: "64 KiB"),
        Case(name: "terminal check --terminal-certificates", arguments: { file, _ in
            ["terminal", "check", "--terminal-certificates", file, "--terminal-key", TestFixtures.url("cvc/UTIS0000001.pkcs8").path]
        }, ceiling: "64 KiB"),
        Case(name: "serve --config", arguments: { file, _ in ["serve", "--config", file, "--port", "0"] }, ceiling: "1 MiB"),
        Case(name: "doctor --config", arguments: { file, _ in ["doctor", "--config", file] }, ceiling: "1 MiB"),
    ]

    @Test("BoundedFile at its edges: exactly the ceiling, one byte more, devices, a pipe, a directory")
    func edges() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bounded-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let exact = directory.appendingPathComponent("exact").path
        try Data(repeating: 7, count: 4_096).write(to: URL(fileURLWithPath: exact))
        #expect(try BoundedFile.read(exact, ceiling: 4_096, what: "test").count == 4_096)
        #expect(throws: BoundedFileError(path: exact, what: "test", problem: .tooLarge(size: 4_096, ceiling: 4_095))) {
            _ = try BoundedFile.read(exact, ceiling: 4_095, what: "test")
        }
        #expect(try BoundedFile.read("/dev/null", ceiling: 10, what: "test").isEmpty)
        // A device that never ends is read one byte past the ceiling, then refused.
        #expect(throws: BoundedFileError(path: "/dev/zero", what: "test", problem: .tooLarge(size: 100_001, ceiling: 100_000))) {
            _ = try BoundedFile.read("/dev/zero", ceiling: 100_000, what: "test")
        }
        let fifo = directory.appendingPathComponent("fifo").path
        try #require(mkfifo(fifo, 0o600) == 0)
        // No writer ever comes: the read must not wait for one.
        #expect(throws: BoundedFileError(path: fifo, what: "test", problem: .notRegular)) { _ = try BoundedFile.read(fifo, ceiling: 10, what: "test") }
        #expect(throws: BoundedFileError(path: directory.path, what: "test", problem: .isDirectory)) {
            _ = try BoundedFile.read(directory.path, ceiling: 10, what: "test")
        }
        #expect(throws: BoundedFileError(path: directory.path + "/none", what: "test", problem: .cannotOpen(ENOENT))) {
            _ = try BoundedFile.read(directory.path + "/none", ceiling: 10, what: "test")
        }
    }

    @Test(.enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/time"), "needs /usr/bin/time (Debian package time)"),
          arguments: cases)
    func sparseFileIsRefusedFromItsSize(_ test: Case) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ceiling-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(test.fileName).path
        // 3 GiB of nothing: a hole the file system never stores.
        try #require(FileManager.default.createFile(atPath: file, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        try handle.truncate(atOffset: 3 << 30)
        try handle.close()
        let outcome = try await runCommand("/usr/bin/time", ["-f", "peak %M KiB", GBGBridgeBinary.path] + test.arguments(file, directory.path),
                                           timeout: .seconds(60))
        #expect(outcome.status != 0, "\(test): accepted a 3 GiB file")
        let said = outcome.standardError + outcome.standardOutput
        #expect(said.contains(test.fileName) && said.contains("3 GiB") && said.contains(test.ceiling),
                "\(test) does not name the file, its size and the ceiling: \(said.suffix(600))")
        #expect(!said.contains("NSCocoaErrorDomain") && !said.contains("Error Domain="), "\(test): \(said.suffix(400))")
        let peak = try #require(outcome.standardError.firstMatch(of: /peak (\d+) KiB/).flatMap { Int($0.1) }, "\(outcome.standardError.suffix(300))")
        #expect(peak < 200 * 1_024, "\(test) peaked at \(peak / 1_024) MiB reading a 3 GiB file")
    }
}
