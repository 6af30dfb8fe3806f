import Foundation
import PropertyBased
import TestSupport
import Testing

/// `gbgbridge read` as a careless operator or a script with planted files meets it: access keys
/// with marks inside digits, symlinks at every output path, odd file and reader names. Never a
/// crash (exit 132/133/134/139), always a documented exit status and a message; personal data
/// written 0600 from the first byte and never through a link.
@Suite("gbgbridge read with hostile input", .serialized,
       .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
struct CLIHostileInputTests {
    static let anna = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"
    static let crashed: Set<Int32> = [132, 133, 134, 135, 136, 139]

    static func temporaryDirectory() throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("cli-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func mode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }

    @Test("access keys with a combining mark or a full-width digit: exit 2 naming the option, no crash", arguments: [
        ["--mrz", "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL89890\u{301}2C36UTO7408122F1204159ZE184226B<<<<<10"],
        ["--document-number", "L\u{332}898902C3", "--birth-date", "740812", "--expiry-date", "120415"],
        ["--document-number", "L898902C3", "--birth-date", "7\u{301}40812", "--expiry-date", "120415"],
        ["--document-number", "L898902C3", "--birth-date", "740812", "--expiry-date", "１２０４１５"],
        ["--can", "1\u{301}12233"],
        ["--can", "12345\u{FE0F}6"],
    ])
    func accessKeys(arguments: [String]) async throws {
        let outcome = try await runCommand(GBGBridgeBinary.path, ["read", "--timeout", "1"] + arguments, timeout: .seconds(30))
        #expect(outcome.status == 2, "\(outcome.status): \(outcome.standardError)")
        #expect(outcome.standardError.contains("--mrz") || outcome.standardError.contains("--document-number")
                || outcome.standardError.contains("--birth-date") || outcome.standardError.contains("--expiry-date")
                || outcome.standardError.contains("--can"), "\(outcome.standardError)")
        #expect(!outcome.standardError.contains("L89890") && !outcome.standardError.contains("Fatal error"))
    }

    @Test("hostile reader names and trace file names: a documented exit status, never a crash")
    func readerAndFileNames() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let names = HostileText.mutations(of: ["trace.jsonl", "t", "a b.jsonl", "..jsonl"])
        let readers = HostileText.mutations(of: ["Virtual PCD 00 00 (gone)", "ACS ACR122U", "libnfc:pn532_uart:/dev/ttyUSB99", "libnfc:"])
        await propertyCheck(count: 12, input: names, readers) { name, reader in
            // argv cannot carry NUL; the rest goes to the program as given.
            let file = String(String.UnicodeScalarView(name.unicodeScalars.filter { $0 != "\u{0}" }))
            var readerName = String(String.UnicodeScalarView(reader.unicodeScalars.filter { $0 != "\u{0}" }))
            // Never a name that picks the test rig's virtual readers (other suites read cards there).
            let asciiOnly = String(String.UnicodeScalarView(readerName.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 })).lowercased()
            if asciiOnly.trimmingCharacters(in: .whitespaces).isEmpty || "virtual pcd 00 00 virtual pcd 00 01".contains(asciiOnly)
                || asciiOnly.hasPrefix("virtual pcd") {
                readerName = "no such reader"
            }
            let path = directory.appendingPathComponent(file.isEmpty ? "empty" : file).path
            let outcome = try await runCommand(GBGBridgeBinary.path, ["read", "--can", "123456", "--timeout", "0.3", "--reader", readerName,
                                                                      "--trace", path], timeout: .seconds(30))
            #expect(!Self.crashed.contains(outcome.status), "crashed: \(outcome.standardError.prefix(400))")
            #expect([2, 4, 5].contains(outcome.status), "\(outcome.status): \(outcome.standardError.prefix(300))")
            #expect(!outcome.standardError.contains("Fatal error"))
            // Whatever name the trace got, it is the owner's alone.
            if let type = try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType, type == .typeRegular {
                #expect(try Self.mode(path) == 0o600, "\(path)")
            }
        }
    }

    @Test("a symlink planted at --trace is replaced, never followed; an existing 0644 file becomes a new 0600 file")
    func traceSymlink() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let victim = directory.appendingPathComponent("victim")
        try Data("keep me".utf8).write(to: victim)
        let trace = directory.appendingPathComponent("trace.jsonl")
        try FileManager.default.createSymbolicLink(at: trace, withDestinationURL: victim)
        let existing = directory.appendingPathComponent("old.jsonl")
        try Data("old".utf8).write(to: existing)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: existing.path)
        for path in [trace.path, existing.path] {
            let outcome = try await runCommand(GBGBridgeBinary.path, ["read", "--can", "123456", "--timeout", "0.3", "--reader", "no such reader",
                                                                      "--trace", path], timeout: .seconds(30))
            #expect([4, 5].contains(outcome.status), "\(outcome.standardError)")  // no such reader, or no pcscd
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect(attributes[.type] as? FileAttributeType == .typeRegular)
            #expect(attributes[.posixPermissions] as? Int == 0o600)
            #expect(try String(contentsOf: URL(fileURLWithPath: path), encoding: .utf8).contains(#""event":"end""#))
        }
        #expect(try String(contentsOf: victim, encoding: .utf8) == "keep me")
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tmp") }.isEmpty)
    }

    @Test("symlinks planted at --dump, --photo and --evidence: nothing written through them, every file 0600")
    func outputSymlinks() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let victims = directory.appendingPathComponent("victims")
        try FileManager.default.createDirectory(at: victims, withIntermediateDirectories: true)
        let victimFile = victims.appendingPathComponent("victim")
        try Data("keep me".utf8).write(to: victimFile)
        let photo = directory.appendingPathComponent("face.jpg")
        let evidence = directory.appendingPathComponent("evidence.json")
        let dump = directory.appendingPathComponent("dump")
        try FileManager.default.createSymbolicLink(at: photo, withDestinationURL: victimFile)
        try FileManager.default.createSymbolicLink(at: evidence, withDestinationURL: victimFile)
        try FileManager.default.createSymbolicLink(at: dump, withDestinationURL: victims)
        let outcome = try await PCSCDHarness.withEmulatorCommand(["--passport", "Fixtures/passports/utopia-demo.json"]) {
            try await runCommand(GBGBridgeBinary.path, ["read", "--reader", PCSCDHarness.vpcdReaderName, "--mrz", Self.anna,
                                                        "--trust", "Fixtures/pki/csca.cert.pem", "--timeout", "10",
                                                        "--photo", photo.path, "--evidence", evidence.path])
        }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        for path in [photo.path, evidence.path] {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect(attributes[.type] as? FileAttributeType == .typeRegular, "\(path)")
            #expect(attributes[.posixPermissions] as? Int == 0o600)
        }
        #expect(try String(contentsOf: victimFile, encoding: .utf8) == "keep me")
        // A dump directory that is a symlink is refused (exit 5), and nothing lands in its target.
        let refused = try await PCSCDHarness.withEmulatorCommand(["--passport", "Fixtures/passports/utopia-demo.json"]) {
            try await runCommand(GBGBridgeBinary.path, ["read", "--reader", PCSCDHarness.vpcdReaderName, "--mrz", Self.anna,
                                                        "--timeout", "10", "--dump", dump.path])
        }
        #expect(refused.status == 5 && refused.standardError.contains("not a directory"), "\(refused.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victims.path) == ["victim"])
    }

    @Test("a crash report (Swift's backtracer, as gbgbridge sets it up) holds the frames, never registers, memory or the program's data")
    func crashReport() async throws {
        let probe = TestFixtures.packageRoot.appendingPathComponent(".build/debug/gbgbridge-crash-probe").path
        try #require(FileManager.default.isExecutableFile(atPath: probe), "swift build makes gbgbridge-crash-probe")
        let marker = "L898902C3-SECRET-\(UInt32.random(in: 0...UInt32.max))"
        let outcome = try await runCommand(probe, [marker], timeout: .seconds(60))
        let report = outcome.standardOutput + outcome.standardError
        #expect(outcome.status == 132 || outcome.status == 4, "\(outcome.status)")  // SIGILL
        #expect(report.contains("Program crashed") && report.contains("crash probe: a deliberate crash"), "\(report.prefix(2_000))")
        #expect(report.contains("registers=none") && report.contains("images=none"))
        #expect(!report.contains("Registers:") && !report.contains("Images ("), "\(report.prefix(2_000))")
        // No hex dump of memory (`0x… 1f 96 ef 7c …`), and nothing the program held.
        #expect(report.range(of: #"0x[0-9a-f]{16}  ([0-9a-f]{2} ){8}"#, options: .regularExpression) == nil)
        #expect(!report.contains(marker), "the held data appears in the report")
        #expect(report.contains("Thread 0 \"gbgbridge-crash\""), "the process keeps its own name after setting up the backtracer")
    }
}
