/// From the classifier's probabilities for every cell to an `MRZReading`: each position's best
/// character among those its field allows, the check digits, a small correction budget, and the
/// verdicts.
///
/// The correction budget (ICAO check digits catch any single substitution except between
/// characters whose values differ by a multiple of 10): a check digit that fails may be repaired
/// by replacing **one** character of its group with that position's runner-up, only when the
/// runner-up had at least `minimumRunnerUp` probability and exactly one such replacement makes the
/// group (and the composite) hold. At most `maximumCorrections` per MRZ. A corrected character
/// still needs the margins below to earn a verdict.
struct MRZDecoder {
    /// The thresholds of the verdicts (Docs/mrz.md, "Verdicts", says how they were calibrated).
    struct Policy: Sendable {
        /// Every access-key character: at least this probability.
        var keyMinimum: Float = 0.3
        /// Every access-key character over a character its check digit cannot tell it from
        /// (same value modulo 10: G/6, S/8, Z/5, K/<, Q/6 …): that one at most this fraction as
        /// likely; and each key group's strongest rival its check digit accepts, the same. 0.2
        /// until a fresh-seed run found a `K` read as `<` with its twin at 0.17 (Docs/mrz.md,
        /// "Verdicts"); 0.1 costs half a point of hard-tier keys.
        var keyUndetectableRatio: Float = 0.1
        /// Every other character: at least this probability and this margin over its runner-up.
        var validMinimum: Float = 0.8
        var validMargin: Float = 0.5
        /// The characters no check digit covers (names, states, sex, the document code, a visa's
        /// optional data): each at least this for `valid` (the others `validMinimum`). At 0.8 a
        /// name's `I` was read `T` at just over it, the rest sure (hard tier: seed 7474 image 46
        /// `CHIOMA`, seed 8585 image 59 `MAI`); 0.85 refused both. Costs exact MRZs, never keys.
        var validUncoveredMinimum: Float = 0.9
        /// The key candidates follow an issuer's law for its numbers unless a reading contradicts
        /// it surely (`nationalNumberRule(_:lenient:)`); false: only where the best reading keeps it.
        var candidatesFollowLaw = true
        var minimumRunnerUp: Float = 0.08
        var maximumCorrections = 2
        /// Where a field allows both a digit and the letter it looks like in OCR-B (document
        /// numbers, optional data), each is taken as at least this fraction as likely as the
        /// other, however sure the classifier: at 12-pixel characters it called a `0` an `O` with
        /// 0.9996, a correction then "repaired" a `6` into a `4` that compensated, and every check
        /// digit held on a wrong number (hard tier, benchmark). Only the check digits may choose
        /// between look-alikes, and only when exactly one choice makes them hold.
        var lookAlikeFloor: Float = 0.3
        /// The most a key character's cell may be "not OCR-B" (the classifier's 38th output: a
        /// glyph of another font, a smudge, two characters run together), and any other
        /// character's for `valid`. A `6` in DejaVu Sans Mono Bold was read as OCR-B's `G` at 0.98
        /// — same check value, a wrong number every check digit accepted (issue 41).
        var keyForeignMaximum: Float = 0.5
        /// Capitals under this many pixels in the photo itself are read under `forSmallGlyphs`.
        var smallGlyphHeight: Float = 8
        /// The key rules for small capitals: every key character at 0.6 at least, every rival a
        /// twentieth as likely at most.
        var forSmallGlyphs: Policy {
            var policy = self
            policy.keyMinimum = max(keyMinimum, 0.6)
            policy.keyUndetectableRatio = min(keyUndetectableRatio, 0.05)
            policy.floorRivalRatio = smallFloorRivalRatio ?? keyUndetectableRatio
            policy.smallGlyphHeight = 0
            return policy
        }
        /// Under `smallGlyphHeight`: the twentieth holds the classifier's own rivals (its
        /// probabilities as it gave them), and a rival that rests on the look-alike floor — two
        /// cells of `2`/`Z`, `1`/`I`, `8`/`B` … each floored at 0.3 whose changes cancel, 0.09 — is
        /// held to this, the tenth it is held to at larger print. The floor says the classifier's
        /// word on a look-alike is not taken, at any size; the twentieth says a 5–8-pixel reading's
        /// sure misreadings can cancel (`GFYJU3UMM` read `SKFJU3UMM`). Two floors multiplied at the
        /// twentieth refused nearly every real document photographed at those sizes whose key
        /// holds two look-alikes (`ZU1234567`: `2U1Z34567` passes its check digit at 0.09).
        /// nil: one ratio for both (`keyUndetectableRatio`).
        var floorRivalRatio: Float?
        /// What `forSmallGlyphs` sets `floorRivalRatio` to, when not `keyUndetectableRatio` (the
        /// bench's `--floor-rival`; 0.05 is the single twentieth as before).
        var smallFloorRivalRatio: Float?
        var validForeignMaximum: Float = 0.05
        /// Capitals under this many pixels in the photo itself: `0` and `O` each at least
        /// `smallZeroOFloor` times the other (not `lookAlikeFloor`), so that two such cells whose
        /// changes cancel in a check digit are a rival over the tenth (0.35² ≈ 0.12). At 10–11
        /// pixels, blurred, OCR-B's `0` and `O` are a pixel apart in width and the classifier
        /// still called each surely: a TD1 card 360 pixels wide (`small` tier, seed 6262, image
        /// 270) had `322206099` claimed as `3222O6O99` (24 × 3 + 24 × 7 ≡ 0). Every look-alike
        /// pair raised so cost 18–26 points of the small tier (Docs/mrz.md, "Verdicts").
        var smallLookAlikeHeight: Float = 12
        var smallZeroOFloor: Float = 0.35
        /// The most cells of one key group read `O` where a `0` may stand, unsurely (under
        /// `sureO`; under `smallLookAlikeHeight` any, unvouched), for the group to earn a key. Each
        /// is a `0` at the floor's 0.3 of it, and three of them can cancel in the check digit where
        /// no two do (24 × (1 + 3 + 1) ≡ 0): a Swiss card's `XQ0Q00O00` was claimed as `XQ0Q0OOOO`,
        /// its three misread `0`s at 0.78–0.90, its best rival 0.09 and the chosen reading a
        /// quarter of all that the check digit accepts (zeros tier, seed 4646, tier place 4, image 125).
        var doubtfulOsMaximum = 1
        var sureO: Float = 0.95
        /// A look-alike in a field no check digit covers (a visa's optional data) counts towards
        /// `valid` only when the classifier itself read it at least this surely.
        var sureLookAlike: Float = 0.95
        /// The floor of `0`/`O` when it is not `lookAlikeFloor`.
        var zeroOFloor: Float?
        /// Whether a number's `0` the document's own `0`s vouch for is held to `lookAlikeFloor`
        /// instead (`MRZDocumentPrint`); off only to measure what it does (the bench's
        /// `--no-document-print`).
        var documentPrintVouches = true
        /// The policy for capitals `capHeight` pixels tall in the photo itself.
        func forCapHeight(_ capHeight: Float) -> Policy {
            var policy = capHeight < smallGlyphHeight ? forSmallGlyphs : self
            if capHeight < smallLookAlikeHeight { policy.zeroOFloor = max(policy.lookAlikeFloor, smallZeroOFloor) }
            return policy
        }
        /// Two unsure characters in one key group: one under `least`, another under `second`. A
        /// check digit is one equation; two unsure unknowns in it can be wrong together and still
        /// hold it — an `F` at a cell of contrast 0.26 read `Y` (0.45) and an `O` read `D` (0.73),
        /// their values compensating (seed 8181, hard tier, photographed again). Costs 8 of 1,130
        /// right hard-tier keys (Docs/mrz.md, "Verdicts").
        var keyUnsurePair: (least: Float, second: Float) = (0.5, 0.8)
        /// Two look-alike cells of one key group (0/O, 0/D, 8/B … in a field allowing both) each at
        /// least this much "not OCR-B": two doubtful glyphs the floor lets the check digit choose
        /// between are two unknowns in one check digit's equation. A font-tier
        /// page (seed 6262, image 227) had its number's `DD` in held-out fonts, each read `0`
        /// (0.89 and 0.67, not OCR-B 0.10 and 0.12, where plain cells are 0.00–0.01): the two
        /// changes cancel (13 × 7 + 13 × 3 ≡ 0), and the look-alike floor's rival, 0.3², sat just
        /// under the tenth (Docs/mrz.md, "Verdicts").
        var keyForeignPair: Float = 0.05

