import Glibc

/// The check digit's blind spots, beyond one character: two misreadings whose changes cancel
/// (a `0` read as `O` adds 24 × 3 ≡ 2, a `6` read as `4` two positions on takes 2 away) pass the
/// check digit — and, over the same positions, the composite — as surely as the truth. Found by
/// the benchmark on a hard-tier frame: `301106970` read `3O1104970`, check digit and composite
/// holding. The single-character rule (`keyUndetectableRatio`) cannot see such a pair.
///
/// So each access-key group is weighed as a whole: of every reading of its characters and check
/// digit that the check digit accepts (each position limited to what its field allows), the most
/// likely one other than the chosen text must be at most `keyUndetectableRatio` as likely as the
/// chosen text (probabilities multiplied over the group). One character of difference is the old
/// rule; two or more that compensate are caught the same way.
extension MRZDecoder {
    /// The likelihood ratio of the best other reading of `group`'s characters that its check
    /// digit accepts, over `text`'s own. 0 when there is none.
    /// `floored`: false weighs the classifier's own probabilities (`Pick.classifier`), without the
    /// look-alike floor.
    func strongestRival(positions: [(Int, Int)], check: (Int, Int), text: [[MRZGlyph]], picks: [[Pick]], floored: Bool = true) -> Float {
        let classes = MRZLayout.classes(format)
        func logP(_ line: Int, _ position: Int, _ glyph: MRZGlyph) -> Float {
            let pick = picks[line][position]
            return log(max((floored || pick.classifier.isEmpty ? pick.probabilities : pick.classifier)[glyph.index], 1e-7))
        }
        // Per residue of the weighted sum (mod 10), the two most likely partial readings.
        var states: [[RivalPartial]] = Array(repeating: [], count: 10)
        states[0] = [RivalPartial(score: 0, glyphs: [])]
        for (offset, (line, position)) in positions.enumerated() {
            let weight = MRZCheckDigit.weights[offset % 3]
            var next: [[RivalPartial]] = Array(repeating: [], count: 10)
            for residue in 0..<10 {
                for partial in states[residue] {
                    for glyph in MRZGlyph.all where classes[line][position].allows(glyph) {
                        let target = (residue + weight * glyph.checkValue) % 10
                        let candidate = RivalPartial(score: partial.score + logP(line, position, glyph), glyphs: partial.glyphs + [glyph])
                        Self.keepTwoBest(&next[target], candidate)
                    }
                }
            }
            states = next
        }
        let own = positions.map { text[$0.0][$0.1] } + [text[check.0][check.1]]
        let ownScore = zip(positions + [check], own).reduce(Float(0)) { $0 + logP($1.0.0, $1.0.1, $1.1) }
        var rival: Float = -.infinity
        for digit in MRZGlyph.all where digit.isDigit && classes[check.0][check.1].allows(digit) {
            for partial in states[digit.checkValue] {
                let glyphs = partial.glyphs + [digit]
                guard glyphs != own else { continue }
                rival = max(rival, partial.score + logP(check.0, check.1, digit))
            }
        }
        return rival == -.infinity ? 0 : exp(rival - ownScore)
    }

    /// The probability of `text`'s reading of a group among every reading its check digit accepts
    /// (each position limited to what its field allows): `own / Σ accepted`, the probabilities
    /// first tempered (`p^(1/temperature)`, renormalized over the position's allowed characters),
    /// since a classifier trained to be right is more sure of itself than it should be.
    func groupPosterior(positions: [(Int, Int)], check: (Int, Int), text: [[MRZGlyph]], picks: [[Pick]], temperature: Float) -> Float {
        let classes = MRZLayout.classes(format)
        func logTempered(_ line: Int, _ position: Int) -> [Float] {
            let allowed = classes[line][position]
            var logs = picks[line][position].probabilities.map { log(max($0, 1e-7)) / temperature }
            let top = MRZGlyph.all.filter { allowed.allows($0) }.map { logs[$0.index] }.max() ?? 0
            let total = MRZGlyph.all.filter { allowed.allows($0) }.reduce(Float(0)) { $0 + exp(logs[$1.index] - top) }
            for glyph in MRZGlyph.all { logs[glyph.index] = allowed.allows(glyph) ? logs[glyph.index] - top - log(total) : -.infinity }
            return logs
        }
        func logSum(_ a: Float, _ b: Float) -> Float {
            if a == -.infinity { return b }
            if b == -.infinity { return a }
            let top = max(a, b)
            return top + log(exp(a - top) + exp(b - top))
        }
        var states = [Float](repeating: -.infinity, count: 10)
        states[0] = 0
        var own: Float = 0
        for (offset, (line, position)) in positions.enumerated() {
            let weight = MRZCheckDigit.weights[offset % 3]
            let logs = logTempered(line, position)
            own += logs[text[line][position].index]
            var next = [Float](repeating: -.infinity, count: 10)
            for residue in 0..<10 where states[residue] > -.infinity {
                for glyph in MRZGlyph.all where logs[glyph.index] > -.infinity {
                    let target = (residue + weight * glyph.checkValue) % 10
                    next[target] = logSum(next[target], states[residue] + logs[glyph.index])
                }
            }
            states = next
        }
        let checkLogs = logTempered(check.0, check.1)
        own += checkLogs[text[check.0][check.1].index]
        var total: Float = -.infinity
        for digit in MRZGlyph.all where digit.isDigit && checkLogs[digit.index] > -.infinity {
            total = logSum(total, states[digit.checkValue] + checkLogs[digit.index])
        }
        return total == -.infinity ? 0 : min(1, exp(own - total))
    }

