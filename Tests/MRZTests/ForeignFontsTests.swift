import Foundation
import MRZSynthesis
import Testing
@testable import MRZ

/// How the glyph model's training labels glyphs of other fonts and OCR-B's glyphs outside the MRZ
/// (`ForeignFonts`, `GlyphFont.drawing`): what is taught as a character and what as "not OCR-B".
@Suite("MRZ training labels: other fonts' glyphs, by size, and OCR-B's own outside the MRZ")
struct ForeignFontsTests {
    static let ocrb = try? GlyphFont(path: GlyphFont.ocrbPaths[0], pixelSize: 96,
                                     characters: PageRenderer.mrzCharacters + GlyphFont.ocrbOutsideMRZ)

    @Test("OCR-B's glyphs outside the MRZ are none of its 37 characters, and Debian's OCR-B draws every one")
    func outsideGlyphsAreInTheFont() throws {
        let ocrb = try #require(Self.ocrb, "fonts-ocr-b is needed (scripts/install-deps.sh)")
        let outside = Set(GlyphFont.ocrbOutsideMRZ)
        #expect(outside.isDisjoint(with: Set(PageRenderer.mrzCharacters)))
        #expect(outside.isSuperset(of: Set("~ΞΛ$↑ü")), "the red team's glyphs are among them")
        for character in outside { #expect(ocrb.glyph(character) != nil, "OCR-B has no \(character)") }
    }

    @Test("a font drawing OCR-B's outside glyphs in an MRZ character's place is that glyph, not OCR-B's character")
    func substitutedGlyphs() throws {
        let ocrb = try #require(Self.ocrb, "fonts-ocr-b is needed (scripts/install-deps.sh)")
        let drawn = ocrb.drawing(["E": "Ξ", "S": "$"])
        #expect(drawn.glyph("E")?.coverage == ocrb.glyph("Ξ")?.coverage)
        #expect(drawn.glyph("S")?.coverage == ocrb.glyph("$")?.coverage)
        #expect(drawn.glyph("A")?.coverage == ocrb.glyph("A")?.coverage)
        #expect(drawn.capHeight == ocrb.capHeight)
        // Ξ is not OCR-B's E at full size: it is taught "not OCR-B" where it stands for one.
        #expect(ForeignFonts.similarity(ocrb, drawn, "E") < ForeignFonts.sameShape)
        #expect(ForeignFonts.similarity(ocrb, drawn, "A") > 0.999)
    }

    @Test("at small capitals a glyph is its character only when OCR-B's own is the nearest: the sharp cut is, everywhere")
    func likenessBySize() throws {
        let ocrb = try #require(Self.ocrb, "fonts-ocr-b is needed (scripts/install-deps.sh)")
        let sharp = try GlyphFont(path: GlyphFont.ocrbPaths[1], pixelSize: 96, characters: PageRenderer.mrzCharacters)
        for size in [5, 8, 11] {
            let alike = PageRenderer.mrzCharacters.filter { ForeignFonts.resemblesAt(size, ocrb: ocrb, font: sharp, $0) }
            #expect(alike.count >= PageRenderer.mrzCharacters.count - 2, "OCR-B's sharp cut at \(size) px: only \(alike)")
        }
        // A glyph drawn as another OCR-B character is never taught as this one, at any size.
        let swapped = ocrb.drawing(["6": "G", "0": "O"])
        for size in 3..<12 {
            #expect(!ForeignFonts.resemblesAt(size, ocrb: ocrb, font: swapped, "6"), "G taught as 6 at \(size) px")
            #expect(!ForeignFonts.resemblesAt(size, ocrb: ocrb, font: swapped, "0"), "O taught as 0 at \(size) px")
        }
    }
}
