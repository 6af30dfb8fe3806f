import Foundation
import MRZ

/// A synthetic data page: a tinted card with guilloche, a photo, labelled fields in a sans font,
/// and the MRZ in OCR-B at ICAO's pitch (10 characters an inch) — drawn at `pixelsPerMM`.
public struct PageRenderer: Sendable {
    public struct Page {
        public var image: FloatImage
        /// Where each MRZ character's cell centre is, line by line, in page pixels.
        public var cellCentres: [[(x: Float, y: Float)]]
        /// The MRZ's cap height in page pixels.
        public var capHeight: Float
    }

    let ocrb: GlyphFont
    let sans: GlyphFont
    let sansBold: GlyphFont

    public static let mrzCharacters = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ<"

    public init(ocrbPath: String = GlyphFont.ocrbPaths[0]) throws {
        ocrb = try GlyphFont(path: ocrbPath, pixelSize: 96, characters: Self.mrzCharacters)
        let text = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 /.-:,'"
        sans = try GlyphFont(path: GlyphFont.sansPath, pixelSize: 64, characters: text)
        sansBold = try GlyphFont(path: GlyphFont.sansBoldPath, pixelSize: 64, characters: text)
    }

    /// The card's size (ID-1, ID-2, ID-3) in millimetres, the MRZ's left margin, line pitch and
    /// the last line's baseline above the bottom edge.
    static func geometry(_ format: MRZFormat) -> (width: Float, height: Float, left: Float, linePitch: Float, bottom: Float) {
        switch format {
        case .td1: return (85.6, 54, 3.2, 3.6, 3.4)
        case .td2, .mrvB: return (105, 74, 6, 4.2, 5.2)
        case .td3, .mrvA: return (125, 88, 6, 4.2, 5.6)
        }
    }

