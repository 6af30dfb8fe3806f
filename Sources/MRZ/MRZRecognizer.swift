import ImageCodecs

/// Finds and reads the MRZ in a photo of a data page: the zone (dark blobs → the dominant text
/// direction → chains → two or three parallel lines of the MRZ's lengths), each line's cells
/// (fitted to the fixed pitch, perspective allowed), each cell upright and normalized, classified,
/// then decoded with ICAO 9303-3's rules — both ways round, so an upside-down page reads too.
public struct MRZRecognizer: Sendable {
    /// What reading an image gave.
    public struct Result: Sendable {
        public var reading: MRZReading?
        /// Whether something that looks like an MRZ was there (read or not).
        public var found: Bool
        /// Why nothing was claimed although the search may have seen a zone: its time ran out, or
        /// the zone was not one document's.
        public var refusal: Refusal?
        /// Access keys for the chip to confirm (issue 50): the best readings whose key passes its
        /// check digits and the format's rules, best first, at most `MRZKeyCandidate.maximum`.
        /// Claimed by no verdict: a wrong one costs one failed BAC or PACE.
        public var candidates: [MRZKeyCandidate]

        public init(reading: MRZReading?, found: Bool, refusal: Refusal? = nil, candidates: [MRZKeyCandidate] = []) {
            (self.reading, self.found, self.refusal, self.candidates) = (reading, found, refusal, candidates)
        }
    }

    /// Why a search claimed nothing, with a stable code (`gbgbridge mrz --json`'s `reason`).
    public enum Refusal: String, Sendable, Codable, Hashable {
        /// The image's search went past its time budget: `found` is false, nothing is claimed.
        case budgetExceeded = "SEARCH_BUDGET_EXCEEDED"
        /// More MRZ-like lines side by side at one pitch than any format has (two documents'
        /// zones interleaved, a third line inside a TD3's), or a zone's lines disagreeing in
        /// pitch, height, slant or where they start and end: no one document's MRZ.
        case ambiguousZone = "AMBIGUOUS_ZONE"
    }

    /// The search's wall-clock budget for a photo or a scan given as a file (`gbgbridge mrz`).
    public static let imageBudget: Duration = .seconds(2) * buildSlowdown
    /// The budget for one camera frame: the frames keep coming, and a frame that cannot be read
    /// in this time is not worth holding the next one up for (a 1280×720 frame takes 20–130 ms).
    public static let frameBudget: Duration = .milliseconds(800) * buildSlowdown

    /// The budgets are a release build's; a debug build (the tests') reads 50–100 times slower and
    /// gets 50 times the time, so that what a test reads does not depend on the build.
    static var buildSlowdown: Int {
        #if DEBUG
        return 50
        #else
        return 1
        #endif
    }

    let classifier: GlyphClassifier
    /// A second reader, asked only when the first claims no key (`read`): a model taught real
    /// print down to 5–7-pixel pitches (`Resources/glyph-model-small.bin`), which the first —
    /// surer of full-size print — refuses more of. Nil: the first reader alone.
    let secondOpinion: GlyphClassifier?
    let policy: MRZDecoder.Policy
    /// The longest side localization works on (larger photos are shrunk for it; cells are
    /// sampled from the full image).
    let workingSide = 1600

    public init?() {
        guard let classifier = GlyphClassifier.standard else { return nil }
        self.init(classifier: classifier, secondOpinion: GlyphClassifier.secondOpinion)
    }

    /// `classifier` alone, or with `secondOpinion` asked where it claims no key.
    package init(classifier: GlyphClassifier, secondOpinion: GlyphClassifier? = nil) {
        self.init(classifier: classifier, secondOpinion: secondOpinion, policy: .standard)
    }

