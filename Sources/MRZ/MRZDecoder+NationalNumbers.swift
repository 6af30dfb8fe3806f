/// What a state's own law says its document numbers are made of, where ICAO 9303 leaves it open
/// (any digit, letter or filler) and the look-alike floor therefore keeps `O` beside every `0`.
///
/// Germany's: the passport regulation (PassV, Anlage 11; the same series since 1 November 2007 for
/// passports, official and diplomatic passports, since 1 November 2010 for identity cards) makes a
/// serial number of the digits and `C F G H J K L M N P R T V W X Y Z` only — no vowels, no
/// `B D Q S`, "so that the number reads by machine" — and the children's and temporary passports
/// one serial letter, a filler, then seven digits (`G<0000000`). Numbers issued before those dates
/// were digits. So under the issuer `D<<` a passport's (`P…`) or identity card's (`I…`) number
/// never holds an `O`, and past its first place none of `A B D E I O Q S U`: the `0`/`O` rival the
/// floor raises is no rival there (issue 50: `C01Y00T47`, `G<0000000` — two `0`s whose change to
/// `O` cancels in the check digit — refused every German passport's key at small capitals). Other
/// German documents (crew certificates `S00000001`, visas `D09174053`, residence titles) follow
/// other rules and keep ICAO's.
///
/// The issuer and the document code are read from the same cells (their best allowed reading),
/// and the law is applied only when the number's own best reading keeps it: a number read with a
/// letter Germany never prints there is taken as ICAO's any (a generator that knows no German law
/// draws such numbers; so may a photo that misreads another state as `D<<`). What the law costs
/// is a lawful-looking misreading of an unlawful number — two `O`s whose change to `0` cancels,
/// both read `0` — claimed without the `O` rival: no such document is issued, and the chip, never
/// the photo, says whose document it is.
extension MRZDecoder {
    /// Per cell (line, position) of the document number, which characters the issuing state's
    /// numbers allow there; empty when its rules are not known (ICAO's `any` then holds).
    struct NationalNumberRule: Sendable {
        var allowed: [[Int]: Set<MRZGlyph>] = [:]

        static let none = NationalNumberRule()

        /// `probabilities` with what the rule forbids at (line, position) made impossible
        /// (after the look-alike floor, which would raise it again from its partner).
        func masked(_ probabilities: Scores, line: Int, position: Int) -> Scores {
            guard let allows = allowed[[line, position]] else { return probabilities }
            var out = probabilities
            for glyph in MRZGlyph.all where !allows.contains(glyph) { out[glyph.index] = 0 }
            return out
        }
    }

    /// How sure a reading of a character the law forbids must be to set the law aside for the key
    /// candidates (`nationalNumberRule(_:lenient:)`).
    static let lawContradiction: Float = 0.5

    /// The serial letters of Germany's passports and identity cards (PassV, Anlage 11).
    static let germanSerialLetters = Set("CFGHJKLMNPRTVWXYZ".map { MRZGlyph($0) })

    /// The rule for the document these cells hold, from their best reading of the document code
    /// and the issuer. For the verdicts the number's best reading must keep the law; for the key
    /// candidates (`lenient`) it must only not contradict it surely: at 5-pixel pitch the
    /// classifier calls most of a German temporary passport's `0`s "not OCR-B" and gives `0`,
    /// `O` and `D` a few thousandths each, and the noise picking `O` there was no evidence against
    /// a law that says `0` — the key `H<0000000` was never offered. A character the law forbids,
    /// read at least `lawContradiction` and three times as likely as every lawful one, still
    /// takes the number to ICAO's rules (another generator's German number `CA1X00T47`).
    func nationalNumberRule(_ scores: [[Scores]], lenient: Bool = false) -> NationalNumberRule {
        let fields = MRZLayout.fields(format)
        guard let code = fields.first(where: { $0.name == .documentCode }), let issuer = fields.first(where: { $0.name == .issuingState }),
              let number = fields.first(where: { $0.name == .documentNumber }), scores.count > max(code.line, issuer.line, number.line) else {
            return .none
        }
        func read(_ field: MRZField) -> String {
            String(field.range.map { Self.pick(scores[field.line][$0], allowed: field.kind).glyph.character })
        }
        guard let alphabet = Self.nationalNumberAlphabet(documentCode: read(code), issuer: read(issuer)) else { return .none }
        // The law is evidence only where the number's own best reading keeps it: a number read
        // with a letter Germany never prints is no German serial number (or another generator's
        // drawing), and ICAO's rules hold for it.
        for (offset, position) in number.range.enumerated() where offset < alphabet.count {
            let cell = floored(scores[number.line][position], line: number.line, position: position, national: .none)
            let pick = Self.pick(cell, allowed: number.kind)
            guard !alphabet[offset].contains(pick.glyph) else { continue }
            guard lenient else { return .none }
            let lawful = alphabet[offset].map { cell[$0.index] }.max() ?? 0
            if pick.probability >= Self.lawContradiction && pick.probability >= 3 * lawful { return .none }
        }
        var rule = NationalNumberRule()
        for (offset, position) in number.range.enumerated() where offset < alphabet.count {
            rule.allowed[[number.line, position]] = alphabet[offset]
        }
        return rule
    }

    /// Per place of the number (from its first), the characters the issuer's numbers are made of;
    /// nil when its rules are not known.
    static func nationalNumberAlphabet(documentCode: String, issuer: String) -> [Set<MRZGlyph>]? {
        // "D<<" as the cells read it, "D" as a reading gives it (its fillers trimmed).
        guard issuer.prefix(while: { $0 != "<" }) == "D", issuer.count <= 3, let kind = documentCode.first, kind == "P" || kind == "I" else { return nil }
        let digits = Set(MRZGlyph.all.filter(\.isDigit))
        let first = digits.union(MRZGlyph.all.filter { $0.isLetter && $0.character != "O" })
        let serial = digits.union(germanSerialLetters)
        return [first, serial.union([.filler])] + Array(repeating: serial, count: 7)
    }

    /// Whether `number` (its padding trimmed or not) is one the issuer's rules allow.
    static func nationalNumberAllows(_ number: String, documentCode: String, issuer: String) -> Bool {
        guard let alphabet = nationalNumberAlphabet(documentCode: documentCode, issuer: issuer) else { return true }
        let glyphs = number.map { MRZGlyph($0) }
        guard glyphs.count <= alphabet.count else { return false }
        return zip(glyphs, alphabet).allSatisfy { $1.contains($0) }
    }
}
