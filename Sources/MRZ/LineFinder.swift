#if canImport(Glibc)
import Glibc
#endif

/// Lines of characters among the dark blobs: the dominant text direction (a histogram of the
/// directions between neighbouring character-sized blobs, modulo 180°), then chains of blobs that
/// follow it at a regular spacing, cut where a gap is wider than the text's pitch allows.
struct TextLine: Sendable {
    /// The blobs in reading order (along `direction`), as box centres and heights.
    let points: [(x: Float, y: Float, width: Float, height: Float)]
    /// Unit vector along the line (the direction of the dominant angle; reading may be reversed).
    let direction: (x: Float, y: Float)
    /// The typical height of the line's capitals: the upper median of its blobs' heights.
    let capHeight: Float
    /// Median distance between neighbours along the line.
    let spacing: Float
    /// The height of its tallest characters (nine tenths up its blobs' heights): what two lines of
    /// one zone share. `capHeight` is a filler's in a names line that is mostly `<`.
    let tallHeight: Float

    /// Both figures are worked out once here: rejoining pieces looks at them for every pair of
    /// neighbouring pieces, and a noise photo has tens of thousands of pieces.
    init(points: [(x: Float, y: Float, width: Float, height: Float)], direction: (x: Float, y: Float)) {
        self.points = points
        self.direction = direction
        let heights = points.map(\.height).sorted()
        capHeight = heights.isEmpty ? 0 : heights[min(heights.count - 1, heights.count * 2 / 3)]
        tallHeight = heights.isEmpty ? 0 : heights[min(heights.count - 1, heights.count * 9 / 10)]
        let alongs = points.map { $0.x * direction.x + $0.y * direction.y }
        let gaps = zip(alongs, alongs.dropFirst()).map { $1 - $0 }.sorted()
        spacing = gaps.isEmpty ? 0 : gaps[gaps.count / 2]
    }

    var count: Int { points.count }

    func along(_ point: (x: Float, y: Float, width: Float, height: Float)) -> Float { point.x * direction.x + point.y * direction.y }
    func across(_ point: (x: Float, y: Float, width: Float, height: Float)) -> Float { -point.x * direction.y + point.y * direction.x }
}

enum LineFinder {
    /// The blobs that could be characters: at most three fifths of the image's height (a photo of
    /// the MRZ lines alone, cropped tight, has its capitals at a third of it; a fifth, the old
    /// bound, found nothing there).
    static func characters(_ components: [Component], imageHeight: Int) -> [Component] {
        components.filter { c in
            let h = c.height, w = c.width
            guard h >= 4, h <= max(12, imageHeight * 3 / 5), w <= h * 3 + 4, c.count >= 4 else { return false }
            let fill = Float(c.count) / Float(w * h)
            return fill > 0.06 && fill < 0.97
        }
    }

    /// The dominant direction between neighbouring blobs of about the same size, in radians
    /// (0 ≤ θ < π), with how strongly it dominates (its share of the votes). Each blob's vote
    /// weighs as much as the blob is tall: a halftone screen's dots, ten for each character,
    /// outvoted the characters of a page stored on its side when every vote counted alike
    /// (Docs/mrz.md, "A halftone's dots and the text's direction").
    static func dominantAngle(_ blobs: [Component]) -> (angle: Float, share: Float) {
        let grid = Grid(blobs)
        var histogram = [Float](repeating: 0, count: 180)
        for (index, a) in blobs.enumerated() {
            let h = Float(a.height)
            var best: (distance: Float, angle: Float)?
            for other in grid.near(a.boxCentreX, a.boxCentreY, radius: 2 * h) where other != index {
                let b = blobs[other]
                let ratio = Float(b.height) / h
                guard ratio > 0.7, ratio < 1.43 else { continue }
                let dx = b.boxCentreX - a.boxCentreX, dy = b.boxCentreY - a.boxCentreY
                let distance = (dx * dx + dy * dy).squareRoot()
                guard distance > 0.5 * h, distance < 1.9 * h else { continue }
                if best == nil || distance < best?.distance ?? .infinity {
                    var angle = atan2(dy, dx)
                    if angle < 0 { angle += .pi }
                    if angle >= .pi { angle -= .pi }
                    best = (distance, angle)
                }
            }
            if let best { histogram[min(179, Int(best.angle / .pi * 180))] += h }
        }
        // Smoothed over ±3°, circularly.
        var smoothed = [Float](repeating: 0, count: 180)
        for bin in 0..<180 {
            for d in -3...3 { smoothed[bin] += histogram[(bin + d + 180) % 180] * Float(4 - abs(d)) }
        }
        let total = histogram.reduce(0, +)
        guard let peak = smoothed.indices.max(by: { smoothed[$0] < smoothed[$1] }), total > 0 else { return (0, 0) }
        // Refine: the weighted mean angle of the votes within ±4° of the peak.
        var sum: Float = 0, weight: Float = 0
        for d in -4...4 {
            let bin = (peak + d + 180) % 180
            sum += (Float(peak + d) + 0.5) * histogram[bin]
            weight += histogram[bin]
        }
        var angle = (weight > 0 ? sum / weight : Float(peak) + 0.5) * .pi / 180
        if angle < 0 { angle += .pi }
        if angle >= .pi { angle -= .pi }
        return (angle, (smoothed[peak] / 16) / total)
    }