    /// The standard recognizer with some verdict thresholds changed (the lab's `analyze`: which
    /// rule refused a reading).
    package func loosened(keyMinimum: Float? = nil, keyUndetectableRatio: Float? = nil, keyForeignMaximum: Float? = nil,
                          validForeignMaximum: Float? = nil, smallGlyphHeight: Float? = nil, keyForeignPair: Float? = nil,
                          smallLookAlikeHeight: Float? = nil, documentPrint: Bool? = nil, smallFloorRivalRatio: Float? = nil,
                          validMinimum: Float? = nil, validUncoveredMinimum: Float? = nil, candidatesFollowLaw: Bool? = nil,
                          doubtfulOsMaximum: Int? = nil) -> MRZRecognizer {
        var policy = self.policy
        if let doubtfulOsMaximum { policy.doubtfulOsMaximum = doubtfulOsMaximum }
        if let candidatesFollowLaw { policy.candidatesFollowLaw = candidatesFollowLaw }
        if let validMinimum { policy.validMinimum = validMinimum }
        if let validUncoveredMinimum { policy.validUncoveredMinimum = validUncoveredMinimum }
        if let smallFloorRivalRatio { policy.smallFloorRivalRatio = smallFloorRivalRatio }
        if let documentPrint { policy.documentPrintVouches = documentPrint }
        if let smallLookAlikeHeight { policy.smallLookAlikeHeight = smallLookAlikeHeight }
        if let keyForeignPair { policy.keyForeignPair = keyForeignPair }
        if let smallGlyphHeight { policy.smallGlyphHeight = smallGlyphHeight }
        if let keyMinimum { policy.keyMinimum = keyMinimum }
        if let keyUndetectableRatio { policy.keyUndetectableRatio = keyUndetectableRatio }
        if let keyForeignMaximum { policy.keyForeignMaximum = keyForeignMaximum }
        if let validForeignMaximum { policy.validForeignMaximum = validForeignMaximum }
        return MRZRecognizer(classifier: classifier, secondOpinion: secondOpinion, policy: policy)
    }

    init(classifier: GlyphClassifier, secondOpinion: GlyphClassifier? = nil, policy: MRZDecoder.Policy) {
        self.classifier = classifier
        self.secondOpinion = secondOpinion
        self.policy = policy
    }

    /// A camera frame (or any picture) read in its luma.
    public func read(_ image: ImageCodecs.RGBImage, budget: Duration = MRZRecognizer.imageBudget) -> Result {
        read(GrayImage(image), budget: budget)
    }

    /// A photo or a scan of a document (`gbgbridge mrz`, `read --mrz-from-image`) read in its
    /// lightest channel (`GrayImage(lightestChannelOf:)`): colour inks over the zone — a SPECIMEN
    /// stamp, a UV capture's glow — go pale, the zone's black stays. Camera frames keep luma: on
    /// the drawn camera tiers the lightest channel read no better (tiny 91.5 → 89.5 %), on the real
    /// documents' photos and their variants much better (Docs/mrz.md, "Colour inks").
    public func read(photo image: ImageCodecs.RGBImage, budget: Duration = MRZRecognizer.imageBudget) -> Result {
        read(GrayImage(lightestChannelOf: image), budget: budget)
    }

    /// Reads `gray` within `budget` (wall clock): past it the search stops and claims nothing.
    ///
    /// Where the first reader found a zone and claimed no key, the second opinion (when there is
    /// one) reads it again in what is left of the budget (`withSecondOpinion`).
    /// Where the zone could be is found once: the second reads the first's hypotheses.
    public func read(_ gray: GrayImage, budget: Duration = MRZRecognizer.imageBudget) -> Result {
        let deadline = Deadline(after: budget)
        let searched = Searched(gray, workingSide: workingSide, deadline: deadline)
        let first = readAlone(searched, deadline: deadline)
        guard let secondOpinion, first.refusal == nil, first.found, first.reading?.accessKeyValid != true, !deadline.expired else { return first }
        let second = MRZRecognizer(classifier: secondOpinion, policy: policy).readAlone(searched, deadline: deadline)
        return Self.withSecondOpinion(first, second)
    }

