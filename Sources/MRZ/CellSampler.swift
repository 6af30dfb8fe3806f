/// Each MRZ cell resampled upright into a small grid (16 × 20), whatever the photo's rotation,
/// perspective or scale, with ink 1 and paper 0 as the neighbouring cells measure them — the
/// classifier's input.
package enum CellSampler {
    package static let width = 16
    package static let height = 20
    package static let size = width * height
    /// The sampled box: one pitch wide, this many cap heights tall, centred on the cell.
    static let heightInCaps: Float = 1.35

    /// The cells of a line, normalized as a whole (`[cell][pixel]`).
    package static func sample(_ image: GrayImage, _ cells: [CellGeometry.Cell]) -> [[Float]] {
        let raw = cells.map { Self.raw(image, $0) }
        let levels = self.levels(raw)
        return raw.indices.map { normalize(raw[$0], levels[$0]) }
    }

    /// Whether a cell's character lies in the image: the glyph's box (OCR-B's characters are about
    /// 0.8 of the pitch wide and one cap height tall) less a tenth of it each way, since the
    /// locator's cells are that far off at times, and a photo cropped tight round the zone must
    /// still read. Half a glyph out of the frame is what is refused.
    static func inside(_ image: GrayImage, _ cell: CellGeometry.Cell) -> Bool {
        let across = (x: -cell.along.y, y: cell.along.x)
        let halfAlong = cell.pitch * 0.32, halfAcross = cell.capHeight * 0.4
        for (a, b) in [(-1, -1), (-1, 1), (1, -1), (1, 1)] as [(Float, Float)] {
            let x = cell.x + cell.along.x * a * halfAlong + across.x * b * halfAcross
            let y = cell.y + cell.along.y * a * halfAlong + across.y * b * halfAcross
            guard x >= -1, y >= -1, x <= Float(image.width) + 1, y <= Float(image.height) + 1 else { return false }
        }
        return true
    }

    /// Cells whose own contrast is under a quarter of the line's median: washed out by glare, a
    /// reflection or a stain. What the classifier says of them does not earn `valid` (a `<` under
    /// glare read as a confident `K`). Thin glyphs (`<`, `1`) at 12 pixels already fall under half.
    static func faint(_ image: GrayImage, _ cells: [CellGeometry.Cell]) -> [Bool] {
        let contrasts = cells.map { cell -> Float in
            let sorted = raw(image, cell).sorted()
            return sorted[size * 19 / 20] - sorted[size / 32]
        }
        let median = contrasts.sorted()[contrasts.count / 2]
        return zip(cells, contrasts).map { cell, contrast in contrast < 0.25 * median || !inside(image, cell) }
    }

    /// One cell's grey values, resampled upright.
    static func raw(_ image: GrayImage, _ cell: CellGeometry.Cell) -> [Float] {
        let across = (x: -cell.along.y, y: cell.along.x)
        let boxWidth = cell.pitch, boxHeight = cell.capHeight * heightInCaps
        let step = max(boxWidth / Float(width), boxHeight / Float(height))
        let supersample = min(3, max(1, Int((step / 1.2).rounded(.up))))
        var values = [Float](repeating: 0, count: size)
        for gy in 0..<height {
            for gx in 0..<width {
                var sum: Float = 0
                for sy in 0..<supersample {
                    for sx in 0..<supersample {
                        let fu = (Float(gx) + (Float(sx) + 0.5) / Float(supersample)) / Float(width) - 0.5
                        let fv = (Float(gy) + (Float(sy) + 0.5) / Float(supersample)) / Float(height) - 0.5
                        let x = cell.x + cell.along.x * fu * boxWidth + across.x * fv * boxHeight
                        let y = cell.y + cell.along.y * fu * boxWidth + across.y * fv * boxHeight
                        sum += image.sample(x, y)
                    }
                }
                values[gy * width + gx] = sum / Float(supersample * supersample)
            }
        }
        return values
    }

    /// Ink and paper for each cell, from it and its neighbours (a cell of fillers has little ink).
    static func levels(_ raw: [[Float]]) -> [(ink: Float, paper: Float)] {
        let own = raw.map { values -> (ink: Float, paper: Float) in
            let sorted = values.sorted()
            return (sorted[size / 12], sorted[size * 19 / 20])
        }
        return raw.indices.map { index in
            let window = max(0, index - 2)...min(raw.count - 1, index + 2)
            return (window.map { own[$0].ink }.min() ?? 0, window.map { own[$0].paper }.max() ?? 255)
        }
    }

    static func normalize(_ raw: [Float], _ level: (ink: Float, paper: Float)) -> [Float] {
        let range = max(level.paper - level.ink, 16)
        return raw.map { min(1, max(0, (level.paper - $0) / range)) }
    }
}
