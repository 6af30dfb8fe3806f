#if canImport(Glibc)
import Glibc
#endif
/// Two or three long parallel lines of characters, one above the other, starting together at the
/// same pitch: what an MRZ looks like before a character of it is read.
struct MRZBlock: Sendable {
    var lines: [TextLine]
    var score: Float
    /// More lines like these side by side than the block has (two documents' zones interleaved,
    /// a third line inside a TD3's), or lines that disagree (`MRZBlock.agree`): not one
    /// document's MRZ, whatever its characters say.
    var ambiguous = false

    init(lines: [TextLine], score: Float, ambiguous: Bool = false) {
        (self.lines, self.score, self.ambiguous) = (lines, score, ambiguous)
    }

    /// The blocks among `lines`, best first (at most `limit`).
    static func candidates(_ lines: [TextLine], image: GrayImage? = nil, limit: Int = 4) -> [MRZBlock] {
        let long = lines.filter { $0.count >= 12 && $0.spacing > 0 }
        guard long.count >= 2 else { return [] }
        // Order by position across the direction; grow runs of two and three.
        let reference = long[0]
        let sorted = long.sorted { mean($0.points.map(reference.across)) < mean($1.points.map(reference.across)) }
        let ink = image.map { image in sorted.map { LineFinder.ink($0, image) } }
        var blocks: [MRZBlock] = []
        for i in sorted.indices {
            for j in (i + 1)..<min(sorted.count, i + 4) where neighbours(sorted[i], sorted[j]) {
                blocks.append(block([i, j], of: sorted, ink: ink))
                for k in (j + 1)..<min(sorted.count, j + 4) where neighbours(sorted[j], sorted[k]) {
                    blocks.append(block([i, j, k], of: sorted, ink: ink))
                }
            }
        }
        return Array(blocks.sorted { $0.score > $1.score }.prefix(limit))
    }

    /// Lines side by side: parallel, a line's height or three apart, overlapping, same pitch.
    static func neighbours(_ a: TextLine, _ b: TextLine) -> Bool {
        let h = max(a.capHeight, b.capHeight)
        let gap = abs(mean(b.points.map(a.across)) - mean(a.points.map(a.across)))
        guard gap > 1.1 * h, gap < 3.4 * h else { return false }
        let pitch = a.spacing / b.spacing
        guard pitch > 0.78, pitch < 1.28, a.capHeight / b.capHeight > 0.7, a.capHeight / b.capHeight < 1.43 else { return false }
        let (a0, a1) = (a.along(a.points[0]), a.along(a.points[a.count - 1]))
        let (b0, b1) = (a.along(b.points[0]), a.along(b.points[b.count - 1]))
        let overlap = min(a1, b1) - max(a0, b0)
        return overlap > 0.55 * min(a1 - a0, b1 - b0)
    }

    /// The block of `sorted[members]`, ambiguous when a line beside it (just before the first, just
    /// after the last) or between its lines is like its lines (`alike`) and printed at least half
    /// as dark as the faintest of them (`ink`, each line's `LineFinder.ink`, when known), or when
    /// its own lines disagree. (A block may skip a line between two of its own: a line of other print; a line of
    /// the zone's own kind there is another document's — A1 B2 A2 read as A1 A2.)
    static func block(_ members: [Int], of sorted: [TextLine], ink: [Float]? = nil) -> MRZBlock {
        let lines = members.map { sorted[$0] }
        // Three lines as long as a TD3's or a TD2's: no format has them.
        var ambiguous = !agree(lines) || (lines.count == 3 && lines.allSatisfy { cells($0) > 37 })
        let faintest = ink.map { ink in members.map { ink[$0] }.min() ?? 0 }
        for outside in sorted.indices where !members.contains(outside) {
            guard let first = members.first, let last = members.last else { break }
            let beside = outside < first ? neighbours(sorted[outside], sorted[first]) && outside >= first - 3
                : outside > last ? neighbours(sorted[last], sorted[outside]) && outside <= last + 3
                : overlaps(sorted[outside], sorted[first])
            // A line as faint as a pattern is no document's: a guilloche's wave under a card's
            // MRZ, resampled in a tilted photo, made a row of blobs at the zone's pitch (ink 40
            // against the zone's 170–190) and the card was refused as two documents.
            let printed = ink.map { $0[outside] >= 0.5 * (faintest ?? 0) } ?? true
            if beside, printed, lines.allSatisfy({ alike($0, sorted[outside]) }) { ambiguous = true }
        }
        return MRZBlock(lines: lines, score: score(lines), ambiguous: ambiguous)
    }

