import Foundation
import Testing

/// The module layout's promises, checked on the package itself so that a change that breaks one
/// fails CI (Docs/reading-and-verification.md, "Modules"):
///
/// - `MRTDVerification` (passive authentication, trust, evidence) links neither pcsc-lite, libnfc nor
///   the image codecs: a backend verifies evidence with the package alone.
/// - `SmartCardCore` (APDUs, TLV, the reader protocol) links no C library at all.
/// - No Swift file under Sources/ is over 500 lines, save generated data a tool writes (its first
///   lines name the tool and say "Do not edit by hand", like the MRZ reader's glyph weights).
/// - The reader library (`LDS`, `MRTDVerification`, `MRTD`) keeps at most 300 public declarations:
///   what the emulator and the tests need is `package`.
/// - Every module `gbgbridge-read` is built from imports FoundationEssentials, never Foundation:
///   Foundation brings ICU and ~4 MiB of resident pages into every read (Docs/reading-and-verification.md,
///   "Peak memory").
@Suite("Module rules: what links what, file sizes, public surface")
struct ModuleRulesTests {
    static let root = SourceRulesTests.root

    /// Target name → its direct target dependencies, from `swift package describe`: run once, on
    /// a thread of its own. In a fresh clone it resolves the package into a scratch directory
    /// (a minute or two on a busy CI machine); run synchronously in each test, it held both of
    /// the cooperative pool's threads that long and starved other suites' in-process reads.
    static let graphTask = Task<[String: [String]], any Error> {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try describe() }) }
        }
    }

    static func targetGraph() async throws -> [String: [String]] { try await graphTask.value }

    static func describe() throws -> [String: [String]] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("describe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "--package-path", root.path, "--scratch-path", scratch.path,
                             "describe", "--type", "json"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw DescribeFailed() }
        struct Description: Decodable {
            struct Target: Decodable {
                var name: String
                var target_dependencies: [String]?
            }
            var targets: [Target]
        }
        let description = try JSONDecoder().decode(Description.self, from: data)
        return Dictionary(description.targets.map { ($0.name, $0.target_dependencies ?? []) }, uniquingKeysWith: { a, _ in a })
    }

    struct DescribeFailed: Error, CustomStringConvertible {
        var description: String { "swift package describe failed" }
    }

    static func closure(of target: String, in graph: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var queue = [target]
        while let next = queue.popLast() {
            for dependency in graph[next] ?? [] where seen.insert(dependency).inserted { queue.append(dependency) }
        }
        return seen
    }

    @Test("MRTDVerification links neither pcsc-lite, libnfc, the PC/SC or libnfc back ends nor the image codecs")
    func verificationIsSelfContained() async throws {
        let graph = try await Self.targetGraph()
        try #require(graph["MRTDVerification"] != nil, "no MRTDVerification target in the package")
        let reached = Self.closure(of: "MRTDVerification", in: graph)
        let forbidden: Set = ["CPCSCLite", "CSmartCardShim", "CLibNFC", "CLibNFCShim", "SmartCardPCSC", "SmartCardLibNFC",
                              "SmartCard", "ImageCodecs", "CImageCodecs", "COpenJPEG", "CTurboJPEG", "CLibPNG", "MRTD"]
        #expect(reached.isDisjoint(with: forbidden), "MRTDVerification reaches \(reached.intersection(forbidden).sorted())")
        // And the control: the full reader stack does reach a back end through SmartCard, so the
        // graph above is read correctly.
        #expect(Self.closure(of: "gbgbridge", in: graph).contains("CPCSCLite"))
    }

    @Test("SmartCardCore and LDS link no card-reader C library")
    func coreHasNoReaderLibrary() async throws {
        let graph = try await Self.targetGraph()
        for target in ["SmartCardCore", "LDS", "MRTD"] {
            let reached = Self.closure(of: target, in: graph)
            #expect(!reached.contains("CPCSCLite") && !reached.contains("CLibNFC"), "\(target) reaches \(reached.sorted())")
        }
    }

    @Test("no Swift file under Sources/ is over 500 lines")
    func fileSizes() throws {
        var long: [String] = []
        for file in try SourceRulesTests.sourceFiles() {
            let text = try String(contentsOf: file, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let generated = lines.prefix(3).contains { $0.hasPrefix("//") && $0.contains("Do not edit by hand") }
            if lines.count > 500, !generated { long.append("\(file.lastPathComponent): \(lines.count)") }
        }
        #expect(long.isEmpty, "files over 500 lines: \(long)")
    }

    @Test("the reader library (LDS, MRTDVerification, MRTD) has at most 300 public declarations")
    func publicSurface() throws {
        let modules = ["LDS", "MRTDVerification", "MRTD"].map { "Sources/\($0)/" }
        let declaration = try Regex(#"^\s*(@\w+\s+)*(public|open)\s"#)
        var count = 0
        for file in try SourceRulesTests.sourceFiles() where modules.contains(where: { file.path.contains($0) }) {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") where line.contains(declaration) {
                count += 1
            }
        }
        #expect(count > 50, "no public declarations found: are the modules where they were?")
        #expect(count <= 300, "\(count) public declarations in LDS + MRTDVerification + MRTD")
    }

    /// `import Foundation` (or FoundationInternationalization) lines of a Swift file that are not
    /// the `#else` branch of `#if canImport(FoundationEssentials)`.
    static func foundationImports(in text: String) -> [Int] {
        let importLine = try? Regex(#"^\s*(@\w+\s+)*((public|package|internal|private|fileprivate)\s+)?import\s+(Foundation|FoundationInternationalization)\s*$"#)
        var found: [Int] = []
        var conditions: [(essentials: Bool, inElse: Bool)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#if") {
                conditions.append((trimmed.contains("canImport(FoundationEssentials)"), false))
            } else if trimmed.hasPrefix("#else") || trimmed.hasPrefix("#elseif"), !conditions.isEmpty {
                conditions[conditions.count - 1].inElse = true
            } else if trimmed.hasPrefix("#endif"), !conditions.isEmpty {
                conditions.removeLast()
            } else if let importLine, line.contains(importLine) {
                let fallback = conditions.last.map { $0.essentials && $0.inElse } ?? false
                if !fallback { found.append(number + 1) }
            }
        }
        return found
    }

    @Test("the modules gbgbridge-read is built from import FoundationEssentials only, never Foundation")
    func leanReaderHasNoFoundation() async throws {
        let graph = try await Self.targetGraph()
        try #require(graph["gbgbridge-read"] != nil, "no gbgbridge-read target in the package")
        let targets = Self.closure(of: "gbgbridge-read", in: graph).union(["gbgbridge-read"])
        #expect(targets.isSuperset(of: ["GBGBridgeRead", "ChipRead", "MRTD", "LDS", "SmartCardPCSC"]), "\(targets.sorted())")
        var offenders: [String] = []
        var scanned = 0
        for file in try SourceRulesTests.sourceFiles() {
            let parts = file.path.components(separatedBy: "/Sources/")
            guard parts.count == 2, let target = parts[1].split(separator: "/").first, targets.contains(String(target)) else { continue }
            scanned += 1
            for line in Self.foundationImports(in: try String(contentsOf: file, encoding: .utf8)) {
                offenders.append("Sources/\(parts[1]):\(line)")
            }
        }
        #expect(scanned > 60, "only \(scanned) files of the lean reader's modules were found")
        #expect(offenders.isEmpty, "import Foundation in the lean reader's modules:\n\(offenders.joined(separator: "\n"))")
        // The control: the server's modules do import Foundation, so the scan sees imports.
        let server = try String(contentsOf: Self.root.appendingPathComponent("Sources/GBGBridge/BridgeHost.swift"), encoding: .utf8)
        #expect(!Self.foundationImports(in: server).isEmpty)
        #expect(Self.foundationImports(in: "#if canImport(FoundationEssentials)\nimport FoundationEssentials\n#else\nimport Foundation\n#endif\n").isEmpty)
        #expect(Self.foundationImports(in: "#if os(Linux)\nimport Glibc\n#else\nimport Foundation\n#endif\n") == [4])
    }

    @Test("the built gbgbridge-read binary needs no Foundation library")
    func leanReaderBinaryLinksNoFoundation() throws {
        let binary = Self.root.appendingPathComponent(".build/debug/gbgbridge-read").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            Issue.record("\(binary) is not built: scripts/test.sh builds it with swift build --build-tests")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["readelf", "-d", binary]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let needed = text.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(needed.contains { $0.contains("libswiftCore") || $0.contains("libc.so") }, "readelf -d found no NEEDED entries: \(text.prefix(300))")
        let foundation = needed.filter { $0.contains("Foundation") || $0.contains("ICU") }
        #expect(foundation.filter { !$0.contains("FoundationEssentials") }.isEmpty, "gbgbridge-read needs \(foundation)")
    }
}
