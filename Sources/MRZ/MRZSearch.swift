#if canImport(Glibc)
import Glibc
#endif

/// A point in time a search must end by (wall clock, `ContinuousClock`).
struct Deadline: Sendable {
    let instant: ContinuousClock.Instant

    init(after budget: Duration) { instant = ContinuousClock.now.advanced(by: budget) }

    var expired: Bool { ContinuousClock.now >= instant }
}

extension MRZRecognizer {
    /// Where the MRZ could be in a photo: dark blobs → the text direction → lines → blocks of two
    /// or three lines that look like one document's zone → for each, the line lengths its extent
    /// allows, both ways round, each line start. Every stage's cost is bounded (a shrunken working
    /// copy, at most `Components.label`'s components, neighbour queries on grids, four blocks)
    /// and the deadline is looked at between stages.
    struct Search {
        var hypotheses: [Hypothesis] = []
        /// Set when the search ran out of time, or found only zones that are not one document's.
        var refusal: Refusal?
        /// The image the hypotheses' cells lie in: the one searched, or it turned a quarter when
        /// its text ran down the page (`init`).
        var image: GrayImage

        /// Photos whose longer side is under this are enlarged before they are looked at.
        static let smallSide = 900

        /// A small photo enlarged (bilinear, 2× or 3×) as a person leans in: a data page
        /// photographed 250–300 pixels wide has capitals of 4–5 pixels, too small for the blobs'
        /// threshold window and their size rules; enlarged they are 12–15.
        static func enlarged(_ photo: GrayImage) -> GrayImage {
            let side = max(photo.width, photo.height)
            guard side > 0, side < smallSide else { return photo }
            let factor = min(3, (smallSide + side - 1) / side)
            guard factor > 1 else { return photo }
            let width = photo.width * factor, height = photo.height * factor
            var pixels = [UInt8](repeating: 0, count: width * height)
            let scale = 1 / Float(factor)
            for y in 0..<height {
                for x in 0..<width {
                    pixels[y * width + x] = UInt8(min(255, max(0, photo.sample((Float(x) + 0.5) * scale, (Float(y) + 0.5) * scale).rounded())))
                }
            }
            return GrayImage(width: width, height: height, pixels: pixels)
        }

        /// A photo whose text runs down the page (a data page photographed on its side, a scan
        /// stored turned: the text's direction is found as well either way) is searched again
        /// turned a quarter, its text across. The stages after the direction measure a glyph by
        /// its upright box — its height is the box's height, the next glyph lies within so many
        /// heights — and a quarter turn makes that the glyph's width: the real documents turned
        /// a quarter lost a quarter of their keys (Germany's passports, which the set stores
        /// turned, read at full size and were lost blurred or at half size). Upside down needs
        /// no turn: every block is read both ways round.
        init(_ gray: GrayImage, workingSide: Int, deadline: Deadline, mayTurn: Bool = true) {
            image = gray
            let factor = max(1, Int((Float(max(gray.width, gray.height)) / Float(workingSide)).rounded(.up)))
            let work = gray.downscaled(by: factor)
            guard work.width >= 32, work.height >= 16 else { return }
            let radius = max(7, min(work.width, work.height) / 48)
            let mask = Components.darkMask(work, radius: radius, margin: 10)
            let components = Components.label(mask, width: work.width, height: work.height)
            guard !deadline.expired else { refusal = .budgetExceeded; return }
            let blobs = LineFinder.characters(components, imageHeight: work.height)
            guard blobs.count >= 20 else { return }
            let angle = LineFinder.dominantAngle(blobs).angle
            if mayTurn, angle > Float.pi / 4, angle < 3 * Float.pi / 4 {
                self = Search(gray.turnedQuarter(), workingSide: workingSide, deadline: deadline, mayTurn: false)
                return
            }
            guard !deadline.expired else { refusal = .budgetExceeded; return }
            let lines = LineFinder.lines(blobs, angle: angle)
            guard !deadline.expired else { refusal = .budgetExceeded; return }
            let blocks = MRZBlock.candidates(lines, image: work)
            let clean = blocks.filter { !$0.ambiguous }
            if clean.isEmpty, !blocks.isEmpty {
                refusal = .ambiguousZone
                return
            }
            for block in clean {
                let scaled = block.scaled(by: Float(factor))
                for length in block.lengths(work) {
                    for reversed in [false, true] {
                        for start in CellGeometry.Start.allCases {
                            guard !deadline.expired else { refusal = .budgetExceeded; return }
                            guard var geometry = CellGeometry(scaled, length: length, reversed: reversed, start: start) else { continue }
                            geometry.measureCapHeight(gray)
                            hypotheses.append(Hypothesis(geometry: geometry))
                        }
                    }
                }
            }
        }
    }
}