    /// Draws the page of `sample` with the generator's choices of colours, ink and pitch jitter.
    /// `foreign[line][position]`, where given, draws that character in another font (a glyph made
    /// to fool a reader: the look-alike-font attacks, and the classifier's "not OCR-B" examples).
    public func render(_ sample: MRZSample, pixelsPerMM: Float, patternUnderMRZ: Bool, foreign: [[GlyphFont?]]? = nil,
                       generator: inout some RandomNumberGenerator) -> Page {
        let g = Self.geometry(sample.format)
        let width = Int((g.width * pixelsPerMM).rounded()), height = Int((g.height * pixelsPerMM).rounded())
        func random(_ range: ClosedRange<Float>) -> Float { Float.random(in: range, using: &generator) }
        let tint = (random(0.86...0.98), random(0.86...0.98), random(0.84...0.96))
        var image = FloatImage(width: width, height: height, fill: tint)
        // Guilloche: fine sinusoidal lines over the page (and the MRZ band when asked).
        let lineColour = (random(0.55...0.85), random(0.55...0.85), random(0.6...0.9))
        let mrzTop = height - Int((g.bottom + g.linePitch * Float(sample.format.lineCount) + 1) * pixelsPerMM)
        let waves = Int(random(6...14))
        for wave in 0..<waves {
            let amplitude = random(2...8) * pixelsPerMM, period = random(12...40) * pixelsPerMM, phase = random(0...6.28)
            let base = Float(wave) / Float(waves) * Float(height)
            for x in 0..<width {
                let y = base + amplitude * sin(Float(x) / period * 6.283 + phase)
                let row = Int(y)
                guard row >= 0, row < height, patternUnderMRZ || row < mrzTop else { continue }
                image.blend(x, row, lineColour, 0.35)
            }
        }
        // Header band, photo, fields.
        let header = (random(0.1...0.5), random(0.15...0.4), random(0.3...0.6))
        image.fillRect(0, 0, width, Int(8 * pixelsPerMM), header, alpha: 0.85)
        drawText(&image, "UTOPIA  PASSPORT  PASS", font: sansBold, x: 4 * pixelsPerMM, baseline: 6 * pixelsPerMM, height: 3.2 * pixelsPerMM,
                 colour: (1, 1, 1))
        // The photo, clear of the MRZ (a TD1 card's back has a smaller one, or none).
        let photoTop = 11 * pixelsPerMM
        let photoH = min((sample.format == .td1 ? 22 : 32) * pixelsPerMM * 1.28, Float(mrzTop) - photoTop - 2 * pixelsPerMM)
        let photoW = photoH / 1.28
        let clip = (Int(4 * pixelsPerMM), Int(photoTop), Int(photoW), Int(photoH))
        image.fillRect(clip.0, clip.1, clip.2, clip.3, (random(0.6...0.8), random(0.65...0.8), random(0.7...0.85)))
        image.fillEllipse(cx: 4 * pixelsPerMM + photoW / 2, cy: photoTop + photoH * 0.42, rx: photoW * 0.28, ry: photoH * 0.26,
                          (random(0.55...0.8), random(0.4...0.6), random(0.3...0.5)), clip: clip)
        image.fillEllipse(cx: 4 * pixelsPerMM + photoW / 2, cy: photoTop + photoH * 1.05, rx: photoW * 0.5, ry: photoH * 0.4,
                          (random(0.1...0.3), random(0.1...0.3), random(0.2...0.4)), clip: clip)
        let fieldX = 8 * pixelsPerMM + photoW
        let labels = ["Surname / Nom", "Given names / Prenoms", "Nationality", "Date of birth", "Sex", "Date of expiry", "Document no"]
        let nameLine = sample.lines[sample.format == .td1 ? 2 : 0]
        let names = (sample.format == .td1 ? nameLine : String(nameLine.dropFirst(5))).components(separatedBy: "<<")
        let values = [names.first?.replacingOccurrences(of: "<", with: " ") ?? "", names.dropFirst().first?.replacingOccurrences(of: "<", with: " ") ?? "",
                      "UTOPIAN", sample.dateOfBirth, "F", sample.dateOfExpiry, sample.documentNumber]
        let rowHeight = (sample.format == .td1 ? 4.4 : 6.2) * pixelsPerMM
        for (index, label) in labels.enumerated() {
            let y = 12 * pixelsPerMM + Float(index) * rowHeight
            guard y + rowHeight < Float(mrzTop) else { break }
            drawText(&image, label, font: sans, x: fieldX, baseline: y, height: 1.6 * pixelsPerMM, colour: (0.35, 0.35, 0.4))
            drawText(&image, values[index], font: sansBold, x: fieldX, baseline: y + 2.8 * pixelsPerMM, height: 2.4 * pixelsPerMM,
                     colour: (0.1, 0.1, 0.15))
        }
        // The MRZ: OCR-B, cap height ~2.3 mm, 2.54 mm pitch (with the printer's few per cent).
        let ink = (random(0...0.12), random(0...0.12), random(0...0.2))
        let pitch = 2.54 * random(0.98...1.02) * pixelsPerMM
        let cap = random(2.1...2.45) * pixelsPerMM
        var centres: [[(x: Float, y: Float)]] = []
        for (index, line) in sample.lines.enumerated() {
            let baseline = Float(height) - (g.bottom + g.linePitch * Float(sample.lines.count - 1 - index)) * pixelsPerMM
            let left = g.left * pixelsPerMM
            var lineCentres: [(x: Float, y: Float)] = []
            for (position, character) in line.enumerated() {
                let centreX = left + (Float(position) + 0.5) * pitch
                let font = foreign.flatMap { index < $0.count && position < $0[index].count ? $0[index][position] : nil } ?? ocrb
                drawGlyph(&image, character, font: font, centreX: centreX, baseline: baseline, capHeight: cap, colour: ink)
                lineCentres.append((centreX, baseline - cap / 2))
            }
            centres.append(lineCentres)
        }
        return Page(image: image, cellCentres: centres, capHeight: cap)
    }

