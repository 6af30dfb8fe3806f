/// What one photo's cells were read as, kept for the hypotheses after them. A hypothesis
/// shifted a cell or two along its lines, or one line shifted alone (`CellGeometry.shifted`), is
/// the very cells of the one it shifts, one place over; and the second opinion samples exactly the
/// cells the first reader sampled. Sampling a cell (up to 3 × 3 samples a pixel) and classifying
/// it are what a read spends its time on, so each is done once a cell:
///
/// - a cell's raw grey values (`CellSampler.raw`), by the cell's exact geometry — shared by every
///   reader of one `Searched` photo;
/// - a cell's probabilities, by its geometry and the ink and paper levels its neighbours gave it
///   (`CellSampler.levels`: a cell near a line's end gets other neighbours when the line shifts,
///   so it is classified again) — one memo a reader, since each reader has its own classifier.
///
/// The same inputs give the same floats, so a read with the memo answers exactly as one without.
/// Bounded: past `capacity` entries nothing more is kept (the read goes on, only slower). One
/// read's, on one thread: never shared between reads.
final class CellMemo {
    /// A cell's geometry, bit for bit (six words, no array to allocate on every lookup).
    struct Cell: Hashable {
        let x: UInt32, y: UInt32, alongX: UInt32, alongY: UInt32, pitch: UInt32, capHeight: UInt32

        init(_ cell: CellGeometry.Cell) {
            (x, y, alongX, alongY) = (cell.x.bitPattern, cell.y.bitPattern, cell.along.x.bitPattern, cell.along.y.bitPattern)
            (pitch, capHeight) = (cell.pitch.bitPattern, cell.capHeight.bitPattern)
        }
    }

    struct Classified: Hashable {
        let cell: Cell
        let ink: UInt32
        let paper: UInt32
    }

    /// The raw samples of one photo's cells, shared by its readers.
    final class Raw {
        private var values: [Cell: [Float]] = [:]

        func values(_ image: GrayImage, _ cell: CellGeometry.Cell) -> [Float] {
            let key = Cell(cell)
            if let known = values[key] { return known }
            let raw = CellSampler.raw(image, cell)
            if values.count < CellMemo.capacity { values[key] = raw }
            return raw
        }
    }

    /// About 1.3 KB a cell's raw samples: 16,384 cells are about 21 MB, more than the hypotheses of
    /// a 1600-pixel photo read (a few thousand cells).
    static let capacity = 16_384

    let raw: Raw
    private var probabilities: [Classified: [Float]] = [:]
    /// How many cells this memo had classified (what the tests count).
    private(set) var classifications = 0

    init(raw: Raw) { self.raw = raw }

    func probabilities(_ cell: CellGeometry.Cell, level: (ink: Float, paper: Float), classify: () -> [Float]) -> [Float] {
        let key = Classified(cell: Cell(cell), ink: level.ink.bitPattern, paper: level.paper.bitPattern)
        if let known = probabilities[key] { return known }
        let read = classify()
        classifications += 1
        if probabilities.count < Self.capacity { probabilities[key] = read }
        return read
    }
}