    /// Chains of blobs along `angle`: each blob linked to its nearest neighbour ahead that sits on
    /// the same line and is of a size that could share it; chains cut at gaps.
    static func lines(_ blobs: [Component], angle: Float) -> [TextLine] {
        let direction = (x: cos(angle), y: sin(angle))
        let grid = Grid(blobs)
        func u(_ c: Component) -> Float { c.boxCentreX * direction.x + c.boxCentreY * direction.y }
        func v(_ c: Component) -> Float { -c.boxCentreX * direction.y + c.boxCentreY * direction.x }
        var successor = [Int](repeating: -1, count: blobs.count)
        var predecessorCost = [Float](repeating: .infinity, count: blobs.count)
        var predecessor = [Int](repeating: -1, count: blobs.count)
        for (index, a) in blobs.enumerated() {
            let h = Float(max(a.height, a.width / 2))
            var best: (index: Int, cost: Float)?
            for other in grid.near(a.boxCentreX, a.boxCentreY, radius: 2.4 * h) where other != index {
                let b = blobs[other]
                let du = u(b) - u(a), dv = abs(v(b) - v(a))
                let ratio = Float(b.height) / Float(a.height)
                guard du > 0.3 * h, du < 2.3 * h, ratio > 0.4, ratio < 2.5 else { continue }
                // Same line: the centres' offset across it small (a `<` sits mid-height, so does a capital).
                guard dv < 0.3 * Float(max(a.height, b.height)) + 0.12 * du else { continue }
                let cost = du + 3 * dv
                if best == nil || cost < best?.cost ?? .infinity { best = (other, cost) }
            }
            guard let best else { continue }
            if best.cost < predecessorCost[best.index] {
                if predecessor[best.index] >= 0 { successor[predecessor[best.index]] = -1 }
                predecessor[best.index] = index
                predecessorCost[best.index] = best.cost
                successor[index] = best.index
            }
        }
        var lines: [TextLine] = []
        for start in blobs.indices where predecessor[start] < 0 && successor[start] >= 0 {
            var chain: [Int] = [start]
            var current = start
            while successor[current] >= 0, chain.count < 200 {
                current = successor[current]
                chain.append(current)
            }
            let points = chain.map { i in (x: blobs[i].boxCentreX, y: blobs[i].boxCentreY, width: Float(blobs[i].width), height: Float(blobs[i].height)) }
            lines += split(TextLine(points: points, direction: direction))
        }
        return joined(lines)
    }