    /// One reader's reading of a searched photo, by `deadline`.
    private func readAlone(_ searched: Searched, deadline: Deadline) -> Result {
        var best: (reading: MRZReading, score: Double, retry: Bool)?
        var keys = Set<[String]>()
        var primaryKeys = Set<[String]>()
        var candidates = CandidatePool()
        let outcome = eachHypothesis(searched, deadline: deadline) { cells, retry, capHeight in
            var rank = -1.0
            let decoders = decoders(cells, capHeight: capHeight)
            for (decoder, scores, _) in decoders {
                candidates.add(decoder.keyCandidates(scores))
                if policy.candidatesFollowLaw, !candidates.lawHeld, !decoder.nationalNumberRule(scores, lenient: true).allowed.isEmpty { candidates.lawHeld = true }
            }
            for reading in decoded(decoders, cells, retry: retry) {
                let key = reading.key
                if reading.accessKeyValid { keys.insert(key) }
                if !retry, Self.keyChecksHold(reading) { primaryKeys.insert(key) }
                let score = Self.score(reading)
                rank = max(rank, score)
                if best == nil || score > best?.score ?? 0 { best = (reading, score, retry) }
            }
            return (best?.reading.valid == true, rank)
        }
        if let refusal = outcome.refusal { return Result(reading: nil, found: refusal == .ambiguousZone, refusal: refusal) }
        let reading = best.map { best in
            Self.withoutConflict(best.retry ? Self.withoutPrimaryConflict(best.reading, primaryKeys: primaryKeys) : best.reading, keysClaimed: keys)
        }
        return Result(reading: reading, found: outcome.found, candidates: candidates.ranked(first: best?.reading))
    }

    /// The key candidates of every hypothesis tried: one entry a key (its best score), the best
    /// reading's own key first when its check digits hold, the rest by score.
    struct CandidatePool {
        private var byKey: [[String]: MRZKeyCandidate] = [:]
        /// Some hypothesis read the number without contradicting its issuer's law (a German
        /// passport's, `MRZDecoder.nationalNumberRule(_:lenient:)`).
        var lawHeld = false

        mutating func add(_ candidates: [MRZKeyCandidate]) {
            for candidate in candidates where candidate.score > byKey[candidate.key]?.score ?? -1 { byKey[candidate.key] = candidate }
        }

        /// A hypothesis whose cells read another issuer (a line a cell off) offers numbers the
        /// best reading's issuer never prints (`CO1XQ0T47` beside Germany's `C01X00T47`): those go,
        /// when the best reading's own number keeps that issuer's law.
        ///
        /// And when some hypothesis read the number within the law while the best reading breaks it
        /// (a German temporary passport at 5-pixel pitch: `A<0000000` read within the law at 0.67,
        /// a shifted hypothesis's `AW000000O` at 0.72 — a `W` and an `O` whose values cancel), the
        /// lawful candidates go first and the others after them: a real German number is lawful,
        /// and another generator's unlawful one stays among the candidates.
        func ranked(first reading: MRZReading?) -> [MRZKeyCandidate] {
            var ranked = byKey.values.sorted { $0.score != $1.score ? $0.score > $1.score : $0.key.joined() < $1.key.joined() }
            func lawful(_ number: String) -> Bool {
                guard let reading else { return true }
                return MRZDecoder.nationalNumberAllows(number, documentCode: reading.documentCode, issuer: reading.issuingState)
            }
            var lawFirst = false
            if let reading, lawful(reading.documentNumber) {
                ranked.removeAll { !lawful($0.documentNumber) }
            } else if lawHeld, ranked.contains(where: { lawful($0.documentNumber) }) {
                ranked = ranked.filter { lawful($0.documentNumber) } + ranked.filter { !lawful($0.documentNumber) }
                lawFirst = true
            }
            if !lawFirst, let reading, ["documentNumber", "dateOfBirth", "dateOfExpiry"].allSatisfy({ reading.checkDigits[$0] == true }),
               let index = ranked.firstIndex(where: { $0.key == reading.key }) {
                ranked.insert(ranked.remove(at: index), at: 0)
            }
            return Array(ranked.prefix(MRZKeyCandidate.maximum))
        }
    }

    /// Two readings of one photo, each passing every key rule, that disagree on the key (say a
    /// hypothesis and a cap height tried again): one of them is wrong, and nothing says which —
    /// neither verdict is claimed. (The search stops at the first `valid` reading, so this
    /// guards the key-only verdicts.)
    static func withoutConflict(_ reading: MRZReading, keysClaimed keys: Set<[String]>) -> MRZReading {
        guard keys.count > 1 else { return reading }
        var reading = reading
        reading.accessKeyValid = false
        reading.valid = false
        return reading
    }