    /// Whether two lines overlap along the text direction (by half the shorter one).
    static func overlaps(_ a: TextLine, _ b: TextLine) -> Bool {
        let (a0, a1) = (a.along(a.points[0]), a.along(a.points[a.count - 1]))
        let (b0, b1) = (a.along(b.points[0]), a.along(b.points[b.count - 1]))
        return min(a1, b1) - max(a0, b0) > 0.5 * min(a1 - a0, b1 - b0)
    }

    /// Two lines of one kind: the same pitch and cap height within what one zone's lines show
    /// under perspective and blur, about as many cells long.
    static func alike(_ a: TextLine, _ b: TextLine) -> Bool {
        let pitch = a.spacing / b.spacing, cap = a.tallHeight / b.tallHeight
        return pitch > 0.87 && pitch < 1.15 && cap > 0.8 && cap < 1.25 && abs(cells(a) - cells(b)) <= 6
    }

    /// How many cells a line spans, from its blobs (the first to the last, over its pitch).
    static func cells(_ line: TextLine) -> Float {
        (line.along(line.points[line.count - 1]) - line.along(line.points[0])) / line.spacing + 1
    }

    /// Whether a block's lines could be one zone's: the same pitch and cap height (within what
    /// perspective and blur make of one print), the same slant, and not one line shifted along
    /// the others by whole cells at both its ends (a line of another zone laid beside them; a
    /// line whose first characters glare wiped starts late but ends with the others).
    static func agree(_ lines: [TextLine]) -> Bool {
        let pitches = lines.map(\.spacing), caps = lines.map(\.tallHeight)
        guard let minPitch = pitches.min(), let maxPitch = pitches.max(), let minCap = caps.min(), let maxCap = caps.max(),
              minPitch > 0, minCap > 0 else { return false }
        guard maxPitch / minPitch < 1.15, maxCap / minCap < 1.3 else { return false }
        let reference = lines[0]
        let slopes = lines.map { slope($0, along: reference) }
        guard let low = slopes.min(), let high = slopes.max(), high - low < 0.06 else { return false }
        let pitch = (minPitch + maxPitch) / 2
        for line in lines.dropFirst() {
            let start = reference.along(line.points[0]) - reference.along(reference.points[0])
            let end = reference.along(line.points[line.count - 1]) - reference.along(reference.points[reference.count - 1])
            if abs(start) > 1.5 * pitch, abs(end) > 1.5 * pitch, (start > 0) == (end > 0), abs(start - end) < 1.5 * pitch { return false }
        }
        return true
    }

    /// A line's slant against `reference`'s direction: the least-squares slope of its centres
    /// across the line over along it.
    static func slope(_ line: TextLine, along reference: TextLine) -> Float {
        let u = line.points.map(reference.along), v = line.points.map(reference.across)
        let mu = mean(u), mv = mean(v)
        var numerator: Float = 0, denominator: Float = 0
        for (a, b) in zip(u, v) {
            numerator += (a - mu) * (b - mv)
            denominator += (a - mu) * (a - mu)
        }
        return denominator > 0 ? numerator / denominator : 0
    }

    /// How much a block looks like an MRZ: long lines of regular pitch, of the MRZ's lengths.
    static func score(_ lines: [TextLine]) -> Float {
        var score: Float = 0
        for line in lines {
            let extent = line.along(line.points[line.count - 1]) - line.along(line.points[0])
            let estimated = extent / line.spacing + 1
            let nearest = [30, 36, 44].map { abs(Float($0) - estimated) }.min() ?? 99
            score += Float(line.count) - 2 * nearest
        }
        return score + (lines.count == 3 ? 12 : 0)
    }

    static func mean(_ values: [Float]) -> Float { values.isEmpty ? 0 : values.reduce(0, +) / Float(values.count) }
}

