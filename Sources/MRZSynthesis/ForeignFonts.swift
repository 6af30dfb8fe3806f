import Foundation
import MRZ

/// Fonts that are not OCR-B, from Debian's font packages: glyphs a reader must not take for OCR-B
/// characters (a `6` in DejaVu Sans Mono Bold read as OCR-B's `G`, whose check value is the
/// same, gave a wrong document number every check digit accepted — issue 41). Some train the
/// classifier's "not OCR-B" output; others are kept apart, never trained on, to measure it.
public enum ForeignFonts {
    /// Fonts the classifier's "not OCR-B" examples are drawn in.
    public static let training = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Oblique.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansCondensed.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationMono-Bold.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf",
        "/usr/share/fonts/opentype/urw-base35/NimbusMonoPS-Regular.otf",
        "/usr/share/fonts/opentype/urw-base35/NimbusMonoPS-Bold.otf",
        "/usr/share/fonts/opentype/urw-base35/NimbusSans-Regular.otf",
        "/usr/share/fonts/opentype/urw-base35/NimbusSans-Bold.otf",
        "/usr/share/fonts/opentype/urw-base35/NimbusRoman-Regular.otf",
        "/usr/share/fonts/truetype/freefont/FreeMono.ttf",
        "/usr/share/fonts/truetype/freefont/FreeMonoBold.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    ]

    /// Fonts never trained on: the benchmark's look-alike-font tier draws its attacks in these.
    public static let heldOut = [
        "/usr/share/fonts/truetype/noto/NotoSansMono-Regular.ttf",
        "/usr/share/fonts/truetype/noto/NotoSansMono-Bold.ttf",
        "/usr/share/fonts/truetype/noto/NotoMono-Regular.ttf",
        "/usr/share/fonts/truetype/inconsolata/Inconsolata.otf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSansBold.ttf",
    ]

    /// The fonts of `paths` that are installed, loaded with the MRZ's characters.
    public static func load(_ paths: [String]) -> [GlyphFont] {
        paths.filter { FileManager.default.fileExists(atPath: $0) }.compactMap {
            try? GlyphFont(path: $0, pixelSize: 96, characters: PageRenderer.mrzCharacters)
        }
    }

    /// How alike two fonts draw `character`: the correlation of their glyphs drawn as the MRZ
    /// draws them (centred in the cell, capitals the same height), on a 24 × 30 grid slightly
    /// blurred. OCR-B's own regular and sharp cuts are at 1.0; a glyph of another font above
    /// `sameShape` is the same character to a reader and is taught as that character, one below
    /// it as "not OCR-B".
    public static func similarity(_ a: GlyphFont, _ b: GlyphFont, _ character: Character) -> Float {
        guard let x = raster(a, character), let y = raster(b, character) else { return 0 }
        return correlation(x, y)
    }

    public static let sameShape: Float = 0.9

    /// Capitals under this many pixels are where `resemblesAt` labels a foreign glyph: above it
    /// the 24 × 30 grid of `similarity` shows what a photo shows.
    public static let smallCapitals: Float = 12

    /// Whether `font`'s glyph of `character`, photographed with capitals `capPixels` tall, is
    /// OCR-B's `character` to a reader: on a grid of that many pixels (area-averaged, as a lens
    /// and a sensor average) it correlates with OCR-B's at least `sameShape`, and more than with
    /// any other OCR-B character's (at five pixels OCR-B's own `0`, `O` and `D` correlate over
    /// 0.9: a margin there would leave no `0` of any font OCR-B's). At five pixels other fonts' zeros — slashed, dotted
    /// or narrow — are OCR-B's plain oval, and real print's `0`s were taught "not OCR-B" by them:
    /// the training labels such a glyph as its character at that size (never as another one:
    /// a glyph nearer another OCR-B character, DejaVu's `6` to OCR-B's `G`, stays "not OCR-B").
    public static func resemblesAt(_ capPixels: Int, ocrb: GlyphFont, font: GlyphFont, _ character: Character) -> Bool {
        let cap = Float(max(3, capPixels))
        let width = max(3, Int((cap * 1.2).rounded())), height = max(3, Int((cap * 1.35).rounded()))
        guard let glyph = raster(font, character, width: width, height: height, samples: 8, blur: false),
              let own = raster(ocrb, character, width: width, height: height, samples: 8, blur: false) else { return false }
        let same = correlation(glyph, own)
        guard same >= sameShape else { return false }
        for other in PageRenderer.mrzCharacters where other != character {
            guard let rival = raster(ocrb, other, width: width, height: height, samples: 8, blur: false) else { continue }
            if correlation(glyph, rival) >= same { return false }
        }
        return true
    }

    static func correlation(_ x: [Float], _ y: [Float]) -> Float {
        let mx = x.reduce(0, +) / Float(x.count), my = y.reduce(0, +) / Float(y.count)
        var sxy: Float = 0, sxx: Float = 0, syy: Float = 0
        for (p, q) in zip(x, y) {
            sxy += (p - mx) * (q - my)
            sxx += (p - mx) * (p - mx)
            syy += (q - my) * (q - my)
        }
        return sxx > 0 && syy > 0 ? sxy / (sxx * syy).squareRoot() : 0
    }

    /// A glyph on the cell's grid: one advance-independent pitch (0.62 em of OCR-B's cap height
    /// × 1.2) wide, 1.35 cap heights tall, centred as `PageRenderer.drawGlyph` centres it;
    /// `samples` × `samples` points a grid cell, then (with `blur`) a light 3 × 3 blur.
    static func raster(_ font: GlyphFont, _ character: Character, width: Int = 24, height: Int = 30, samples: Int = 2,
                       blur: Bool = true) -> [Float]? {
        guard let glyph = font.glyph(character), font.capHeight > 0 else { return nil }
        let cap = Float(font.capHeight)
        let boxWidth = cap * 1.2, boxHeight = cap * 1.35
        var values = [Float](repeating: 0, count: width * height)
        // The cell's centre: the glyph's advance centre, half a cap height above the baseline.
        let centreX = Float(glyph.advance) / 2, centreY = -cap / 2
        let n = Float(samples)
        for gy in 0..<height {
            for gx in 0..<width {
                var sum: Float = 0
                for s in 0..<(samples * samples) {
                    let px = centreX + ((Float(gx) + (Float(s % samples) + 0.5) / n) / Float(width) - 0.5) * boxWidth
                    let py = centreY + ((Float(gy) + (Float(s / samples) + 0.5) / n) / Float(height) - 0.5) * boxHeight
                    // Bitmap coordinates: x from its left bearing, y down from its top.
                    let bx = Int(px - Float(glyph.left)), by = Int(Float(glyph.top) + py)
                    if bx >= 0, by >= 0, bx < glyph.width, by < glyph.height { sum += Float(glyph.coverage[by * glyph.width + bx]) / 255 }
                }
                values[gy * width + gx] = sum / (n * n)
            }
        }
        guard blur else { return values }
        // A light blur: a stroke a pixel off is the same stroke.
        var blurred = values
        for gy in 0..<height {
            for gx in 0..<width {
                var sum: Float = 0, n: Float = 0
                for dy in -1...1 {
                    for dx in -1...1 where gx + dx >= 0 && gx + dx < width && gy + dy >= 0 && gy + dy < height {
                        sum += values[(gy + dy) * width + gx + dx]
                        n += 1
                    }
                }
                blurred[gy * width + gx] = sum / n
            }
        }
        return blurred
    }
}