extension MRZRecognizer {
    /// A photo as the search saw it — enlarged when small, in a border of its own edge, searched —
    /// with no classifier in it: both readers of `read` read these hypotheses.
    struct Searched {
        let search: Search
        /// The enlarged photo's width over the photo's.
        let enlargement: Float
        /// Its cells' raw samples, for every reader of it (`CellMemo`).
        let rawCells = CellMemo.Raw()

        init(_ photo: GrayImage, workingSide: Int, deadline: Deadline) {
            let enlarged = Search.enlarged(photo)
            enlargement = Float(enlarged.width) / Float(max(1, photo.width))
            let padded = enlarged.padded(by: min(48, max(4, min(enlarged.width, enlarged.height) / 4)))
            search = Search(padded, workingSide: workingSide, deadline: deadline)
        }
    }
}

extension MRZBlock {
    /// The line lengths to read the block at, likeliest first: three lines are TD1's 30; two
    /// lines 36 or 44 by the number of cells they span — each line's extent over its pitch — and
    /// the cells of ink found past its last blob (`LineFinder.cellsOfInkAfter`: fillers too thin
    /// or too faint to be blobs of their own). A 44-cell line whose tail of fillers was missed
    /// looked 36 long, and a clean TD3 scan was read as a TD2 (issue 41): a line that looks 36
    /// long is also read at 44, after 36.
    func lengths(_ work: GrayImage) -> [Int] {
        if lines.count == 3 { return [30] }
        let spanned = lines.map(MRZBlock.cells).max() ?? 40
        if spanned >= 41.5 { return [44] }
        // Ink past the end may be the fillers, or the page's edge: 44 first, 36 still tried.
        let probed = lines.map { MRZBlock.cells($0) + Float(LineFinder.cellsOfInkAfter($0, work)) }.max() ?? spanned
        if probed >= 41.5 { return [44, 36] }
        return abs(spanned - 36) <= abs(spanned - 44) ? [36, 44] : [44, 36]
    }
}

extension MRZRecognizer {
    /// A crop of one line of characters measured by its blobs: the pitch (the median distance
    /// between neighbouring characters), the cap height (the upper median of the tall blobs), the
    /// first character's centre and the baseline — what lines drawn beside a real one (the
    /// benchmark's real tier) must match. Nil when the crop shows no line.
    package static func lineMetrics(_ gray: GrayImage) -> (pitch: Float, capHeight: Float, firstCentre: Float, baseline: Float)? {
        let radius = max(7, min(gray.width, gray.height) / 3)
        let components = Components.label(Components.darkMask(gray, radius: radius, margin: 10), width: gray.width, height: gray.height)
        let blobs = components.filter { $0.height >= 4 && $0.count >= 4 && $0.height <= gray.height }
        guard let tallest = blobs.map(\.height).max() else { return nil }
        let tall = blobs.filter { $0.height >= tallest * 3 / 5 }.sorted { $0.boxCentreX < $1.boxCentreX }
        guard tall.count >= 4 else { return nil }
        // Characters sit a pitch or a few apart; gaps between the tall ones, each over the whole
        // number of pitches it spans (fillers are short, and not among them).
        let gaps = zip(tall, tall.dropFirst()).map { $1.boxCentreX - $0.boxCentreX }.filter { $0 > 1 }.sorted()
        guard !gaps.isEmpty else { return nil }
        let rough = gaps[gaps.count / 4]
        let pitches = gaps.compactMap { gap -> Float? in
            let steps = (gap / rough).rounded()
            return steps >= 1 && steps <= 6 ? gap / steps : nil
        }.sorted()
        let heights = tall.map { Float($0.height) }.sorted()
        let bottoms = tall.map { Float($0.maxY + 1) }.sorted()
        guard !pitches.isEmpty, let first = blobs.filter({ $0.height >= tallest / 3 }).min(by: { $0.boxCentreX < $1.boxCentreX }) else { return nil }
        return (pitches[pitches.count / 2], heights[heights.count * 2 / 3], first.boxCentreX, bottoms[bottoms.count / 2])
    }
}
