/// Text from outside the process — a page's correlation id or action, a reader's name, a chip's
/// answer — made safe for one log line: control characters, line and paragraph separators and
/// bidirectional overrides are escaped (`\n`, `\u{1B}`, …), so a value can never start a forged log
/// line or move the terminal's cursor, and the result is cut to a bounded length with the size of
/// what was left out.
public enum LogText {
    /// The default longest piece of outside text a log line carries, in characters.
    public static let defaultLimit = 120

    /// `text` escaped and cut to at most `limit` characters of its own (plus the marker).
    public static func clip(_ text: some StringProtocol, to limit: Int = defaultLimit) -> String {
        var out = ""
        var kept = 0
        var index = text.unicodeScalars.startIndex
        let scalars = text.unicodeScalars
        while index != scalars.endIndex {
            guard kept < max(0, limit) else {
                let rest = scalars[index...].reduce(0) { $0 + String($1).utf8.count }
                return out + "…(+\(rest) bytes)"
            }
            let scalar = scalars[index]
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\\": out += "\\\\"
            default:
                if needsEscape(scalar) {
                    out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            kept += 1
            index = scalars.index(after: index)
        }
        return out
    }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true           // C0, DEL, C1 (ESC and CSI included)
        case 0x2028, 0x2029: return true                      // line and paragraph separators
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true  // bidi marks and overrides
        case 0xFEFF: return true                              // zero-width no-break space / BOM
        default: return false
        }
    }
}