    /// A key claimed only on a second look — a cap height chosen again, cells shifted — where the
    /// search's own hypotheses read another key whose check digits hold (claimed or not): one of
    /// them is wrong, and the second look chose its height or cells for the check digits to
    /// hold. No verdict. (Seed 8585, hard tier, image 80: four looks read `DGOBUA58K`, refused; a
    /// cap height tried again read `DG0BUA58E` — an `O` as `0` and a `K` as `E`, cancelling — and
    /// claimed it.)
    static func withoutPrimaryConflict(_ reading: MRZReading, primaryKeys: Set<[String]>) -> MRZReading {
        guard reading.accessKeyValid, primaryKeys.contains(where: { $0 != reading.key }) else {
            return reading
        }
        var reading = reading
        reading.accessKeyValid = false
        reading.valid = false
        return reading
    }

    static func keyChecksHold(_ reading: MRZReading) -> Bool {
        ["documentNumber", "dateOfBirth", "dateOfExpiry"].allSatisfy { reading.checkDigits[$0] == true }
    }

    /// The reading whose key checks hold with the strongest evidence, and that evidence, with no
    /// verdict threshold applied (the lab's `evidence`): over the same hypotheses `read` tries.
    package func bestEvidence(_ gray: GrayImage) -> (reading: MRZReading, evidence: MRZKeyEvidence)? {
        var best: (reading: MRZReading, evidence: MRZKeyEvidence)?
        var bestValid = false
        _ = eachHypothesis(gray, deadline: Deadline(after: .seconds(3600))) { cells, retry, capHeight in
            // Ranked, and stopped, as `read` ranks and stops.
            let decoders = decoders(cells, capHeight: capHeight)
            let readings = decoded(decoders, cells, retry: retry)
            bestValid = bestValid || readings.contains(where: \.valid)
            for (decoder, scores, _) in decoders {
                guard let (reading, evidence) = decoder.evidence(scores, contrast: cells.contrast), evidence.checksHold else { continue }
                if best == nil || evidence.posteriors[0] > best?.evidence.posteriors[0] ?? 0 { best = (reading, evidence) }
            }
            return (bestValid, readings.map(Self.score).max() ?? -1)
        }
        return best
    }

    /// Every format's reading of one hypothesis's cells. A cap height chosen again (`retry`) may
    /// open the key (its check digits still have to hold); what no check digit covers it does not
    /// vouch for — cut at another height, a `T` was surely read `I` in a name, a `W` `L` in
    /// optional data — so its readings are never `valid`.
    ///
    /// Capitals under `Policy.smallGlyphHeight` pixels in the photo itself (enlarged or not) are
    /// held to the stricter key rules of `Policy.forSmallGlyphs`: at 5–8 pixels three misreadings
    /// that cancel in one check digit were each read surely (`small` tier, a visa's `GFYJU3UMM`
    /// read `SKFJU3UMM`).
    private func decoded(_ decoders: [(decoder: MRZDecoder, scores: [[[Float]]], restored: Bool)], _ cells: CellEvidence,
                         retry: Bool) -> [MRZReading] {
        decoders.flatMap { decoder, scores, restored in
            // The classifier's own reading first, then (when the document's `0`s gave some cells
            // back their "not OCR-B" share) the document's, never `valid`: a reading that is
            // `valid` as the classifier read it still ends the search as it did.
            var readings: [MRZReading] = []
            if var reading = decoder.decode(cells.scores, contrast: cells.contrast) {
                if retry { reading.valid = false }
                readings.append(reading)
            }
            if restored, var reading = decoder.decode(scores, contrast: cells.contrast) {
                reading.valid = false
                readings.append(reading)
            }
            return readings
        }
    }

    /// What one hypothesis's cells show: each cell's probabilities (37, MRZGlyph order), its
    /// contrast over its line's median, and its normalized pixels.
    struct CellEvidence {
        var scores: [[[Float]]]
        var contrast: [[Float]]
        var samples: [[[Float]]]
    }