    /// Pieces of one line rejoined across a gap (glare, a stain, a fold wipes a few characters):
    /// on the same line, at the same pitch, at most seven pitches apart. Longest pieces first, each
    /// taking its nearest continuation while there is one; continuations are looked up by where
    /// they start (a grid), so the cost stays near the number of pieces — a noise photo has tens
    /// of thousands, and comparing every pair after every merge took a minute on one.
    static func joined(_ lines: [TextLine]) -> [TextLine] {
        var pieces = lines.sorted { $0.count > $1.count }
        guard pieces.count > 1 else { return pieces }
        var alive = [Bool](repeating: true, count: pieces.count)
        let spacings = pieces.map(\.spacing).filter { $0 > 0 }.sorted()
        let starts = PointGrid(pieces.map { (x: $0.points[0].x, y: $0.points[0].y) },
                               cell: max(8, 2 * (spacings.isEmpty ? 8 : spacings[spacings.count / 2])))
        for i in pieces.indices where alive[i] && pieces[i].count >= 4 {
            while true {
                let a = pieces[i]
                let pitch = a.spacing
                guard pitch > 0 else { break }
                let last = a.points[a.count - 1], aEnd = a.along(last)
                let h0 = a.capHeight
                let slope = a.count >= 6 ? (a.across(last) - a.across(a.points[a.count - 6])) / max(1, aEnd - a.along(a.points[a.count - 6])) : 0
                var best: (index: Int, gap: Float)?
                for j in starts.near(last.x, last.y, radius: 7.5 * pitch + h0) where j != i && alive[j] {
                    let b = pieces[j]
                    guard b.count >= 3, b.spacing / pitch > 0.75, b.spacing / pitch < 1.33 else { continue }
                    let gap = a.along(b.points[0]) - aEnd
                    guard gap > 0.5 * pitch, gap < 7 * pitch else { continue }
                    // b continues a's line: its centres on the line a's last points define.
                    let h = max(h0, b.capHeight)
                    guard abs(a.across(b.points[0]) - (a.across(last) + slope * gap)) < 0.35 * h else { continue }
                    if best == nil || gap < best?.gap ?? .infinity { best = (j, gap) }
                }
                guard let best else { break }
                pieces[i] = TextLine(points: a.points + pieces[best.index].points, direction: a.direction)
                alive[best.index] = false
            }
        }
        return pieces.indices.filter { alive[$0] }.map { pieces[$0] }
    }

    /// How many cells of ink follow a line's last blob, at its pitch along its slant (at most
    /// `limit`): fillers too thin or faint to pass as blobs — a TD3 line's tail of `<`s was
    /// missed on a clean 600-pixel scan, and the zone read as a TD2's. A cell counts when its
    /// darkest is at least a third as far below its paper as the line's characters are.
    static func cellsOfInkAfter(_ line: TextLine, _ image: GrayImage, limit: Int = 16) -> Int {
        guard line.count >= 6, line.spacing > 0, line.capHeight > 0 else { return 0 }
        let pitch = line.spacing
        let last = line.points[line.count - 1], sixth = line.points[line.count - 6]
        let slope = (line.across(last) - line.across(sixth)) / max(1, line.along(last) - line.along(sixth))
        let reference = ink(line, image)
        guard reference > 20 else { return 0 }
        var count = 0
        while count < limit {
            let step = Float(count + 1) * pitch
            guard let value = boxContrast(line, image, line.along(last) + step, line.across(last) + slope * step), value > reference / 3 else { break }
            count += 1
        }
        return count
    }

    /// Darkest and brightest of a cell's box round (u, v) — the line's coordinates, its pitch and
    /// cap height — apart; nil when the box leaves the image.
    static func boxContrast(_ line: TextLine, _ image: GrayImage, _ u: Float, _ v: Float) -> Float? {
        let d = line.direction, pitch = line.spacing, cap = line.capHeight
        var darkest: Float = 255, brightest: Float = 0
        for i in 0..<5 {
            for j in 0..<7 {
                let du = (Float(i) / 4 - 0.5) * 0.7 * pitch, dv = (Float(j) / 6 - 0.5) * 1.3 * cap
                let x = (u + du) * d.x - (v + dv) * d.y, y = (u + du) * d.y + (v + dv) * d.x
                guard x >= 0, y >= 0, x < Float(image.width), y < Float(image.height) else { return nil }
                let value = image.sample(x, y)
                darkest = min(darkest, value)
                brightest = max(brightest, value)
            }
        }
        return brightest - darkest
    }