    /// Draws `text` in DejaVu Sans Bold along the line from `from` towards `towards` (frame
    /// coordinates), capitals `capHeight` tall: text printed across an MRZ.
    public func drawOver(_ image: inout FloatImage, _ text: String, from: (Float, Float), towards: (Float, Float), capHeight: Float,
                         colour: (Float, Float, Float)) {
        let dx = towards.0 - from.0, dy = towards.1 - from.1
        let length = (dx * dx + dy * dy).squareRoot()
        guard length > 0 else { return }
        let (ux, uy) = (dx / length, dy / length)
        let scale = capHeight / Float(sansBold.capHeight)
        var pen: Float = 0
        for character in text {
            guard let glyph = sansBold.glyph(character) else { pen += capHeight * 0.5; continue }
            // Each glyph pixel placed along the line (nearest neighbour, 2 × 2 per source pixel).
            for gy in 0..<glyph.height {
                for gx in 0..<glyph.width {
                    let coverage = Float(glyph.coverage[gy * glyph.width + gx]) / 255
                    guard coverage > 0.05 else { continue }
                    for s in 0..<4 {
                        let lx = pen + (Float(glyph.left + gx) + Float(s % 2) * 0.5) * scale
                        let ly = (Float(gy - glyph.top) + Float(s / 2) * 0.5) * scale + capHeight / 2
                        let x = Int(from.0 + lx * ux - ly * uy), y = Int(from.1 + lx * uy + ly * ux)
                        if x >= 0, y >= 0, x < image.width, y < image.height { image.blend(x, y, colour, coverage * 0.7) }
                    }
                }
            }
            pen += Float(glyph.advance) * scale
        }
    }

    /// Draws `text` left to right from `x` on `baseline`, scaled so capitals are `height` tall.
    func drawText(_ image: inout FloatImage, _ text: String, font: GlyphFont, x: Float, baseline: Float, height: Float, colour: (Float, Float, Float)) {
        let scale = height / Float(font.capHeight)
        var pen = x
        for character in text {
            guard let glyph = font.glyph(character) else { pen += height * 0.5; continue }
            composite(&image, glyph, originX: pen + Float(glyph.left) * scale, originY: baseline - Float(glyph.top) * scale, scale: scale, colour: colour)
            pen += Float(glyph.advance) * scale
        }
    }

    /// One OCR-B character centred on `centreX` in its cell.
    func drawGlyph(_ image: inout FloatImage, _ character: Character, font: GlyphFont, centreX: Float, baseline: Float, capHeight: Float,
                   colour: (Float, Float, Float)) {
        guard let glyph = font.glyph(character) else { return }
        let scale = capHeight / Float(font.capHeight)
        // Monospaced: the glyph's bitmap sits in its advance box as the font places it.
        let cellLeft = centreX - Float(glyph.advance) * scale / 2
        composite(&image, glyph, originX: cellLeft + Float(glyph.left) * scale, originY: baseline - Float(glyph.top) * scale, scale: scale, colour: colour)
    }

    /// Blends a glyph's coverage, resampled by `scale` (3 × 3 samples a pixel), at the origin.
    func composite(_ image: inout FloatImage, _ glyph: GlyphFont.Glyph, originX: Float, originY: Float, scale: Float, colour: (Float, Float, Float)) {
        guard glyph.width > 0, glyph.height > 0 else { return }
        let x0 = Int(originX.rounded(.down)), y0 = Int(originY.rounded(.down))
        let x1 = Int((originX + Float(glyph.width) * scale).rounded(.up)), y1 = Int((originY + Float(glyph.height) * scale).rounded(.up))
        for y in max(0, y0)..<min(image.height, y1) {
            for x in max(0, x0)..<min(image.width, x1) {
                var sum: Float = 0
                for sy in 0..<3 {
                    for sx in 0..<3 {
                        let gx = Int(((Float(x) + (Float(sx) + 0.5) / 3) - originX) / scale)
                        let gy = Int(((Float(y) + (Float(sy) + 0.5) / 3) - originY) / scale)
                        if gx >= 0, gy >= 0, gx < glyph.width, gy < glyph.height { sum += Float(glyph.coverage[gy * glyph.width + gx]) }
                    }
                }
                image.blend(x, y, colour, sum / (9 * 255))
            }
        }
    }
}
