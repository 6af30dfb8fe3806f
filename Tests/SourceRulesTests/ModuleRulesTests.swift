import Foundation
import Testing

/// The module layout's promises, checked on the package itself so that a change that breaks one
/// fails CI (Docs/reading-and-verification.md, "Modules"):
///
/// - `MRTDVerification` (passive authentication, trust, evidence) links neither pcsc-lite, libnfc nor
///   the image codecs: a backend verifies evidence with the package alone.
/// - `SmartCardCore` (APDUs, TLV, the reader protocol) links no C library at all.
/// - No Swift file under Sources/ is over 500 lines.
/// - The reader library (`LDS`, `MRTDVerification`, `MRTD`) keeps at most 300 public declarations:
///   what the emulator and the tests need is `package`.
@Suite("Module rules: what links what, file sizes, public surface")
struct ModuleRulesTests {
    static let root = SourceRulesTests.root

    /// Target name → its direct target dependencies, from `swift package describe`.
    static func targetGraph() throws -> [String: [String]] {
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
        try #require(process.terminationStatus == 0, "swift package describe failed")
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

    static func closure(of target: String, in graph: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var queue = [target]
        while let next = queue.popLast() {
            for dependency in graph[next] ?? [] where seen.insert(dependency).inserted { queue.append(dependency) }
        }
        return seen
    }

    @Test("MRTDVerification links neither pcsc-lite, libnfc, the PC/SC or libnfc back ends nor the image codecs")
    func verificationIsSelfContained() throws {
        let graph = try Self.targetGraph()
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
    func coreHasNoReaderLibrary() throws {
        let graph = try Self.targetGraph()
        for target in ["SmartCardCore", "LDS", "MRTD"] {
            let reached = Self.closure(of: target, in: graph)
            #expect(!reached.contains("CPCSCLite") && !reached.contains("CLibNFC"), "\(target) reaches \(reached.sorted())")
        }
    }

    @Test("no Swift file under Sources/ is over 500 lines")
    func fileSizes() throws {
        var long: [String] = []
        for file in try SourceRulesTests.sourceFiles() {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            if lines > 500 { long.append("\(file.lastPathComponent): \(lines)") }
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
}