    private static func keepTwoBest(_ list: inout [RivalPartial], _ candidate: RivalPartial) {
        if list.count < 2 {
            list.append(candidate)
            list.sort { $0.score > $1.score }
        } else if candidate.score > list[1].score {
            list[1] = candidate
            list.sort { $0.score > $1.score }
        }
    }

    /// The access key's groups as `text` has them: positions and check digit of the number (a
    /// TD1/TD2 long number going on in the optional data), the birth date and the expiry date.
    /// Nil when a long number's continuation is too short to hold one.
    func keyGroups(_ text: [[MRZGlyph]]) -> [(positions: [(Int, Int)], check: (Int, Int))]? {
        var result: [(positions: [(Int, Int)], check: (Int, Int))] = []
        for group in checkGroups() where ["documentNumber", "dateOfBirth", "dateOfExpiry"].contains(group.name) {
            var positions = group.positions
            var check = group.check
            if group.name == "documentNumber", format == .td1 || format == .td2, text[check.0][check.1] == .filler {
                // The number goes on in the optional data; its last character there is the check digit.
                let (line, start) = format == .td1 ? (0, 15) : (1, 28)
                let overflow = text[line][start...].prefix { $0 != .filler }.count
                guard overflow >= 2 else { return nil }
                positions += (start..<(start + overflow - 1)).map { (line, $0) }
                check = (line, start + overflow - 1)
            }
            result.append((positions, check))
        }
        return result
    }

    /// The chosen characters' probabilities at `positions`, least first (the unsure-pair rule and
    /// the lab's evidence of it).
    func chosenProbabilities(_ positions: [(Int, Int)], text: [[MRZGlyph]], picks: [[Pick]]) -> [Float] {
        positions.map { picks[$0.0][$0.1].probabilities[text[$0.0][$0.1].index] }.sorted()
    }

    /// The "not OCR-B" shares, most first, of the cells at `positions` that hold one of a look-alike
    /// pair in a field allowing both (where the look-alike floor lets the check digit choose) and
    /// are at least `Policy.keyForeignPair` not OCR-B: two of them in one group earn no key (the
    /// rule and the lab's evidence of it).
    func doubtfulLookAlikes(_ positions: [(Int, Int)], text: [[MRZGlyph]], picks: [[Pick]], atLeast: Float? = nil) -> [Float] {
        let least = atLeast ?? policy.keyForeignPair
        let classes = MRZLayout.classes(format)
        return positions.filter { line, position in
            classes[line][position] == .any && Self.hasLookAlike(text[line][position])
                && picks[line][position].foreign >= least
        }.map { picks[$0.0][$0.1].foreign }.sorted(by: >)
    }

    /// The cells of `positions` read `O` where the field allows `0` too, unsurely (under
    /// `Policy.sureO`) — or at all under small capitals (`Policy.zeroOFloor` set: there `0` and `O`
    /// are a pixel apart) — where the document's own `0`s did not vouch for a `0`.
    func doubtfulOs(_ positions: [(Int, Int)], text: [[MRZGlyph]], picks: [[Pick]]) -> Int {
        let classes = MRZLayout.classes(format), o = MRZGlyph("O")
        return positions.filter { line, position in
            text[line][position] == o && classes[line][position].allows(MRZGlyph("0")) && !vouchedZeros.contains([line, position])
                && (policy.zeroOFloor != nil || picks[line][position].probabilities[o.index] < policy.sureO)
        }.count
    }

    /// Whether every access-key group of `text` is far more likely than any rival reading its
    /// check digit would also accept (the long document number of TD1/TD2 included); under the
    /// smallest capitals the floor's rivals and the classifier's own each against their ratio
    /// (`Policy.floorRivalRatio`).
    func keyGroupsUnambiguous(_ text: [[MRZGlyph]], picks: [[Pick]], ratio: Float) -> Bool {
        guard let groups = keyGroups(text) else { return false }
        return groups.allSatisfy { group in
            let sure = chosenProbabilities(group.positions, text: text, picks: picks)
            if sure.count > 1, sure[0] < policy.keyUnsurePair.least, sure[1] < policy.keyUnsurePair.second { return false }
            if doubtfulLookAlikes(group.positions, text: text, picks: picks).count > 1 { return false }
            if doubtfulOs(group.positions, text: text, picks: picks) > policy.doubtfulOsMaximum { return false }
            let rival = strongestRival(positions: group.positions, check: group.check, text: text, picks: picks)
            guard let floorRatio = policy.floorRivalRatio else { return rival <= ratio }
            return rival <= floorRatio && strongestRival(positions: group.positions, check: group.check, text: text, picks: picks, floored: false) <= ratio
        }
    }
}

/// A reading of the first positions of a group, and how likely it is (a sum of log probabilities).
struct RivalPartial {
    var score: Float
    var glyphs: [MRZGlyph]
}
