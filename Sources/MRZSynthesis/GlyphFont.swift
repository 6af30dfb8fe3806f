import CFreeType
import Foundation

/// A font's glyphs as 8-bit coverage bitmaps, rendered by FreeType at one pixel size: what the
/// synthetic pages are drawn with (OCR-B for the MRZ, from Debian's fonts-ocr-b; DejaVu for the
/// page's other text). Test and benchmark code only — the product never links FreeType.
public final class GlyphFont: @unchecked Sendable {  // immutable after init
    public struct Glyph: Sendable {
        /// Coverage 0…255, `width × height`, rows top to bottom.
        public let coverage: [UInt8]
        public let width: Int
        public let height: Int
        /// From the pen position to the bitmap's left edge, and from the baseline up to its top.
        public let left: Int
        public let top: Int
        /// Horizontal advance in pixels.
        public let advance: Double
    }

    public let path: String
    public let pixelSize: Int
    /// Ascender and descender in pixels (positive up, descender negative), and the cap height.
    public let ascender: Double
    public let descender: Double
    public let capHeight: Double
    private var glyphs: [Character: Glyph] = [:]

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The OCR-B font Debian installs (fonts-ocr-b), regular or sharp.
    public static let ocrbPaths = ["/usr/share/fonts/opentype/ocr-b/OCRB.otf", "/usr/share/fonts/opentype/ocr-b/OCRBS.otf"]
    public static let sansPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    public static let sansBoldPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"

    /// Loads `characters` of the font at `path`, rendered at `pixelSize` pixels per em.
    public init(path: String, pixelSize: Int, characters: String) throws {
        self.path = path
        self.pixelSize = pixelSize
        var library: FT_Library?
        guard FT_Init_FreeType(&library) == 0, let library else { throw Failure(description: "FreeType could not start") }
        defer { FT_Done_FreeType(library) }
        var face: FT_Face?
        guard FT_New_Face(library, path, 0, &face) == 0, let face else {
            throw Failure(description: "cannot load the font \(path) (install fonts-ocr-b and fonts-dejavu-core)")
        }
        defer { FT_Done_Face(face) }
        guard FT_Set_Pixel_Sizes(face, 0, FT_UInt(pixelSize)) == 0 else { throw Failure(description: "\(path): cannot set size \(pixelSize)") }
        let metrics = face.pointee.size.pointee.metrics
        ascender = Double(metrics.ascender) / 64
        descender = Double(metrics.descender) / 64
        var glyphs: [Character: Glyph] = [:]
        for character in characters {
            guard let scalar = character.unicodeScalars.first else { continue }
            guard FT_Load_Char(face, FT_ULong(scalar.value), FT_Int32(FT_LOAD_RENDER | FT_LOAD_NO_HINTING)) == 0, let slot = face.pointee.glyph else {
                throw Failure(description: "\(path) has no glyph for \(character)")
            }
            let bitmap = slot.pointee.bitmap
            let width = Int(bitmap.width), height = Int(bitmap.rows), pitch = Int(bitmap.pitch)
            var coverage = [UInt8](repeating: 0, count: width * height)
            if let buffer = bitmap.buffer, width > 0, height > 0 {
                for row in 0..<height {
                    for column in 0..<width { coverage[row * width + column] = buffer[row * pitch + column] }
                }
            }
            glyphs[character] = Glyph(coverage: coverage, width: width, height: height, left: Int(slot.pointee.bitmap_left),
                                      top: Int(slot.pointee.bitmap_top), advance: Double(slot.pointee.advance.x) / 64)
        }
        self.glyphs = glyphs
        capHeight = Double(glyphs["H"]?.top ?? Int(ascender * 0.7))
    }

    public func glyph(_ character: Character) -> Glyph? { glyphs[character] }

    private init(copying font: GlyphFont, glyphs: [Character: Glyph]) {
        (path, pixelSize, ascender, descender, capHeight) = (font.path, font.pixelSize, font.ascender, font.descender, font.capHeight)
        self.glyphs = glyphs
    }

    /// The same font drawing, for each key of `substitutes`, the glyph of its value instead (a
    /// character the font has loaded): OCR-B's own glyphs outside the MRZ's alphabet (`Ξ`, `$`,
    /// `ü`) in a key field's cells, the look a reader must call "not OCR-B" though the font is.
    public func drawing(_ substitutes: [Character: Character]) -> GlyphFont {
        var drawn = glyphs
        for (character, substitute) in substitutes {
            if let glyph = glyphs[substitute] { drawn[character] = glyph }
        }
        return GlyphFont(copying: self, glyphs: drawn)
    }

    /// OCR-B's glyphs (as Debian's fonts-ocr-b has them) that are no MRZ character: punctuation,
    /// lower case, accented and Greek capitals, arrows.
    public static let ocrbOutsideMRZ: String = {
        var characters = ""
        for value in 0x21...0x7E {
            let c = Character(Unicode.Scalar(UInt8(value)))
            if !("0"..."9").contains(c), !("A"..."Z").contains(c), c != "<" { characters.append(c) }
        }
        return characters + "¡¤§¿ÄÆÖØÜßäæöøüıŒœΓΘΛΞΠΣΥΦΨΩ↑↓∆"
    }()
}