        static let standard = Policy()
    }

    let format: MRZFormat
    let policy: Policy
    /// Cells (line, position) whose `0` the document's own `0`s vouch for (`MRZDocumentPrint`):
    /// `lookAlikeFloor` for them, not `Policy.zeroOFloor`.
    var vouchedZeros: Set<[Int]> = []

    /// The look-alike floor at a cell of a field that allows digits and letters, then what the
    /// issuing state's numbers never hold there made impossible (`NationalNumberRule`).
    func floored(_ probabilities: Scores, line: Int, position: Int, national: NationalNumberRule) -> Scores {
        national.masked(Self.lookAlikesFloored(probabilities, policy.lookAlikeFloor, zeroO: vouchedZeros.contains([line, position]) ? nil : policy.zeroOFloor),
                        line: line, position: position)
    }

    /// One cell's probabilities, 37 of them (MRZGlyph order).
    typealias Scores = [Float]

    struct Pick {
        var glyph: MRZGlyph
        var probability: Float
        var runnerUp: MRZGlyph
        var runnerUpProbability: Float
        var probabilities: Scores
        /// The classifier's probabilities before the look-alike floor (what the issuer's law
        /// forbids made impossible all the same).
        var classifier: Scores = []
        /// The cell's "not OCR-B" share, from the classifier's own probabilities (the look-alike
        /// floor raises some of `probabilities`, and would hide it).
        var foreign: Float = 0
    }

