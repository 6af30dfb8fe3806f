import Foundation

/// JSON on standard output (sorted keys, pretty) for the `--json` of commands whose reports are
/// JSONSerialization values (doctor, trust, terminal, readers); `gbgbridge read`, which runs
/// without Foundation, prints Encodable values with GBGBridgeRead's `printJSON`.
func printJSON(_ object: Any) {
    // Foundation pretty-prints an empty array or object across three lines.
    if let array = object as? [Any], array.isEmpty { return print("[]") }
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) {
        print(String(decoding: data, as: UTF8.self))
    }
}