/// Where each cell of an MRZ is in the image, for one reading of a block: a format's line length,
/// and a reading direction (the block as it lies, or turned half a circle).
package struct CellGeometry: Sendable {
    package struct Cell: Sendable {
        package var x: Float
        package var y: Float
        /// Along the line (reading direction) and across it (downwards), unit vectors.
        package var along: (x: Float, y: Float)
        package var pitch: Float
        package var capHeight: Float

        package init(x: Float, y: Float, along: (x: Float, y: Float), pitch: Float, capHeight: Float) {
            (self.x, self.y, self.along, self.pitch, self.capHeight) = (x, y, along, pitch, capHeight)
        }
    }

    package var lines: [[Cell]]

    package init(lines: [[Cell]]) { self.lines = lines }

    /// Where the lines' first characters are taken to be, along the reading direction: the median
    /// of the lines' first blobs (one stray blob before a line does not move it), or the earliest
    /// or the latest of them when they disagree (glare or the frame's edge wipes a line's first
    /// characters: with two lines the median is the later start, and the wiped line's cells would
    /// all be one off).
    enum Start: CaseIterable {
        case median, earliest, latest
    }

    /// The cells of `block` read with `length` characters a line; `reversed` reads it upside down.
    /// Nil when the lines do not give enough cells, or when `start` is the same as the median's.
    init?(_ block: MRZBlock, length: Int, reversed: Bool, start choice: Start = .median) {
        let sign: Float = reversed ? -1 : 1
        let direction = (x: block.lines[0].direction.x * sign, y: block.lines[0].direction.y * sign)
        func u(_ p: (x: Float, y: Float, width: Float, height: Float)) -> Float { p.x * direction.x + p.y * direction.y }
        func v(_ p: (x: Float, y: Float, width: Float, height: Float)) -> Float { -p.x * direction.y + p.y * direction.x }
        // Lines top to bottom in reading order, each one's points along the reading direction.
        let ordered = block.lines.sorted { MRZBlock.mean($0.points.map(v)) < MRZBlock.mean($1.points.map(v)) }
            .map { line in line.points.sorted { u($0) < u($1) } }
        let pitch = MRZBlock.mean(block.lines.map(\.spacing))
        guard pitch > 0 else { return nil }
        // The lines start together: the first character of each is a letter or digit.
        let starts = ordered.map { u($0[0]) }.sorted()
        let median = starts[starts.count / 2]
        let start: Float
        switch choice {
        case .median: start = median
        case .earliest, .latest:
            start = choice == .earliest ? starts[0] : starts[starts.count - 1]
            guard abs(start - median) >= 0.5 * pitch else { return nil }
        }
        var lines: [[Cell]] = []
        for points in ordered {
            // Each blob's cell index, counted along the line (the pitch re-estimated as it goes, so
            // that a few per cent of error does not add up to a cell by the end), then u and v as
            // smooth functions of the index.
            var indexed: [(i: Float, u: Float, v: Float, height: Float)] = []
            var localPitch = pitch
            for point in points where point.width < 1.5 * pitch {
                let index: Float
                if let last = indexed.last {
                    // A blob under half a pitch on from the last is a piece of the same character
                    // (glare or a thin stroke splits one), not the next cell.
                    let steps = ((u(point) - last.u) / localPitch).rounded()
                    guard steps >= 1 else { continue }
                    index = last.i + steps
                    if let first = indexed.first, index - first.i >= 4 { localPitch = (u(point) - first.u) / (index - first.i) }
                } else {
                    index = max(0, ((u(point) - start) / pitch).rounded())
                }
                guard index < Float(length) else { break }
                indexed.append((index, u(point), v(point), point.height))
            }
            guard indexed.count >= max(6, length / 3) else { return nil }
            let span = (indexed.last?.i ?? 0) - (indexed.first?.i ?? 0)
            let degree = indexed.count >= 20 && span >= Float(length) * 0.6 ? 2 : 1
            guard let fitU = Polynomial.fit(indexed.map(\.i), indexed.map(\.u), degree: degree),
                  let fitV = Polynomial.fit(indexed.map(\.i), indexed.map(\.v), degree: degree) else { return nil }
            let heights = indexed.map(\.height).sorted()
            let cap = heights[min(heights.count - 1, heights.count * 3 / 4)]
            var cells: [Cell] = []
            for i in 0..<length {
                let index = Float(i)
                let cu = fitU.value(index), cv = fitV.value(index)
                // Back from (u, v) to the image.
                let x = cu * direction.x - cv * direction.y, y = cu * direction.y + cv * direction.x
                let du = fitU.slope(index), dv = fitV.slope(index)
                let lx = du * direction.x - dv * direction.y, ly = du * direction.y + dv * direction.x
                let norm = (lx * lx + ly * ly).squareRoot()
                guard norm > 0 else { return nil }
                cells.append(Cell(x: x, y: y, along: (lx / norm, ly / norm), pitch: norm, capHeight: cap))
            }
            lines.append(cells)
        }
        self.lines = lines
    }
}

