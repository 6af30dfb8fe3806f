import Foundation
import ImageCodecs
import MRZ
import MRZSynthesis

/// One benchmark image and what reading it should give.
struct BenchImage: Sendable {
    var frame: ImageCodecs.RGBImage
    /// The printed MRZ.
    var lines: [String]
    /// The printed key (number without fillers, birth, expiry), and whether its check digits hold:
    /// when they do not (a character substituted), no key may be claimed; when the zone is not one
    /// document's (`noDocument`), neither.
    var documentNumber: String
    var dateOfBirth: String
    var dateOfExpiry: String
    var keyHolds: Bool
    var noDocument = false
}

/// The tiers made to fool a reader (issue 41), beside the photographers' tiers:
/// - `font`: kiosk frames whose document number has one or two characters in a font never
///   trained on (`ForeignFonts.heldOut`: Noto Sans Mono, Inconsolata, …), 14–28-pixel capitals;
/// - `substitution`: scans and kiosk frames whose printed MRZ has one or two characters replaced
///   by others (a forged or misprinted page: its check digits mostly fail, and no key may be
///   claimed that is not printed);
/// - `interleave`: two documents' lines on one page, A1 B1 A2 B2 or A1 B2 A2 (no key at all);
/// - `zeros`: honest documents whose numbers are a letter and eight of `0`, `O` and a few other
///   characters (`0O0O00D8Q`), photographed small (5–11-pixel capitals) or tiny (8–12): every
///   `O` a `0` could be, where the document's own `0`s vouch for the number's at small capitals
///   (`MRZDocumentPrint`, issue 50). A key claimed with an `O` read as `0` is false;
/// - `outside`: kiosk frames (14–28-pixel capitals) whose document number has one or two cells
///   drawn with OCR-B's own glyphs outside the MRZ's alphabet, those most like MRZ characters
///   (`Ξ Λ Θ Ø $ ß ↑ ü …`): no MRZ is printed, so every key claimed is false — what the classifier's
///   "not OCR-B" stops (issue 50; the candidates may still offer keys: the chip refuses them);
/// - `overprint`, `tiny`, `small` are photographers' conditions (`Photographer.Conditions`).
enum AttackTiers {
    static let names: Set<String> = ["font", "substitution", "interleave", "zeros", "outside"]

    static let heldOutFonts = ForeignFonts.load(ForeignFonts.heldOut)

    /// OCR-B's glyphs outside the MRZ most like MRZ characters, and the font that draws them.
    static let outsideGlyphs = Array("ΞΛΠΣΘØÖÜÄ$~↑üßΓ∆Ω|lo!ıΥΦΨ")
    static let outsideFont = try? GlyphFont(path: GlyphFont.ocrbPaths[0], pixelSize: 96,
                                            characters: PageRenderer.mrzCharacters + String(outsideGlyphs))

