/// The document's own print as the reference for its `0`s at small capitals.
///
/// Under `Policy.smallLookAlikeHeight` the classifier's word on `0` against `O` is not taken
/// (`Policy.zeroOFloor`): at 10–11 pixels, blurred, it called a number's `0`s `O` surely. So every
/// number with two zeros whose changes to `O` cancel in its check digit (`00000000`, `XX000000`,
/// `C01X00T47`: weights 7 and 3) earned no key, and those are most real documents' numbers at the
/// 5–11-pixel capitals of their photos (issue 50). And real print's `0` is not always the
/// generator's: German passports' and Monaco's cards' `0`s were read "not OCR-B" (0.83–0.89), a
/// date's `0` at 0.11, under the key's minimum.
///
/// A document prints every `0` alike, and it prints some where only a digit may stand — its dates
/// and check digits. A cell is *vouched* for when its pixels are as close to the document's sure
/// `0`s (the classifier's own reading, at least `knownMinimum`, where only a digit may stand) as
/// those are to one another, and — when the document prints sure `O`s where only letters stand —
/// clearly closer to its `0`s than to its `O`s. A vouched cell
/// - read `0` in a field that allows letters is held to the ordinary look-alike floor against `O`,
///   as at larger print (`vouchedZeros`);
/// - whose likeliest character is `0` but that the classifier called partly "not OCR-B" is read
///   as the document's own `0`s are: its "not OCR-B" share given back to its characters
///   (`restored`); a reading with such a cell is never `valid`.
/// A cell read `O` is never vouched (the `small` tier's false key read `0`s as `O`), nor one the
/// document's `0`s do not resemble. Only at small capitals, where the classifier's `0` is what
/// fails; above them its "not OCR-B" stands (the `font` tier's other fonts are drawn there).
///
/// What it cannot see: an `O` printed so like the document's `0`s that no pixel tells them apart,
/// in a document that prints no `O` of its own. The key is then a candidate the chip checks, as
/// every key is.
package struct MRZDocumentPrint {
    /// Known cells: read as their character at least this surely where the field allows only digits
    /// (or only letters).
    static let knownMinimum: Float = 0.5
    /// At least this many known `0`s.
    static let knownZerosMinimum = 2
    /// A vouched cell's distance to the known `0`s' mean: at most this times the farthest known
    /// `0`'s distance to the mean of the others.
    static let spreadFactor: Float = 1
    /// Where the document prints known `O`s: the cell at least this much farther from their mean
    /// than from the `0`s'.
    static let zeroOMargin: Float = 1.25
    /// A cell whose "not OCR-B" share is under this is left as it is.
    static let foreignToRestore: Float = 0.05

    static let zero = MRZGlyph(Character("0")), letterO = MRZGlyph(Character("O"))

    private let zeroMean: [Float]
    private let spread: Float
    private let oMean: [Float]?

    /// The document's print as `format`'s lines show it, or nil when they show fewer than
    /// `knownZerosMinimum` sure `0`s (or the shapes do not fit the format).
    package init?(format: MRZFormat, scores: [[[Float]]], samples: [[[Float]]]) {
        guard Self.fits(format, scores, samples) else { return nil }
        let classes = MRZLayout.classes(format)
        var zeros: [[Float]] = [], os: [[Float]] = []
        for line in classes.indices {
            for position in classes[line].indices {
                let cell = scores[line][position]
                let top = cell.indices.max { cell[$0] < cell[$1] }!
                guard cell[top] >= Self.knownMinimum else { continue }
                switch classes[line][position] {
                case .digit, .digitOrFiller: if top == Self.zero.index { zeros.append(samples[line][position]) }
                case .letter, .letterOrFiller: if top == Self.letterO.index { os.append(samples[line][position]) }
                case .any, .sex: break
                }
            }
        }
        guard zeros.count >= Self.knownZerosMinimum else { return nil }
        zeroMean = Self.mean(zeros)
        spread = zeros.indices.map { index in
            Self.distance(zeros[index], Self.mean(zeros.indices.filter { $0 != index }.map { zeros[$0] }))
        }.max() ?? 0
        oMean = os.isEmpty ? nil : Self.mean(os)
    }

    /// Whether `sample` is one of the document's `0`s as far as its pixels tell.
    func vouches(_ sample: [Float]) -> Bool {
        let (spreads, fromO) = measure(sample)
        return spreads <= Self.spreadFactor && (fromO.map { $0 >= Self.zeroOMargin } ?? true)
    }

    /// `sample`'s distance to the document's `0`s in their spreads, and its distance to the
    /// document's `O`s over its distance to the `0`s (nil: it prints no `O`). The lab's `vouch`
    /// measures these on drawn documents whose truth is known.
    package func measure(_ sample: [Float]) -> (spreads: Float, fromO: Float?) {
        let toZeros = Self.distance(sample, zeroMean)
        return (spread > 0 ? toZeros / spread : .infinity, oMean.map { Self.distance(sample, $0) / max(toZeros, 1e-6) })
    }

    /// The positions (line, position) of `format`'s cells that may hold a digit or a letter, read
    /// `0` and vouched for. `scores`: each cell's 37 probabilities (MRZGlyph order); `samples`:
    /// each cell's normalized pixels (`CellSampler`).
    static func vouchedZeros(format: MRZFormat, scores: [[[Float]]], samples: [[[Float]]]) -> Set<[Int]> {
        MRZDocumentPrint(format: format, scores: scores, samples: samples)?.vouchedZeros(format: format, scores: scores, samples: samples) ?? []
    }

    /// `vouchedZeros` with this print (the lines it was made from).
    func vouchedZeros(format: MRZFormat, scores: [[[Float]]], samples: [[[Float]]]) -> Set<[Int]> {
        let classes = MRZLayout.classes(format)
        var vouched: Set<[Int]> = []
        for line in classes.indices where line < scores.count {
            for position in classes[line].indices where classes[line][position] == .any && position < scores[line].count {
                let cell = scores[line][position]
                if cell.indices.max(by: { cell[$0] < cell[$1] }) == Self.zero.index, vouches(samples[line][position]) {
                    vouched.insert([line, position])
                }
            }
        }
        return vouched
    }

    /// `scores` with each cell whose likeliest character is `0`, partly "not OCR-B" (at least
    /// `foreignToRestore`) and vouched for, read as the document's own `0`s: its probabilities
    /// scaled to sum to one. And which cells those were.
    static func restored(format: MRZFormat, scores: [[[Float]]], samples: [[[Float]]]) -> (scores: [[[Float]]], cells: Set<[Int]>) {
        MRZDocumentPrint(format: format, scores: scores, samples: samples)?.restored(scores: scores, samples: samples) ?? (scores, [])
    }

    /// `restored` with this print (the lines it was made from).
    func restored(scores: [[[Float]]], samples: [[[Float]]]) -> (scores: [[[Float]]], cells: Set<[Int]>) {
        var out = scores, cells: Set<[Int]> = []
        for line in scores.indices where line < samples.count {
            for position in scores[line].indices where position < samples[line].count {
                let cell = scores[line][position]
                let total = cell.reduce(0, +)
                guard 1 - total >= Self.foreignToRestore, total > 0, cell.indices.max(by: { cell[$0] < cell[$1] }) == Self.zero.index,
                      vouches(samples[line][position]) else { continue }
                out[line][position] = cell.map { $0 / total }
                cells.insert([line, position])
            }
        }
        return (out, cells)
    }

    private static func fits(_ format: MRZFormat, _ scores: [[[Float]]], _ samples: [[[Float]]]) -> Bool {
        scores.count == format.lineCount && samples.count == format.lineCount
            && zip(scores, samples).allSatisfy { lineScores, lineSamples in
                lineScores.count == format.lineLength && lineSamples.count == format.lineLength
                    && lineScores.allSatisfy { $0.count == MRZGlyph.count } && lineSamples.allSatisfy { $0.count == CellSampler.size }
            }
    }

    static func mean(_ samples: [[Float]]) -> [Float] {
        guard let first = samples.first else { return [] }
        var sum = [Float](repeating: 0, count: first.count)
        for sample in samples { for index in sum.indices { sum[index] += sample[index] } }
        return sum.map { $0 / Float(samples.count) }
    }

    static func distance(_ a: [Float], _ b: [Float]) -> Float {
        var sum: Float = 0
        for index in a.indices where index < b.count { sum += (a[index] - b[index]) * (a[index] - b[index]) }
        return sum.squareRoot()
    }
}