    /// How dark a line's characters stand on their paper: the median of its blobs' box contrasts
    /// (0 when none lies inside the image).
    static func ink(_ line: TextLine, _ image: GrayImage) -> Float {
        guard line.spacing > 0, line.capHeight > 0 else { return 0 }
        let own = line.points.compactMap { boxContrast(line, image, line.along($0), line.across($0)) }.sorted()
        return own.isEmpty ? 0 : own[own.count / 2]
    }

    /// A chain cut where two neighbours are further apart than 2.1 × its median spacing.
    static func split(_ line: TextLine) -> [TextLine] {
        let spacing = line.spacing
        guard spacing > 0 else { return [line] }
        var pieces: [TextLine] = []
        var current: [(x: Float, y: Float, width: Float, height: Float)] = []
        for point in line.points {
            if let last = current.last, line.along(point) - line.along(last) > 2.1 * spacing {
                pieces.append(TextLine(points: current, direction: line.direction))
                current = []
            }
            current.append(point)
        }
        pieces.append(TextLine(points: current, direction: line.direction))
        return pieces.filter { $0.count >= 3 }
    }
}

/// Blobs by the cell of a coarse grid their centre falls in, for neighbour queries.
struct Grid {
    let cell: Float
    let columns: Int
    let rows: Int
    var buckets: [[Int]]

    init(_ blobs: [Component]) {
        let heights = blobs.map(\.height).sorted()
        cell = Float(max(8, heights.isEmpty ? 16 : heights[heights.count / 2] * 2))
        let maxX = blobs.map(\.boxCentreX).max() ?? 0, maxY = blobs.map(\.boxCentreY).max() ?? 0
        columns = Int(maxX / cell) + 1
        rows = Int(maxY / cell) + 1
        buckets = Array(repeating: [], count: columns * rows)
        for (index, blob) in blobs.enumerated() {
            buckets[min(rows - 1, Int(blob.boxCentreY / cell)) * columns + min(columns - 1, Int(blob.boxCentreX / cell))].append(index)
        }
    }

    func near(_ x: Float, _ y: Float, radius: Float) -> [Int] {
        let x0 = max(0, Int((x - radius) / cell)), x1 = min(columns - 1, Int((x + radius) / cell))
        let y0 = max(0, Int((y - radius) / cell)), y1 = min(rows - 1, Int((y + radius) / cell))
        guard x0 <= x1, y0 <= y1 else { return [] }
        var result: [Int] = []
        for row in y0...y1 { for column in x0...x1 { result += buckets[row * columns + column] } }
        return result
    }
}

/// Points by the cell of a coarse grid they fall in, for neighbour queries.
struct PointGrid {
    let cell: Float
    let originX: Float
    let originY: Float
    let columns: Int
    let rows: Int
    var buckets: [[Int]]

    init(_ points: [(x: Float, y: Float)], cell: Float) {
        self.cell = cell
        originX = points.map(\.x).min() ?? 0
        originY = points.map(\.y).min() ?? 0
        let maxX = points.map(\.x).max() ?? 0, maxY = points.map(\.y).max() ?? 0
        columns = min(4096, Int((maxX - originX) / cell) + 1)
        rows = min(4096, Int((maxY - originY) / cell) + 1)
        buckets = Array(repeating: [], count: columns * rows)
        for (index, point) in points.enumerated() {
            let column = min(columns - 1, max(0, Int((point.x - originX) / cell)))
            let row = min(rows - 1, max(0, Int((point.y - originY) / cell)))
            buckets[row * columns + column].append(index)
        }
    }

    func near(_ x: Float, _ y: Float, radius: Float) -> [Int] {
        let x0 = max(0, Int(((x - radius - originX) / cell).rounded(.down))), x1 = min(columns - 1, Int((x + radius - originX) / cell))
        let y0 = max(0, Int(((y - radius - originY) / cell).rounded(.down))), y1 = min(rows - 1, Int((y + radius - originY) / cell))
        guard x0 <= x1, y0 <= y1 else { return [] }
        var result: [Int] = []
        for row in y0...y1 { for column in x0...x1 { result += buckets[row * columns + column] } }
        return result
    }
}
