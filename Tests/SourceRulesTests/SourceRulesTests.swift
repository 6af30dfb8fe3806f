import Foundation
import Testing

/// Rules every Swift file under Sources/ keeps, checked on the text (comments and string
/// literals set aside) so that a change that breaks one fails CI:
///
/// 1. No force unwrap: no postfix `!` on a value or a type (`x!`, `f()!`, `a[i]!`, `T!`), no `try!`,
///    no `as!`. Outside input — a page's JSON, a chip's answer, the command line — must never be
///    able to stop the host; every unwrap says what happens when the value is absent.
/// 2. A trap (`fatalError`, `precondition`, `preconditionFailure`) only where a `// trap:` comment
///    on the same line or one of the two lines before says why it cannot be reached from outside.
@Suite("Source rules: no force unwrap, annotated traps")
struct SourceRulesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func sourceFiles() throws -> [URL] {
        let sources = root.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
    }

    @Test("no force unwrap, try! or as! anywhere in Sources/")
    func noForceUnwraps() throws {
        let files = try Self.sourceFiles()
        #expect(files.count > 50, "Sources/ not found at \(Self.root.path)")
        var findings: [String] = []
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for finding in SwiftScanner.forceUnwraps(in: text) {
                findings.append("\(file.path.replacingOccurrences(of: Self.root.path + "/", with: "")):\(finding.line): \(finding.what)")
            }
        }
        #expect(findings.isEmpty, "force unwraps:\n\(findings.joined(separator: "\n"))")
    }

    @Test("traps only with a `// trap:` reason")
    func trapsAreAnnotated() throws {
        var findings: [String] = []
        for file in try Self.sourceFiles() {
            let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
            let code = SwiftScanner.codeOnly(lines.joined(separator: "\n")).components(separatedBy: "\n")
            for (index, line) in code.enumerated() {
                guard line.range(of: #"\b(fatalError|precondition|preconditionFailure)\s*\("#, options: .regularExpression) != nil else { continue }
                let context = lines[max(0, index - 2)...index]
                if !context.contains(where: { $0.contains("// trap:") }) {
                    findings.append("\(file.lastPathComponent):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(findings.isEmpty, "traps without a `// trap:` reason:\n\(findings.joined(separator: "\n"))")
    }

    @Test("the scanner finds what it must and nothing else", arguments: [
        ("let a = b!", 1), ("f()!.g", 1), ("x[0]!", 1), ("var v: Int!", 1), ("try! run()", 1), ("y as! Z", 1),
        ("a?.b!.c", 1), ("let s = \"\\(x!)\"", 1),
        ("if a != b {}", 0), ("if !flag {}", 0), ("x !== y", 0), ("let s = \"wow!\"", 0), ("// b!", 0),
        ("/* a! /* nested! */ */ let c = 1", 0), ("let r = #\"raw!\"#", 0), ("let m = \"\"\"\n  hi!\n  \"\"\"", 0),
        ("a = !b && !c", 0), ("guard x else { return }", 0), ("let t = \"\\\"\"; z!", 1),
    ])
    func scannerSelfTest(source: String, expected: Int) {
        #expect(SwiftScanner.forceUnwraps(in: source).count == expected, "\(source)")
    }
}

/// Just enough of Swift's lexical structure to tell code from comments and string literals.
enum SwiftScanner {
    struct Finding { let line: Int; let what: String }

    /// The text with comments and string-literal contents replaced by spaces (line breaks kept),
    /// interpolations `\( … )` kept as code.
    static func codeOnly(_ text: String) -> String {
        let chars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        func blank(_ c: Unicode.Scalar) { out.append(c == "\n" ? "\n" : " ") }
        func at(_ s: String, _ j: Int) -> Bool {
            let u = Array(s.unicodeScalars)
            return j + u.count <= chars.count && Array(chars[j..<(j + u.count)]) == u
        }
        // Code nesting: the stack records string literals we are inside, so that an
        // interpolation's code returns to the right string.
        struct StringContext { var hashes: Int; var multiline: Bool; var parens: Int }
        var strings: [StringContext] = []
        var inString = false
        while i < chars.count {
            let c = chars[i]
            if inString, let context = strings.last {
                let close = (context.multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: context.hashes)
                let escape = "\\" + String(repeating: "#", count: context.hashes)
                if at(escape + "(", i) {
                    for _ in 0..<(escape.unicodeScalars.count + 1) { out.append(" ") }
                    i += escape.unicodeScalars.count + 1
                    inString = false
                    strings[strings.count - 1].parens = 1
                    continue
                }
                if at(escape, i) {
                    for _ in 0..<(escape.unicodeScalars.count + 1) where i < chars.count { blank(chars[i]); i += 1 }
                    continue
                }
                if at(close, i) {
                    for _ in close.unicodeScalars { out.append(" ") }
                    i += close.unicodeScalars.count
                    strings.removeLast()
                    inString = !strings.isEmpty && strings.last?.parens == 0
                    continue
                }
                blank(c)
                i += 1
                continue
            }
            if at("//", i) {
                while i < chars.count, chars[i] != "\n" { out.append(" "); i += 1 }
                continue
            }
            if at("/*", i) {
                var depth = 0
                repeat {
                    if at("/*", i) { depth += 1; out.append(" "); out.append(" "); i += 2; continue }
                    if at("*/", i) { depth -= 1; out.append(" "); out.append(" "); i += 2; continue }
                    blank(chars[i])
                    i += 1
                } while depth > 0 && i < chars.count
                continue
            }
            var hashes = 0
            while at(String(repeating: "#", count: hashes + 1) + "\"", i) || (hashes == 0 && at("#", i) && at(String(repeating: "#", count: hashes + 1), i) && i + hashes + 1 < chars.count && chars[i + hashes + 1] == "#") {
                hashes += 1
                if at(String(repeating: "#", count: hashes) + "\"", i) { break }
            }
            if at(String(repeating: "#", count: hashes) + "\"", i) {
                let multiline = at(String(repeating: "#", count: hashes) + "\"\"\"", i)
                let opener = hashes + (multiline ? 3 : 1)
                for _ in 0..<opener { out.append(" ") }
                i += opener
                strings.append(StringContext(hashes: hashes, multiline: multiline, parens: 0))
                inString = true
                continue
            }
            if !strings.isEmpty, strings[strings.count - 1].parens > 0 {
                if c == "(" { strings[strings.count - 1].parens += 1 }
                if c == ")" {
                    strings[strings.count - 1].parens -= 1
                    if strings[strings.count - 1].parens == 0 {
                        out.append(" ")
                        i += 1
                        inString = true
                        continue
                    }
                }
            }
            out.append(c)
            i += 1
        }
        return String(out)
    }

    static func forceUnwraps(in text: String) -> [Finding] {
        let code = codeOnly(text)
        var findings: [Finding] = []
        for (index, line) in code.components(separatedBy: "\n").enumerated() {
            let scalars = Array(line.unicodeScalars)
            for (j, c) in scalars.enumerated() where c == "!" {
                let next: Unicode.Scalar? = j + 1 < scalars.count ? scalars[j + 1] : nil
                if next == "=" { continue }  // != and !==
                guard j > 0 else { continue }
                let previous = scalars[j - 1]
                let word = String(String.UnicodeScalarView(scalars[..<j])).split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).last
                if word == "try" || word == "as", previous.properties.isAlphabetic {
                    findings.append(Finding(line: index + 1, what: "\(word ?? "")!"))
                    continue
                }
                if previous.properties.isAlphabetic || ("0"..."9").contains(previous) || previous == "_" || previous == ")"
                    || previous == "]" || previous == "?" || previous == ">" {
                    findings.append(Finding(line: index + 1, what: line.trimmingCharacters(in: .whitespaces)))
                }
            }
        }
        return findings
    }
}