    /// A decoder for each format the cells' lines could be, under the policy for capitals
    /// `capHeight` pixels tall, with the cells' probabilities it reads; at small capitals the
    /// document's own `0`s vouch for the number's and give back what the classifier called "not
    /// OCR-B" in cells that look like them (`MRZDocumentPrint`; `restored`: some were).
    private func decoders(_ cells: CellEvidence, capHeight: Float) -> [(decoder: MRZDecoder, scores: [[[Float]]], restored: Bool)] {
        let policy = self.policy.forCapHeight(capHeight)
        return MRZFormat.candidates(lines: cells.scores.count, length: cells.scores[0].count).map { format in
            var decoder = MRZDecoder(format: format, policy: policy)
            guard policy.zeroOFloor != nil, policy.documentPrintVouches,
                  let print = MRZDocumentPrint(format: format, scores: cells.scores, samples: cells.samples) else { return (decoder, cells.scores, false) }
            decoder.vouchedZeros = print.vouchedZeros(format: format, scores: cells.scores, samples: cells.samples)
            let (scores, restored) = print.restored(scores: cells.scores, samples: cells.samples)
            return (decoder, scores, !restored.isEmpty)
        }
    }

    /// Cap heights tried again, as factors of the measured one, on the hypothesis whose reading
    /// ranked best when none read `valid`: the cap height is the locator's least certain figure
    /// (on the hard tier it spreads from 0.83 to 1.24 of the truth), and a cell cut too tall makes
    /// a squat `0` of an `O`. Each is decoded under the same key verdict as any hypothesis, and
    /// never earns `valid`.
    static let capHeightRetries: [Float] = [0.92, 0.85, 1.08]

    /// Cell shifts tried on the best-ranked hypotheses when nothing read `valid` (see
    /// `CellGeometry.shifted`), every line together, then each line alone by one cell either way;
    /// like a cap height chosen again, they may give a key, never `valid`.
    static let cellShifts = [1, -1, 2, -2]
    /// How many of the best-ranked hypotheses are read again shifted.
    static let shiftedHypotheses = 2

    /// Each hypothesis's cell probabilities and contrasts, until `body` says stop; `body` also
    /// ranks what the hypothesis read, and when nothing stopped the search, the best-ranked one is
    /// read again at the `capHeightRetries` (`body`'s third argument true). The photo is read inside a border
    /// (`GrayImage.padded`): a quarter of its shorter side, 4 to 48 pixels — about a capital's
    /// height round a crop of the MRZ lines alone, a few per cent of a frame. A small photo is
    /// enlarged first (`Search.enlarged`). Past `deadline`, or when the zone is not one document's,
    /// the search ends with a refusal.
    private func eachHypothesis(_ photo: GrayImage, deadline: Deadline,
                                _ body: (CellEvidence, Bool, Float) -> (stop: Bool, rank: Double)) -> (found: Bool, refusal: Refusal?) {
        eachHypothesis(Searched(photo, workingSide: workingSide, deadline: deadline), deadline: deadline, body)
    }

