extension OCRBGlyphs {
    /// One glyph's coverage (0…1), `width × height`, placed `left` right of the pen and `top`
    /// above the baseline; `advance` the monospaced pitch — all in the table's 64-px-em pixels.
    package struct Glyph: Sendable {
        package let width: Int
        package let height: Int
        package let left: Int
        package let top: Int
        package let advance: Float
        package let coverage: [Float]
    }

    package static let glyphs: [Character: Glyph] = {
        var result: [Character: Glyph] = [:]
        for (character, entry) in table {
            let bytes = Base64Floats.bytes(entry.5)
            guard bytes.count == entry.0 * entry.1 else { continue }
            result[character] = Glyph(width: entry.0, height: entry.1, left: entry.2, top: entry.3, advance: Float(entry.4),
                                      coverage: bytes.map { Float($0) / 255 })
        }
        return result
    }()

    /// Draws an MRZ line: each character centred in its cell of `pitch` pixels from `x`, capitals
    /// `capHeight` tall on `baseline`; `plot(x, y, coverage)` blends a pixel (3 × 3 samples each).
    package static func draw(_ line: String, x: Float, baseline: Float, capHeight: Float, pitch: Float,
                             plot: (Int, Int, Float) -> Void) {
        let scale = capHeight / OCRBGlyphs.capHeight
        for (index, character) in line.enumerated() {
            guard let glyph = glyphs[character] else { continue }
            let cellLeft = x + Float(index) * pitch + pitch / 2 - glyph.advance * scale / 2
            let originX = cellLeft + Float(glyph.left) * scale, originY = baseline - Float(glyph.top) * scale
            let x0 = Int(originX.rounded(.down)), y0 = Int(originY.rounded(.down))
            let x1 = Int((originX + Float(glyph.width) * scale).rounded(.up)), y1 = Int((originY + Float(glyph.height) * scale).rounded(.up))
            guard x0 < x1, y0 < y1 else { continue }
            for py in y0..<y1 {
                for px in x0..<x1 {
                    var sum: Float = 0
                    for sy in 0..<3 {
                        for sx in 0..<3 {
                            let gx = Int((Float(px) + (Float(sx) + 0.5) / 3 - originX) / scale)
                            let gy = Int((Float(py) + (Float(sy) + 0.5) / 3 - originY) / scale)
                            if gx >= 0, gy >= 0, gx < glyph.width, gy < glyph.height { sum += glyph.coverage[gy * glyph.width + gx] }
                        }
                    }
                    if sum > 0 { plot(px, py, sum / 9) }
                }
            }
        }
    }
}