    /// `faint`: cells washed out (glare). None of them counts towards `valid`. The access key's
    /// characters are watched by their check digits instead: refusing faint ones there cost 5–13
    /// points of hard-tier reads for no false accept avoided (Docs/mrz.md).
    func decode(_ scores: [[Scores]], faint: [[Bool]]? = nil) -> MRZReading? {
        decode(scores, contrast: faint.map { $0.map { $0.map { $0 ? 0 : 1 } } } ?? scores.map { $0.map { _ in 1 } })
    }

    /// `contrast`: each cell's contrast over its line's median (`CellSampler.contrastRatios`).
    func decode(_ scores: [[Scores]], contrast: [[Float]]) -> MRZReading? {
        guard let (text, picks, corrected) = decodeText(scores) else { return nil }
        return reading(text, picks: picks, corrected: corrected, groups: checkGroups(), contrast: contrast)
    }

    /// Each position's pick and the text after the correction budget (the verdicts come after).
    func decodeText(_ scores: [[Scores]]) -> (text: [[MRZGlyph]], picks: [[Pick]], corrected: Set<[Int]>)? {
        guard scores.count == format.lineCount, scores.allSatisfy({ $0.count == format.lineLength && $0.allSatisfy { $0.count == MRZGlyph.count } }) else {
            return nil
        }
        let classes = MRZLayout.classes(format)
        let national = nationalNumberRule(scores)
        var picks: [[Pick]] = []
        for (line, cells) in scores.enumerated() {
            picks.append(cells.enumerated().map { position, probabilities in
                let allowed = classes[line][position]
                var pick = Self.pick(allowed == .any ? floored(probabilities, line: line, position: position, national: national) : probabilities,
                                     allowed: allowed)
                pick.foreign = 1 - probabilities.reduce(0, +)
                pick.classifier = allowed == .any ? national.masked(probabilities, line: line, position: position) : probabilities
                return pick
            })
        }
        var text = picks.map { $0.map(\.glyph) }
        var corrected: Set<[Int]> = []
        let groups = checkGroups()
        // Corrections: one failing group at a time, at most the budget.
        for group in groups where corrected.count < policy.maximumCorrections {
            guard !holds(group, text) else { continue }
            var fixes: [(line: Int, position: Int, glyph: MRZGlyph, cost: Float)] = []
            for (line, position) in group.positions + [group.check] {
                let pick = picks[line][position]
                // The classifier's own odds, not the look-alike floor's: a floor may make a
                // correction ambiguous, never possible (an 8 "corrected" to a B the classifier gave
                // nothing made a shifted line's check digit hold).
                guard pick.runnerUpProbability >= policy.minimumRunnerUp,
                      scores[line][position][pick.runnerUp.index] >= policy.minimumRunnerUp else { continue }
                var trial = text
                trial[line][position] = pick.runnerUp
                // The group holds now, and no group that held before breaks.
                if holds(group, trial), groups.allSatisfy({ $0 == group || !holds($0, text) || holds($0, trial) }) {
                    fixes.append((line, position, pick.runnerUp, pick.probability - pick.runnerUpProbability))
                }
            }
            guard fixes.count == 1, let fix = fixes.first else { continue }
            text[fix.line][fix.position] = fix.glyph
            corrected.insert([fix.line, fix.position])
        }
        return (text, picks, corrected)
    }