    private func eachHypothesis(_ searched: Searched, deadline: Deadline,
                                _ body: (CellEvidence, Bool, Float) -> (stop: Bool, rank: Double)) -> (found: Bool, refusal: Refusal?) {
        let (search, enlargement) = (searched.search, searched.enlargement)
        if let refusal = search.refusal { return (false, refusal) }
        let gray = search.image
        let memo = CellMemo(raw: searched.rawCells)
        // `known`: lines already read with these very cells (a shift of one line leaves the others).
        func evaluate(_ geometry: CellGeometry, measured: [[[Float]]]? = nil, retry: Bool = false,
                      known: [Int: CellReadings] = [:]) -> (stop: Bool, rank: Double, probabilities: [[[Float]]], cells: [CellReadings]) {
            let cells = geometry.lines.indices.map { known[$0] ?? cellReadings(gray, geometry.lines[$0], memo: memo) }
            var probabilities = cells.map(\.probabilities)
            // A glyph that at the measured cap height is not OCR-B (another font, a smudge) stays
            // so at a height chosen again: cut squatter or taller, a DejaVu `0` with its slash
            // was read as OCR-B's `2`, and with an `O` read `0` beside it the number's check
            // digit held on a wrong number (font tier, seed 9303, image 204).
            if let measured {
                for (line, cells) in measured.enumerated() where line < probabilities.count {
                    for (position, original) in cells.enumerated() where position < probabilities[line].count
                        && 1 - original.reduce(0, +) > policy.keyForeignMaximum {
                        probabilities[line][position] = original
                    }
                }
            }
            // The capitals' height in the photo's own pixels (the median line's first cell).
            let heights = geometry.lines.compactMap { $0.first?.capHeight }.sorted()
            let capHeight = (heights.isEmpty ? 0 : heights[heights.count / 2]) / enlargement
            let (stop, rank) = body(CellEvidence(scores: probabilities, contrast: cells.map(\.contrast), samples: cells.map(\.samples)),
                                    measured != nil || retry, capHeight)
            return (stop, rank, probabilities, cells)
        }
        var found = false
        var ranked: [(geometry: CellGeometry, rank: Double, probabilities: [[[Float]]])] = []
        for hypothesis in search.hypotheses {
            guard !deadline.expired else { return (false, .budgetExceeded) }
            found = true
            let (stop, rank, probabilities, _) = evaluate(hypothesis.geometry)
            if stop { return (true, nil) }
            if rank >= 0 { ranked.append((hypothesis.geometry, rank, probabilities)) }
        }
        ranked.sort { $0.rank > $1.rank }
        guard let promising = ranked.first else { return (found, nil) }
        for factor in Self.capHeightRetries {
            guard !deadline.expired else { return (false, .budgetExceeded) }
            if evaluate(promising.geometry.scalingCapHeight(by: factor), measured: promising.probabilities).stop { return (found, nil) }
        }
        // Shifted: the hypotheses whose cells were read most surely (a line read a cell or two off
        // reads each character surely and no check digit; one over a pattern reads nothing surely).
        func sureness(_ probabilities: [[[Float]]]) -> Float {
            let tops = probabilities.flatMap { $0 }.map { $0.max() ?? 0 }
            return tops.isEmpty ? 0 : tops.reduce(0, +) / Float(tops.count)
        }
        for candidate in ranked.sorted(by: { sureness($0.probabilities) > sureness($1.probabilities) }).prefix(Self.shiftedHypotheses) {
            var best: (geometry: CellGeometry, rank: Double, cells: [CellReadings]?) = (candidate.geometry, candidate.rank, nil)
            for shift in Self.cellShifts {
                guard !deadline.expired else { return (found, nil) }
                let geometry = candidate.geometry.shifted(by: shift)
                let (stop, rank, _, cells) = evaluate(geometry, measured: nil, retry: true)
                if stop { return (found, nil) }
                if rank > best.rank { best = (geometry, rank, cells) }
            }
            // Then each line alone a cell either way from the best of those, kept when it ranks
            // higher: lines whose starts were each off by another count (only that line read
            // again). Not when a key was claimed already: the search's time is the kiosk's.
            guard best.geometry.lines.count > 1, max(best.rank, promising.rank) < Self.keyClaimedRank else { continue }
            for line in best.geometry.lines.indices {
                var better = best
                for shift in [1, -1] {
                    guard !deadline.expired else { return (found, nil) }
                    let geometry = best.geometry.shifted(line: line, by: shift)
                    var known: [Int: CellReadings] = [:]
                    for (index, cells) in (best.cells ?? []).enumerated() where index != line { known[index] = cells }
                    let (stop, rank, _, cells) = evaluate(geometry, measured: nil, retry: true, known: known)
                    if stop { return (found, nil) }
                    if rank > better.rank { better = (geometry, rank, cells) }
                }
                best = better
            }
        }
        return (found, nil)
    }

    /// Every format's reading of one geometry (the lab's `analyze`: what the cells say where the
    /// locator, or the truth, puts them).
    package func readings(_ gray: GrayImage, _ geometry: CellGeometry) -> [MRZReading] {
        let cells = geometry.lines.map { cellReadings(gray, $0) }
        let (scores, contrast) = (cells.map(\.probabilities), cells.map(\.contrast))
        return MRZFormat.candidates(lines: scores.count, length: scores[0].count).compactMap {
            MRZDecoder(format: $0, policy: policy).decode(scores, contrast: contrast)
        }
    }

    /// Each cell's probabilities. A character cut by the frame's edge is not read: the edge's
    /// pixels, repeated, make a confident wrong one (a `B` half out of the frame read as `M` with
    /// 0.999, and a correction elsewhere made the number's check digit hold: a false key). Looking
    /// at an unsure cell again a tenth of a pitch either way and averaging was tried: the right
    /// readings lost more confidence than the wrong ones (hard tier, twice the refusals).
    func probabilities(_ gray: GrayImage, _ cells: [CellGeometry.Cell]) -> [[Float]] {
        cellReadings(gray, cells).probabilities
    }