extension CellGeometry {
    /// Each line's cap height measured on the image (`CellSampler.measuredCapHeight`) instead of
    /// its blobs' heights where blur has made those tall: when the measure is under nine tenths of
    /// theirs (and over half). Where the two agree the blobs' is kept: it is the steadier of the
    /// two on sharp photos (kiosk MRZs exact 100 % with it, 99.8 % with the measure everywhere).
    mutating func measureCapHeight(_ image: GrayImage) {
        for index in lines.indices {
            guard let estimate = lines[index].first?.capHeight, let measured = CellSampler.measuredCapHeight(image, lines[index]),
                  measured > 0.5 * estimate, measured < 0.9 * estimate else { continue }
            for cell in lines[index].indices { lines[index][cell].capHeight = measured }
        }
    }
}

extension CellGeometry {
    /// The same lines with every cell index moved `shift` cells along (a positive shift reads the
    /// line from its second cell on): where the lines' first blobs were not their first
    /// characters — a card's edge or a pattern's blobs before a line, fillers too faint to count
    /// at its end — every cell of the line is read one or two off, surely, and no check digit
    /// holds. Cells past the fitted ones are extrapolated along the line at its pitch.
    func shifted(by shift: Int) -> CellGeometry {
        CellGeometry(lines: lines.indices.map { shiftedLine($0, by: shift) })
    }

    /// The same lines with only line `index` moved `shift` cells along: a line whose first
    /// character did not make a blob of its own (a thin `I` over a guilloche) starts a cell late
    /// while the others start where they should — a German identity card's scan read its first
    /// line one cell off and every other line right.
    func shifted(line index: Int, by shift: Int) -> CellGeometry {
        CellGeometry(lines: lines.indices.map { $0 == index ? shiftedLine($0, by: shift) : lines[$0] })
    }

    private func shiftedLine(_ index: Int, by shift: Int) -> [Cell] {
        let line = lines[index]
        guard line.count >= 2, shift != 0 else { return line }
        return (0..<line.count).map { index in
            let target = index + shift
            if target >= 0, target < line.count { return line[target] }
            let edge = target < 0 ? line[0] : line[line.count - 1]
            let steps = Float(target < 0 ? target : target - (line.count - 1))
            var cell = edge
            cell.x += edge.along.x * edge.pitch * steps
            cell.y += edge.along.y * edge.pitch * steps
            return cell
        }
    }

    /// The same cells, each one's cap height times `factor`.
    func scalingCapHeight(by factor: Float) -> CellGeometry {
        CellGeometry(lines: lines.map { line in line.map { cell in
            var cell = cell
            cell.capHeight *= factor
            return cell
        } })
    }
}

/// A least-squares polynomial of degree 1 or 2.
struct Polynomial {
    var coefficients: [Float]

    func value(_ x: Float) -> Float { coefficients.enumerated().reduce(0) { $0 + $1.element * pow(x, Float($1.offset)) } }
    func slope(_ x: Float) -> Float { coefficients.count > 1 ? coefficients[1] + (coefficients.count > 2 ? 2 * coefficients[2] * x : 0) : 0 }

    static func fit(_ xs: [Float], _ ys: [Float], degree: Int) -> Polynomial? {
        let n = degree + 1
        var a = [[Double]](repeating: [Double](repeating: 0, count: n + 1), count: n)
        for (x, y) in zip(xs, ys) {
            let dx = Double(x), dy = Double(y)
            for row in 0..<n {
                for column in 0..<n { a[row][column] += pow(dx, Double(row + column)) }
                a[row][n] += pow(dx, Double(row)) * dy
            }
        }
        for column in 0..<n {
            guard let pivot = (column..<n).max(by: { abs(a[$0][column]) < abs(a[$1][column]) }), abs(a[pivot][column]) > 1e-9 else { return nil }
            a.swapAt(column, pivot)
            for row in 0..<n where row != column {
                let f = a[row][column] / a[column][column]
                for k in column...n { a[row][k] -= f * a[column][k] }
            }
        }
        return Polynomial(coefficients: (0..<n).map { Float(a[$0][n] / a[$0][$0]) })
    }
}