    /// OCR-B's digit/letter look-alikes (ICAO 9303-3's font makes them distinct, a blurred,
    /// 12-pixel or glared photo does not) whose check values differ modulo 10, so that a check
    /// digit tells them apart. `6`/`G` (and `K`/`<`, `5`/`F` …) are twins no check digit can
    /// tell apart: `keyUndetectableRatio` holds those to the classifier's own odds instead.
    static let lookAlikes: [(MRZGlyph, MRZGlyph)] = [("0", "O"), ("0", "D"), ("0", "Q"), ("1", "I"), ("2", "Z"), ("5", "S"), ("8", "B")]
        .map { (MRZGlyph(Character($0.0)), MRZGlyph(Character($0.1))) }

    /// The pair `Policy.zeroOFloor` raises at small capitals.
    static let zeroAndO = (MRZGlyph(Character("0")), MRZGlyph(Character("O")))

    /// Whether `glyph` is one of `lookAlikes`.
    static func hasLookAlike(_ glyph: MRZGlyph) -> Bool { lookAlikes.contains { $0.0 == glyph || $0.1 == glyph } }

    /// `probabilities` with each look-alike at least `floor` times its partner (`0`/`O`: `zeroO`
    /// when given).
    static func lookAlikesFloored(_ probabilities: Scores, _ floor: Float, zeroO: Float? = nil) -> Scores {
        var out = probabilities
        for (a, b) in lookAlikes {
            let floor = a == zeroAndO.0 && b == zeroAndO.1 ? zeroO ?? floor : floor
            out[a.index] = max(out[a.index], floor * probabilities[b.index])
            out[b.index] = max(out[b.index], floor * probabilities[a.index])
        }
        return out
    }

    /// The likeliest character `allowed` admits (the first of equals) and its runner-up.
    static func pick(_ probabilities: Scores, allowed: MRZCharacterClass) -> Pick {
        var best = Pick(glyph: .filler, probability: -1, runnerUp: .filler, runnerUpProbability: -1, probabilities: probabilities)
        for glyph in MRZGlyph.all where allowed.allows(glyph) {
            let p = probabilities[glyph.index]
            if p > best.probability {
                best.runnerUp = best.glyph
                best.runnerUpProbability = best.probability
                best.glyph = glyph
                best.probability = p
            } else if p > best.runnerUpProbability {
                best.runnerUp = glyph
                best.runnerUpProbability = p
            }
        }
        return best
    }

    /// A run of positions and the check digit over them.
    struct CheckGroup: Equatable {
        var name: String
        var positions: [(Int, Int)]
        var check: (Int, Int)
        var isComposite: Bool { name == "composite" }
        /// A check digit that may be `<` (or 0) when the whole group is fillers (TD3 optional data).
        var fillerAllowed = false

        static func == (a: CheckGroup, b: CheckGroup) -> Bool { a.name == b.name }
    }

