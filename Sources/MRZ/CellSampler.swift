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
        normalized(cells.map { raw(image, $0) })
    }

    /// The cells of a line sampled once: normalized for the classifier, and each cell's contrast
    /// over the line's median (0 for a cell the photo does not hold whole).
    static func sampleAndContrast(_ image: GrayImage, _ cells: [CellGeometry.Cell]) -> (samples: [[Float]], contrast: [Float]) {
        let line = sampleAndContrast(image, cells, raw: cells.map { Self.raw(image, $0) })
        return (line.samples, line.contrast)
    }

    /// The same from the cells' raw grey values (`raw`, one a cell), with each cell's ink and paper levels.
    static func sampleAndContrast(_ image: GrayImage, _ cells: [CellGeometry.Cell], raw: [[Float]])
        -> (samples: [[Float]], contrast: [Float], levels: [(ink: Float, paper: Float)]) {
        let levels = self.levels(raw)
        let samples = raw.indices.map { normalize(raw[$0], levels[$0]) }
        return (samples, zip(cells, contrastRatios(raw: raw)).map { cell, ratio in inside(image, cell) ? ratio : 0 }, levels)
    }

    static func normalized(_ raw: [[Float]]) -> [[Float]] {
        let levels = self.levels(raw)
        return raw.indices.map { normalize(raw[$0], levels[$0]) }
    }

    /// The line's cap height measured where the ink is half-way between paper and its darkest:
    /// each cell's profile across the line (the darkest along a band of 0.7 pitch, so a stem or a
    /// side counts fully), its extent above half its depth; the upper median of the cells whose
    /// extent is near the tallest (`<` is shorter). Blob heights, from a threshold against the
    /// local mean, take in the blur's skirt: at 12–20-pixel capitals under blur they were 10–30 %
    /// tall, and every cell was sampled too large. Nil when the line shows no clear extent.
    static func measuredCapHeight(_ image: GrayImage, _ cells: [CellGeometry.Cell]) -> Float? {
        var extents: [Float] = []
        // Every other cell, at most 81 rows by 20 columns each: a bounded cost at any size.
        for cell in stride(from: 0, to: cells.count, by: 2).map({ cells[$0] }) {
            let across = (x: -cell.along.y, y: cell.along.x)
            let reach = cell.capHeight * 0.9, step = max(0.5, reach / 40)
            let rows = Int(2 * reach / step) + 1
            let columns = min(20, max(3, Int(0.7 * cell.pitch)))
            var darkest = [Float](repeating: 255, count: rows)
            for row in 0..<rows {
                let v = -reach + Float(row) * step
                for column in 0..<columns {
                    let u = (Float(column) / Float(columns - 1) - 0.5) * 0.7 * cell.pitch
                    let value = image.sample(cell.x + cell.along.x * u + across.x * v, cell.y + cell.along.y * u + across.y * v)
                    darkest[row] = min(darkest[row], value)
                }
            }
            let paper = max(darkest[0], darkest[rows - 1]), ink = darkest.min() ?? paper
            guard paper - ink > 24 else { continue }
            let half = (paper + ink) / 2
            guard let first = darkest.firstIndex(where: { $0 < half }), let last = darkest.lastIndex(where: { $0 < half }) else { continue }
            // Sub-pixel: where the profile crosses half-way on each side.
            func crossing(_ outside: Int, _ inside: Int) -> Float {
                let a = darkest[outside], b = darkest[inside]
                return Float(outside) + (a - half) / max(a - b, 1e-3) * Float(inside - outside)
            }
            let top = first > 0 ? crossing(first - 1, first) : Float(first)
            let bottom = last < rows - 1 ? crossing(last + 1, last) : Float(last)
            extents.append((bottom - top) * step)
        }
        guard extents.count >= max(4, cells.count / 8), let tallest = extents.sorted().dropLast(extents.count / 10).last else { return nil }
        let capitals = extents.filter { $0 > 0.75 * tallest }.sorted()
        // Half-depth cuts into the horizontal strokes at the top and bottom (blurred, they are
        // paler than a stem): the extent is 0.93 of the cap height on the corpus, at every tier.
        return capitals.isEmpty ? nil : capitals[capitals.count / 2] / 0.93
    }

    /// Whether a cell's character lies in the image: the glyph's box (OCR-B's characters are about
    /// 0.8 of the pitch wide and one cap height tall) less a tenth of it each way, since the
    /// locator's cells are that far off at times, and a photo cropped tight round the zone must
    /// still read. Half a glyph out of the frame is what is refused.
    static func inside(_ image: GrayImage, _ cell: CellGeometry.Cell) -> Bool {
        let across = (x: -cell.along.y, y: cell.along.x)
        let halfAlong = cell.pitch * 0.32, halfAcross = cell.capHeight * 0.4
        let frame = image.content
        for (a, b) in [(-1, -1), (-1, 1), (1, -1), (1, 1)] as [(Float, Float)] {
            let x = cell.x + cell.along.x * a * halfAlong + across.x * b * halfAcross
            let y = cell.y + cell.along.y * a * halfAlong + across.y * b * halfAcross
            guard x >= Float(frame.x) - 1, y >= Float(frame.y) - 1, x <= Float(frame.x + frame.width) + 1, y <= Float(frame.y + frame.height) + 1 else { return false }
        }
        return true
    }

    /// Cells whose own contrast is under a quarter of the line's median: washed out by glare, a
    /// reflection or a stain. What the classifier says of them does not earn `valid` (a `<` under
    /// glare read as a confident `K`). Thin glyphs (`<`, `1`) at 12 pixels already fall under half.
    static func faint(_ image: GrayImage, _ cells: [CellGeometry.Cell]) -> [Bool] {
        faint(image, cells, raw: cells.map { raw(image, $0) })
    }

    /// `faint` with the cells' grey values already sampled (`raw`, in the order of `cells`).
    static func faint(_ image: GrayImage, _ cells: [CellGeometry.Cell], raw: [[Float]]) -> [Bool] {
        zip(cells, contrastRatios(raw: raw)).map { cell, ratio in ratio < faintRatio || !inside(image, cell) }
    }

    /// Under this contrast (over the line's median) a cell is faint.
    static let faintRatio: Float = 0.25

    /// Each cell's own contrast over the line's median.
    package static func contrastRatios(_ image: GrayImage, _ cells: [CellGeometry.Cell]) -> [Float] {
        contrastRatios(raw: cells.map { raw(image, $0) })
    }

    static func contrastRatios(raw: [[Float]]) -> [Float] {
        let contrasts = raw.map { values -> Float in
            let sorted = values.sorted()
            return sorted[size * 19 / 20] - sorted[size / 32]
        }
        let median = contrasts.sorted()[contrasts.count / 2]
        // A line with no contrast at all (a blank) has no faint cell in it.
        return median > 0 ? contrasts.map { $0 / median } : contrasts.map { _ in 1 }
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

    /// Ink and paper for each cell. Paper: the brightest of it and its neighbours (a stain or a
    /// shadow does not pass for paper). Ink: the cell's own darkest, so that a character under
    /// glare — light blended over it, its strokes grey — is drawn darker; but stretched at most
    /// twice (the ink level at least half-way from paper to the neighbours' darkest): stretched
    /// up to five times, a washed-out `F` came out as dark as a clear `Y` and read so, and with a
    /// neighbour's misreading compensated in a check digit (Docs/mrz.md). A cell of a filler's
    /// thin strokes is measured by its darkest few pixels, not by the quantile a bolder glyph fills.
    static func levels(_ raw: [[Float]]) -> [(ink: Float, paper: Float)] {
        let own = raw.map { values -> (ink: Float, paper: Float) in
            let sorted = values.sorted()
            return (sorted[size / 40], sorted[size * 19 / 20])
        }
        return raw.indices.map { index in
            let window = max(0, index - 2)...min(raw.count - 1, index + 2)
            let paper = window.map { own[$0].paper }.max() ?? 255
            let neighbours = window.map { own[$0].ink }.min() ?? 0
            return (min(own[index].ink, paper - 0.5 * (paper - neighbours)), paper)
        }
    }

    static func normalize(_ raw: [Float], _ level: (ink: Float, paper: Float)) -> [Float] {
        let range = max(level.paper - level.ink, 16)
        return raw.map { min(1, max(0, (level.paper - $0) / range)) }
    }
}