    static func image(tier: String, index: Int, seed: UInt64, tierPlace: Int, photographer: Photographer) -> BenchImage {
        var generator = SeededGenerator(seed: seed &+ UInt64(index) &* 104_729 &+ UInt64(tierPlace) << 40)
        let format = MRZFormat.allCases[index % MRZFormat.allCases.count]
        var sample = tier == "zeros" ? MRZSample(format: format, generator: &generator, numberAlphabet: "000OOO0O0DQ8B")
            : MRZSample(format: format, generator: &generator)
        // The document number's place: line 0 from 5 (TD1), else line 1 from 0.
        let numberLine = format == .td1 ? 0 : 1, numberStart = format == .td1 ? 5 : 0
        switch tier {
        case "font":
            var conditions = Photographer.Conditions.kiosk
            conditions.capHeight = 14...28
            var fonts: [[GlyphFont?]] = sample.lines.map { $0.map { _ in nil } }
            let changed = Int.random(in: 1...2, using: &generator)
            for _ in 0..<changed where !heldOutFonts.isEmpty {
                let position = numberStart + Int.random(in: 0..<9, using: &generator)
                fonts[numberLine][position] = heldOutFonts[Int.random(in: 0..<heldOutFonts.count, using: &generator)]
            }
            let shot = photographer.shoot(sample, conditions, foreign: fonts, generator: &generator)
            return truth(shot.frame, sample.lines)
        case "outside":
            var conditions = Photographer.Conditions.kiosk
            conditions.capHeight = 14...28
            var fonts: [[GlyphFont?]] = sample.lines.map { $0.map { _ in nil } }
            let number = Array(sample.lines[numberLine])
            for _ in 0..<Int.random(in: 1...2, using: &generator) {
                guard let outsideFont else { break }
                let position = numberStart + Int.random(in: 0..<9, using: &generator)
                let glyph = outsideGlyphs[Int.random(in: 0..<outsideGlyphs.count, using: &generator)]
                fonts[numberLine][position] = outsideFont.drawing([number[position]: glyph])
            }
            let shot = photographer.shoot(sample, conditions, foreign: fonts, generator: &generator)
            var image = truth(shot.frame, sample.lines)
            image.noDocument = true
            return image
        case "zeros":
            let conditions: Photographer.Conditions = index % 2 == 0 ? .small : .tiny
            let shot = photographer.shoot(sample, conditions, generator: &generator)
            return truth(shot.frame, sample.lines)
        case "substitution":
            // One or two characters of the key's fields (number, dates, their check digits)
            // replaced by a character of the same class, usually breaking a check digit.
            let keyPositions: [(Int, Int)] = format == .td1
                ? (5..<15).map { (0, $0) } + (0..<7).map { (1, $0) } + (8..<15).map { (1, $0) }
                : (0..<10).map { (1, $0) } + (13..<20).map { (1, $0) } + (21..<28).map { (1, $0) }
            var lines = sample.lines.map { Array($0) }
            for _ in 0..<Int.random(in: 1...2, using: &generator) {
                let (line, position) = keyPositions[Int.random(in: 0..<keyPositions.count, using: &generator)]
                let old = lines[line][position]
                let pool = Array(old.isNumber ? "0123456789" : "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
                var new = old
                while new == old { new = pool[Int.random(in: 0..<pool.count, using: &generator)] }
                lines[line][position] = new
            }
            sample.lines = lines.map { String($0) }
            let conditions: Photographer.Conditions = index % 2 == 0 ? .scan : .kiosk
            let shot = photographer.shoot(sample, conditions, generator: &generator)
            return truth(shot.frame, sample.lines)
        default:  // interleave
            let other = MRZSample(format: format, generator: &generator)
            let rows: [String] = format == .td1
                ? [sample.lines[0], other.lines[0], sample.lines[1], other.lines[1], sample.lines[2], other.lines[2]]
                : index % 2 == 0 ? [sample.lines[0], other.lines[0], sample.lines[1], other.lines[1]]
                : [sample.lines[0], other.lines[1], sample.lines[1]]
            let pitch = Float.random(in: 14...30, using: &generator)
            guard let zone = RealZone.compose(rows.map(RealZone.Row.drawn), length: format.lineLength,
                                              drawnPitch: pitch, capHeight: pitch * 0.9) else { return truth(ImageCodecs.RGBImage(width: 1, height: 1, pixels: [255, 255, 255]), sample.lines) }
            var image = truth(zone.rgb, sample.lines)
            image.noDocument = true
            return image
        }
    }

    static func truth(_ frame: ImageCodecs.RGBImage, _ lines: [String]) -> BenchImage {
        let reading = MRZReading(text: lines)
        return BenchImage(frame: frame, lines: lines, documentNumber: reading?.documentNumber ?? "", dateOfBirth: reading?.dateOfBirth ?? "",
                          dateOfExpiry: reading?.dateOfExpiry ?? "", keyHolds: reading?.accessKeyValid ?? false)
    }
}