    /// One line's cells as read: each one's probabilities, its contrast over the line's median, its
    /// normalized pixels.
    package typealias CellReadings = (probabilities: [[Float]], contrast: [Float], samples: [[Float]])

    /// Each cell's probabilities, contrast over its line's median and pixels, from one sampling of the line.
    /// With `memo`, a cell sampled or classified before in this photo is not again (`CellMemo`).
    package func cellReadings(_ gray: GrayImage, _ cells: [CellGeometry.Cell]) -> CellReadings {
        cellReadings(gray, cells, memo: nil)
    }

    func cellReadings(_ gray: GrayImage, _ cells: [CellGeometry.Cell], memo: CellMemo?) -> CellReadings {
        let raw = cells.map { memo?.raw.values(gray, $0) ?? CellSampler.raw(gray, $0) }
        let (samples, contrast, levels) = CellSampler.sampleAndContrast(gray, cells, raw: raw)
        let probabilities = cells.indices.map { index in
            guard CellSampler.inside(gray, cells[index]) else { return [Float](repeating: 1 / Float(MRZGlyph.count), count: MRZGlyph.count) }
            guard let memo else { return classifier.probabilities(samples[index]) }
            return memo.probabilities(cells[index], level: levels[index]) { classifier.probabilities(samples[index]) }
        }
        return (probabilities, contrast, samples)
    }

    /// A rank at least this high: the reading claimed its key (`score`).
    static let keyClaimedRank = 50.0

    /// A reading's rank among the hypotheses: verdicts first, then check digits, then confidence.
    static func score(_ reading: MRZReading) -> Double {
        (reading.valid ? 100 : 0) + (reading.accessKeyValid ? keyClaimedRank : 0) + Double(reading.checkDigits.values.filter { $0 }.count) * 5
            + reading.confidence
    }

    package struct Hypothesis {
        package var geometry: CellGeometry
    }

    /// Every way the image could hold an MRZ: each candidate block, at each line length its
    /// shape allows, both ways round. Coordinates of the full image as given: never turned a
    /// quarter, as `read` turns a page whose text runs down it. (No time budget: the lab's.)
    package static func hypotheses(_ gray: GrayImage, workingSide: Int = 1600) -> [Hypothesis] {
        Search(gray, workingSide: workingSide, deadline: Deadline(after: .seconds(3600)), mayTurn: false).hypotheses
    }

    /// What localization saw, in words (the lab's `locate`).
    package static func diagnose(_ gray: GrayImage, workingSide: Int = 1600) -> String {
        let factor = max(1, Int((Float(max(gray.width, gray.height)) / Float(workingSide)).rounded(.up)))
        let work = gray.downscaled(by: factor)
        let radius = max(7, min(work.width, work.height) / 48)
        let components = Components.label(Components.darkMask(work, radius: radius, margin: 10), width: work.width, height: work.height)
        let blobs = LineFinder.characters(components, imageHeight: work.height)
        let (angle, share) = LineFinder.dominantAngle(blobs)
        let lines = LineFinder.lines(blobs, angle: angle).filter { $0.count >= 12 }
        let blocks = MRZBlock.candidates(LineFinder.lines(blobs, angle: angle))
        return "\(components.count) components, \(blobs.count) blobs, angle \(angle * 180 / .pi)° (share \(share)), long lines "
            + lines.map { "\($0.count)@\(Int($0.spacing))" }.joined(separator: " ") + "; blocks " + blocks.map { "\($0.lines.map(\.count))" }.joined(separator: " ")
    }

}

extension MRZBlock {
    /// The block in the coordinates of an image `factor` times larger.
    func scaled(by factor: Float) -> MRZBlock {
        guard factor != 1 else { return self }
        return MRZBlock(lines: lines.map { line in
            TextLine(points: line.points.map { (x: $0.x * factor, y: $0.y * factor, width: $0.width * factor, height: $0.height * factor) },
                     direction: line.direction)
        }, score: score, ambiguous: ambiguous)
    }
}
