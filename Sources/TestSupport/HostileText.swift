import PropertyBased

/// Generators of text as a hostile page, a careless operator or a broken chip hands it over:
/// valid values with Unicode that looks harmless mixed in — combining marks, zero-width joiners,
/// variation selectors, full-width and Arabic-Indic digits, bidirectional marks, a byte-order
/// mark, control characters, NUL — or replaced by noise. Every input boundary is tested with them.
public enum HostileText {
    /// Scalars that are not ASCII but sit inside or beside a digit or letter on screen.
    public static let lookalikes: [Unicode.Scalar] = [
        "\u{301}", "\u{332}", "\u{300}", "\u{20DD}",  // combining marks
        "\u{200D}", "\u{200C}", "\u{200B}", "\u{2060}",  // ZWJ, ZWNJ, zero-width space, word joiner
        "\u{FE0F}", "\u{FE0E}", "\u{E0100}",  // variation selectors
        "\u{FF10}", "\u{FF11}", "\u{FF19}", "\u{FF21}", "\u{FF1C}",  // full-width 0 1 9 A <
        "\u{0660}", "\u{0663}", "\u{06F5}", "\u{0966}", "\u{00B2}", "\u{2460}",  // other digits
        "\u{200F}", "\u{202E}", "\u{2066}", "\u{061C}",  // RTL mark, RLO, isolate, Arabic letter mark
        "\u{FEFF}", "\u{00A0}", "\u{2028}",  // BOM, no-break space, line separator
        "\u{0}", "\u{7}", "\u{1B}", "\u{7F}", "\u{85}", "\u{9}", "\u{D}",  // controls
        "\u{1F600}", "\u{1F1FA}", "\u{0130}", "\u{212A}", "\u{FB01}", "\u{00DF}",  // emoji, flag part, İ, Kelvin, ﬁ, ß
    ]

    public static func insert(_ scalar: Unicode.Scalar, into text: String, at position: Int) -> String {
        var scalars = Array(text.unicodeScalars)
        scalars.insert(scalar, at: min(max(0, position), scalars.count))
        return String(String.UnicodeScalarView(scalars))
    }

    public static func replace(in text: String, at position: Int, with scalar: Unicode.Scalar) -> String {
        var scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty else { return String(scalar) }
        scalars[min(max(0, position), scalars.count - 1)] = scalar
        return String(String.UnicodeScalarView(scalars))
    }

    /// `valid` texts, each mutated: a lookalike inserted or put in place of a character, a few at
    /// once, the text cut or doubled, or replaced by random Unicode — and sometimes left valid.
    public static func mutations(of valid: [String]) -> Generator<String, Shrink.None<String>> {
        Generator { rng in
            var text = valid.randomElement(using: &rng) ?? ""
            let count = text.unicodeScalars.count
            switch Int.random(in: 0..<8, using: &rng) {
            case 0:
                return text
            case 1, 2:
                let scalar = lookalikes.randomElement(using: &rng) ?? "\u{301}"
                return insert(scalar, into: text, at: Int.random(in: 0...count, using: &rng))
            case 3:
                let scalar = lookalikes.randomElement(using: &rng) ?? "\u{FF10}"
                return replace(in: text, at: Int.random(in: 0..<max(1, count), using: &rng), with: scalar)
            case 4:
                for _ in 0..<Int.random(in: 2...5, using: &rng) {
                    let scalar = lookalikes.randomElement(using: &rng) ?? "\u{200D}"
                    text = insert(scalar, into: text, at: Int.random(in: 0...text.unicodeScalars.count, using: &rng))
                }
                return text
            case 5:
                let scalars = Array(text.unicodeScalars)
                return String(String.UnicodeScalarView(scalars.prefix(Int.random(in: 0...scalars.count, using: &rng))))
            case 6:
                return text + text
            default:
                var scalars = String.UnicodeScalarView()
                for _ in 0..<Int.random(in: 0...40, using: &rng) {
                    let value = [UInt32.random(in: 0...0x7F, using: &rng), UInt32.random(in: 0x80...0xFFFF, using: &rng),
                                 UInt32.random(in: 0x10000...0x10FFFF, using: &rng)].randomElement(using: &rng) ?? 0x41
                    scalars.append(Unicode.Scalar(value) ?? lookalikes.randomElement(using: &rng) ?? "x")
                }
                return String(scalars)
            }
        }
    }

    /// Whether `text` holds anything but ASCII.
    public static func hasNonASCII(_ text: String) -> Bool { text.unicodeScalars.contains { !$0.isASCII } }
}
