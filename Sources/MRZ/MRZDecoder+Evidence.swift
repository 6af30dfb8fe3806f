/// What the access key's verdict rests on, in numbers (the lab's `evidence`: how far the right and
/// the wrong readings of a corpus lie from each threshold).
package struct MRZKeyEvidence: Sendable {
    /// The text's check digits over the key hold (and the composite, where there is one).
    package var checksHold: Bool
    /// The least likely key character's probability.
    package var minimumProbability: Float
    /// The most likely character a check digit cannot tell from the chosen one, over it.
    package var twinRatio: Float
    /// The best other reading of a key group its check digit accepts, over the chosen one.
    package var rival: Float
    /// The least posterior of a key group among the readings its check digit accepts, at each of
    /// `MRZKeyEvidence.temperatures`.
    package var posteriors: [Float]
    /// The least contrast (over its line's median) of a key cell.
    package var dimmestContrast: Float
    /// The least probability of a key character whose cell's contrast is under half the line's.
    package var dimMinimumProbability: Float
    /// The least, over the key groups, of a group's second least likely character.
    package var secondLeastInGroup: Float
    /// The most, over the key groups, of a group's second most "not OCR-B" look-alike cell (0
    /// when there is no second; `Policy.keyForeignPair` refuses from its threshold).
    package var secondForeignInGroup: Float = 0
    /// Each key cell: its character, chosen probability, and "not OCR-B" share (the lab's `why`).
    package var keyCells: [(character: Character, probability: Float, foreign: Float)] = []

    package static let temperatures: [Float] = [1, 1.5, 2, 3]
}

extension MRZDecoder {
    func evidence(_ scores: [[Scores]], contrast: [[Float]]) -> (MRZReading, MRZKeyEvidence)? {
        guard let (text, picks, corrected) = decodeText(scores), let groups = keyGroups(text) else { return nil }
        let reading = reading(text, picks: picks, corrected: corrected, groups: checkGroups(), contrast: scores.map { $0.map { _ in 1 } })
        let classes = MRZLayout.classes(format)
        var minimum: Float = 1, twin: Float = 0, dimmest: Float = .infinity, dimMinimum: Float = 1
        for (line, position) in keyPositions(text) {
            let chosen = text[line][position]
            let p = picks[line][position].probabilities[chosen.index]
            minimum = min(minimum, p)
            dimmest = min(dimmest, contrast[line][position])
            if contrast[line][position] < 0.5 { dimMinimum = min(dimMinimum, p) }
            for other in MRZGlyph.all where other != chosen && classes[line][position].allows(other) && (other.checkValue - chosen.checkValue) % 10 == 0 {
                twin = max(twin, picks[line][position].probabilities[other.index] / max(p, 1e-7))
            }
        }
        // Within each key group, its second least likely character (two unsure characters in one
        // group can cancel in its check digit).
        let secondLeast = groups.map { group -> Float in
            let ps = chosenProbabilities(group.positions, text: text, picks: picks)
            return ps.count > 1 ? ps[1] : 1
        }.min() ?? 1
        let rival = groups.map { strongestRival(positions: $0.positions, check: $0.check, text: text, picks: picks) }.max() ?? 0
        let posteriors = MRZKeyEvidence.temperatures.map { t in
            groups.map { groupPosterior(positions: $0.positions, check: $0.check, text: text, picks: picks, temperature: t) }.min() ?? 0
        }
        let checksHold = ["documentNumber", "dateOfBirth", "dateOfExpiry"].allSatisfy { reading.checkDigits[$0] == true }
            && reading.checkDigits["composite"] != false && wellFormedKey(text)
        let secondForeign = groups.map { group -> Float in
            let shares = doubtfulLookAlikes(group.positions, text: text, picks: picks, atLeast: -1)
            return shares.count > 1 ? shares[1] : 0
        }.max() ?? 0
        let cells = keyPositions(text).map { line, position in
            (text[line][position].character, picks[line][position].probabilities[text[line][position].index], picks[line][position].foreign)
        }
        return (reading, MRZKeyEvidence(checksHold: checksHold, minimumProbability: minimum, twinRatio: twin, rival: rival, posteriors: posteriors,
                                        dimmestContrast: dimmest, dimMinimumProbability: dimMinimum, secondLeastInGroup: secondLeast, secondForeignInGroup: secondForeign, keyCells: cells))
    }
}
