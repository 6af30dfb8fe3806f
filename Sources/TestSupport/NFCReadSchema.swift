import Foundation

/// The nfc.read contract as `Docs/nfc-read.schema.json` writes it, checked by an independent
/// validator (Python's jsonschema, Debian's python3-jsonschema): every message a test collects —
/// requests, progress events, responses — must match it.
public enum NFCReadSchema {
    public static let path = TestFixtures.packageRoot.appendingPathComponent("Docs/nfc-read.schema.json").path
    /// mdoc.read's answer data (and `gbgbridge mdoc read --json`).
    public static let mdocPath = TestFixtures.packageRoot.appendingPathComponent("Docs/mdoc-read.schema.json").path

    static let script = """
        import json, sys
        from jsonschema import Draft202012Validator
        schema = json.load(open(sys.argv[1]))
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema)
        problems = 0
        for number, line in enumerate(open(sys.argv[2]), 1):
            message = json.loads(line)
            errors = sorted(validator.iter_errors(message), key=lambda e: len(list(e.path)))
            if errors:
                problems += 1
                best = max(errors, key=lambda e: len(list(e.absolute_path)))
                print(f"message {number} ({message.get('type')} {message.get('payload', {}).get('action')}): "
                      f"{'/'.join(map(str, best.absolute_path))}: {best.message[:300]}")
        print(f"checked {number if 'number' in dir() else 0} messages, {problems} do not match")
        """

    /// The messages (JSON texts) that do not match the schema, each with why; empty when all do.
    /// Throws when the validator cannot run.
    public static func problems(in messages: [String], schema: String = NFCReadSchema.path) async throws -> [String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nfc-read-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        // One message a line: re-encoded compactly (a message may hold line breaks in strings).
        var lines: [String] = []
        for message in messages {
            let object = try JSONSerialization.jsonObject(with: Data(message.utf8))
            lines.append(String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        let outcome = try await runCommand("/usr/bin/python3", ["-c", script, schema, file.path], timeout: .seconds(120))
        guard outcome.status == 0, outcome.standardOutput.contains("checked ") else {
            throw RigUnavailable(description: "python3 with jsonschema is needed (scripts/install-deps.sh): \(outcome.standardError.suffix(500))")
        }
        return outcome.standardOutput.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("checked ") }
    }
}