    func checkGroups() -> [CheckGroup] {
        func run(_ line: Int, _ range: Range<Int>) -> [(Int, Int)] { range.map { (line, $0) } }
        switch format {
        case .td1:
            return [CheckGroup(name: "documentNumber", positions: run(0, 5..<14), check: (0, 14)),
                    CheckGroup(name: "dateOfBirth", positions: run(1, 0..<6), check: (1, 6)),
                    CheckGroup(name: "dateOfExpiry", positions: run(1, 8..<14), check: (1, 14)),
                    CheckGroup(name: "composite", positions: run(0, 5..<30) + run(1, 0..<7) + run(1, 8..<15) + run(1, 18..<29), check: (1, 29))]
        case .td2, .td3, .mrvA, .mrvB:
            var groups = [CheckGroup(name: "documentNumber", positions: run(1, 0..<9), check: (1, 9)),
                          CheckGroup(name: "dateOfBirth", positions: run(1, 13..<19), check: (1, 19)),
                          CheckGroup(name: "dateOfExpiry", positions: run(1, 21..<27), check: (1, 27))]
            if format == .td3 {
                groups.append(CheckGroup(name: "optionalData", positions: run(1, 28..<42), check: (1, 42), fillerAllowed: true))
                groups.append(CheckGroup(name: "composite", positions: run(1, 0..<10) + run(1, 13..<20) + run(1, 21..<43), check: (1, 43)))
            } else if format == .td2 {
                groups.append(CheckGroup(name: "composite", positions: run(1, 0..<10) + run(1, 13..<20) + run(1, 21..<35), check: (1, 35)))
            }
            return groups
        }
    }

    /// Whether a group's check digit holds in `text`, with the long document number rule of TD1
    /// and TD2 (a `<` check digit: the number goes on in the optional data, then its check digit).
    func holds(_ group: CheckGroup, _ text: [[MRZGlyph]]) -> Bool {
        let check = text[group.check.0][group.check.1]
        if group.name == "documentNumber", check == .filler, format == .td1 || format == .td2 {
            guard let (glyphs, digit) = longDocumentNumber(text) else { return false }
            return digit.isDigit && MRZCheckDigit.value(glyphs) == digit.checkValue
        }
        let glyphs = group.positions.map { text[$0.0][$0.1] }
        if group.fillerAllowed, glyphs.allSatisfy({ $0 == .filler }) { return check == .filler || check.index == 0 }
        return check.isDigit && MRZCheckDigit.value(glyphs) == check.checkValue
    }

    /// The full number of a TD1/TD2 long document number and its check digit (ICAO 9303-5 §4.2.4).
    func longDocumentNumber(_ text: [[MRZGlyph]]) -> ([MRZGlyph], MRZGlyph)? {
        let (line, number, optional): (Int, Range<Int>, Range<Int>) = format == .td1 ? (0, 5..<14, 15..<30) : (1, 0..<9, 28..<35)
        let overflow = text[line][optional].prefix { $0 != .filler }
        guard overflow.count >= 2, let digit = overflow.last else { return nil }
        return (Array(text[line][number]) + overflow.dropLast(), digit)
    }
}

extension MRZReading {
    /// An MRZ given as text, its fields and check digits as the rules read them (the verdicts
    /// say whether its check digits hold and its fields are well formed): what a benchmark's or a
    /// test's truth is compared with. Nil when no format has these lines.
    package init?(text lines: [String]) {
        guard let first = lines.first, lines.allSatisfy({ $0.count == first.count }),
              let format = MRZFormat.candidates(lines: lines.count, length: first.count).first(where: { format in
                  // Visas and travel documents share line lengths: the document code says which.
                  format == .mrvA || format == .mrvB ? first.hasPrefix("V") : !first.hasPrefix("V")
              }) ?? MRZFormat.candidates(lines: lines.count, length: first.count).first else { return nil }
        let scores = lines.map { line in
            line.map { character -> [Float] in
                var one = [Float](repeating: 0, count: MRZGlyph.count)
                one[MRZGlyph(character).index] = 1
                return one
            }
        }
        // Text is certain: no look-alike is made likelier than the text says (the floor is for a
        // classifier's probabilities).
        var policy = MRZDecoder.Policy.standard
        policy.lookAlikeFloor = 0
        guard let reading = MRZDecoder(format: format, policy: policy).decode(scores) else { return nil }
        self = reading
    }
}
