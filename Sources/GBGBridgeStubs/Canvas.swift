import MRZ

/// A small RGB raster for drawing stub images: rectangles, ellipses, gradients and 5×7 bitmap text.
struct Canvas {
    typealias Color = (r: UInt8, g: UInt8, b: UInt8)

    let width: Int
    let height: Int
    private(set) var pixels: [UInt8]

    init(width: Int, height: Int, fill: Color) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        for i in stride(from: 0, to: pixels.count, by: 3) {
            pixels[i] = fill.r; pixels[i + 1] = fill.g; pixels[i + 2] = fill.b
        }
    }

    mutating func set(_ x: Int, _ y: Int, _ color: Color) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        let i = (y * width + x) * 3
        pixels[i] = color.r; pixels[i + 1] = color.g; pixels[i + 2] = color.b
    }

    /// Blends `color` over the pixel by `alpha` (0…1).
    mutating func blend(_ x: Int, _ y: Int, _ color: Color, _ alpha: Float) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        let i = (y * width + x) * 3
        func mix(_ a: UInt8, _ b: UInt8) -> UInt8 { UInt8(max(0, min(255, (Float(a) + (Float(b) - Float(a)) * alpha).rounded()))) }
        pixels[i] = mix(pixels[i], color.r); pixels[i + 1] = mix(pixels[i + 1], color.g); pixels[i + 2] = mix(pixels[i + 2], color.b)
    }

    /// An MRZ line in OCR-B at ICAO's fixed pitch (what a reader of the page expects to find).
    mutating func mrz(_ line: String, _ x: Int, baseline: Int, capHeight: Float, pitch: Float, _ color: Color) {
        OCRBGlyphs.draw(line, x: Float(x), baseline: Float(baseline), capHeight: capHeight, pitch: pitch) { px, py, coverage in
            blend(px, py, color, coverage)
        }
    }

    mutating func rect(_ x: Int, _ y: Int, _ w: Int, _ h: Int, _ color: Color) {
        for yy in max(0, y)..<min(height, y + h) {
            for xx in max(0, x)..<min(width, x + w) { set(xx, yy, color) }
        }
    }

    /// A rectangle with corners of radius `r`.
    mutating func roundedRect(_ x: Int, _ y: Int, _ w: Int, _ h: Int, radius r: Int, _ color: Color) {
        for yy in y..<(y + h) {
            for xx in x..<(x + w) {
                let dx = xx < x + r ? x + r - xx : xx >= x + w - r ? xx - (x + w - r - 1) : 0
                let dy = yy < y + r ? y + r - yy : yy >= y + h - r ? yy - (y + h - r - 1) : 0
                if dx * dx + dy * dy <= r * r { set(xx, yy, color) }
            }
        }
    }

    /// A filled ellipse centred at (cx, cy), optionally only where `clip` allows.
    mutating func ellipse(_ cx: Int, _ cy: Int, _ rx: Int, _ ry: Int, _ color: Color, clip: ((Int, Int) -> Bool)? = nil) {
        guard rx > 0, ry > 0 else { return }
        for yy in (cy - ry)...(cy + ry) {
            for xx in (cx - rx)...(cx + rx) {
                let nx = Double(xx - cx) / Double(rx), ny = Double(yy - cy) / Double(ry)
                if nx * nx + ny * ny <= 1, clip?(xx, yy) ?? true { set(xx, yy, color) }
            }
        }
    }

    /// A vertical gradient from `top` to `bottom` over the rectangle.
    mutating func verticalGradient(_ x: Int, _ y: Int, _ w: Int, _ h: Int, top: Color, bottom: Color) {
        for yy in 0..<h {
            let t = Double(yy) / Double(max(1, h - 1))
            func mix(_ a: UInt8, _ b: UInt8) -> UInt8 { UInt8(Double(a) + (Double(b) - Double(a)) * t) }
            rect(x, y + yy, w, 1, (mix(top.r, bottom.r), mix(top.g, bottom.g), mix(top.b, bottom.b)))
        }
    }

    /// Text in the 5×7 font, each dot `scale` pixels; returns the width drawn.
    @discardableResult
    mutating func text(_ string: String, _ x: Int, _ y: Int, scale: Int, _ color: Color, spacing: Int = 1) -> Int {
        var cursor = x
        for character in string.uppercased() {
            let rows = Font5x7.glyph(character)
            for (row, bits) in rows.enumerated() {
                for column in 0..<5 where bits & (0x10 >> UInt8(column)) != 0 {
                    rect(cursor + column * scale, y + row * scale, scale, scale, color)
                }
            }
            cursor += (5 + spacing) * scale
        }
        return cursor - x
    }

    static func textWidth(_ string: String, scale: Int, spacing: Int = 1) -> Int { string.count * (5 + spacing) * scale }
}

/// A 5×7 dot font for A–Z, 0–9 and the MRZ filler, one byte per row (bit 4 = leftmost dot).
enum Font5x7 {
    static let glyphs: [Character: [UInt8]] = [
        "A": [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11], "B": [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        "C": [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E], "D": [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
        "E": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F], "F": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        "G": [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F], "H": [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        "I": [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E], "J": [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        "K": [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11], "L": [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        "M": [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11], "N": [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        "O": [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E], "P": [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        "Q": [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D], "R": [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        "S": [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E], "T": [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        "U": [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E], "V": [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        "W": [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A], "X": [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        "Y": [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04], "Z": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        "0": [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E], "1": [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "2": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F], "3": [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        "4": [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02], "5": [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        "6": [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E], "7": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        "8": [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E], "9": [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        "<": [0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02], "/": [0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00],
        "-": [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00], ".": [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
    ]

    static func glyph(_ character: Character) -> [UInt8] { glyphs[character] ?? [0, 0, 0, 0, 0, 0, 0] }
}
