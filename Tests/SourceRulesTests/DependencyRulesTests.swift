import Foundation
import Testing

/// A fresh machine builds and tests the package from the README (issue 48): whatever the build
/// links and the tests and scripts start is installed by `scripts/install-deps.sh`. Read on the
/// text of Package.swift, the script, the tests and the scripts, so that a new dependency added
/// without its package fails here rather than on the next person's machine.
@Suite("Dependency rules: install-deps.sh installs what the build, tests and scripts need")
struct DependencyRulesTests {
    static let root = SourceRulesTests.root

    static func text(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    /// A bash array `name=( … )` of install-deps.sh, comments dropped.
    static func array(_ name: String, in script: String) -> [String] {
        guard let start = script.range(of: "\n\(name)=(") else { return [] }
        let rest = script[start.upperBound...]
        guard let end = rest.range(of: "\n)") else { return [] }
        return rest[..<end.lowerBound].split(separator: "\n").flatMap { line in
            line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map { $0.split(separator: " ").map(String.init) } ?? []
        }.filter { !$0.isEmpty }
    }

    struct Declared {
        var packages: Set<String>
        var programs: [String: String]
        var libraries: [String: String]
    }

    static func declared() throws -> Declared {
        let script = try text("scripts/install-deps.sh")
        let pairs = { (name: String) -> [String: String] in
            Dictionary(array(name, in: script).compactMap { entry -> (String, String)? in
                let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            }, uniquingKeysWith: { first, _ in first })
        }
        return Declared(packages: Set(array("packages", in: script)), programs: pairs("programs"), libraries: pairs("libraries"))
    }

    /// Programs every Debian system has (essential or required packages), which need no line.
    static let base: Set<String> = ["env", "bash", "sh", "sleep", "timeout", "unshare", "apt-get", "apt-cache", "dpkg", "dpkg-deb",
                                    "dpkg-query", "install", "mount", "umount", "cat", "true", "false", "kill", "ldd", "gzip", "tar",
                                    "id", "swift", "deb-systemd-helper", "sed", "grep", "mktemp", "readlink", "nice", "chroot"]

    @Test("every provider Package.swift names (.apt([...])) is installed by install-deps.sh")
    func aptProviders() throws {
        let manifest = try Self.text("Package.swift")
        let declared = try Self.declared()
        #expect(declared.packages.count > 20, "install-deps.sh's packages were not found")
        let named = manifest.matches(of: /\.apt\(\[([^\]]*)\]\)/).flatMap { match in
            match.1.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
        #expect(named.count >= 8, "Package.swift's providers were not found")
        let missing = named.filter { !declared.packages.contains($0) }
        #expect(missing.isEmpty, "Package.swift names packages install-deps.sh does not install: \(missing)")
    }

    @Test("every system library with a pkg-config module names its Debian provider")
    func pkgConfigModulesHaveProviders() throws {
        let manifest = try Self.text("Package.swift")
        var unprovided: [String] = []
        for match in manifest.matches(of: /\.systemLibrary\(([^)]*(?:\([^)]*\)[^)]*)*)\)/) {
            let body = String(match.1)
            if body.contains("pkgConfig:"), !body.contains(".apt(") { unprovided.append(body) }
        }
        #expect(unprovided.isEmpty, "a pkg-config module without .apt providers: \(unprovided)")
        // And the module names themselves: each is one a provider installs (a wrong name is a failed build).
        let modules = manifest.matches(of: /pkgConfig: "([^"]+)"/).map { String($0.1) }
        #expect(Set(modules).isSuperset(of: ["openssl", "libcurl", "libseccomp", "libnfc"]), "\(modules)")
    }

    @Test("every library Package.swift links by name has its package in install-deps.sh")
    func linkedLibraries() throws {
        let manifest = try Self.text("Package.swift")
        let declared = try Self.declared()
        let linked = Set(manifest.matches(of: /\.linkedLibrary\("([^"]+)"\)/).map { String($0.1) })
        #expect(!linked.isEmpty)
        let missing = linked.filter { declared.libraries[$0] == nil }
        #expect(missing.isEmpty, "linked libraries with no line in install-deps.sh's libraries: \(missing.sorted())")
    }

    @Test("every program the tests and scripts start by path or look up is installed by install-deps.sh")
    func programs() throws {
        let declared = try Self.declared()
        var files: [URL] = []
        for folder in ["Tests", "Sources", "scripts"] {
            guard let walker = FileManager.default.enumerator(at: Self.root.appendingPathComponent(folder), includingPropertiesForKeys: nil) else { continue }
            files += walker.compactMap { $0 as? URL }.filter { ["swift", "sh", "py"].contains($0.pathExtension) }
        }
        #expect(files.count > 100)
        var needed: [String: String] = [:]  // program → a file that starts it
        for file in files where file.lastPathComponent != "DependencyRulesTests.swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            let relative = file.path.replacingOccurrences(of: Self.root.path + "/", with: "")
            for match in text.matches(of: /"\/usr\/s?bin\/([A-Za-z0-9_.+-]+)"/) { needed[String(match.1), default: relative] = relative }
            for match in text.matches(of: /command -v ([A-Za-z0-9_.+-]+)/) { needed[String(match.1), default: relative] = relative }
        }
        // Names a test probes for without needing them (browsers of other distributions, the
        // installed package's own binary).
        let probedOnly: Set<String> = ["chromium-browser", "google-chrome", "gbgbridge"]
        let missing = needed.filter { !Self.base.contains($0.key) && !probedOnly.contains($0.key) && declared.programs[$0.key] == nil }
        #expect(missing.isEmpty, "programs with no line in install-deps.sh's programs: \(missing.map { "\($0.key) (\($0.value))" }.sorted())")
        #expect(needed.keys.contains("cvc-create") && needed.keys.contains("qemu-system-x86_64"), "the scan found \(needed.keys.sorted())")
    }

    @Test("install-deps.sh --check says what is missing and installs nothing", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/dpkg-query")))
    func checkMode() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [Self.root.appendingPathComponent("scripts/install-deps.sh").path, "--check"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // On a machine set up by the script, nothing is missing; elsewhere, each missing thing is named.
        if process.terminationStatus == 0 {
            #expect(output.contains("nothing missing"), "\(output)")
        } else {
            #expect(process.terminationStatus == 1, "\(output)")
            #expect(output.contains("missing"), "\(output)")
        }
        let bad = Process()
        bad.executableURL = URL(fileURLWithPath: "/bin/bash")
        bad.arguments = [Self.root.appendingPathComponent("scripts/install-deps.sh").path, "--frobnicate"]
        bad.standardOutput = FileHandle.nullDevice
        bad.standardError = FileHandle.nullDevice
        try bad.run()
        bad.waitUntilExit()
        #expect(bad.terminationStatus == 2)
    }
}
