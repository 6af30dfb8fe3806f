extension MRZRecognizer {
    /// The first reader's result with a second reader's of the same image, where the first
    /// claimed no key. The second's key is claimed only when neither the first's best reading (its
    /// check digits holding) nor its first candidate is another key (one of them would be wrong,
    /// and nothing says which); a second reading that ran out of time adds nothing.
    /// Candidates: the first's, then the second's others; a claimed key goes first.
    static func withSecondOpinion(_ first: Result, _ second: Result) -> Result {
        guard second.refusal == nil else { return first }
        var claimed: MRZReading?
        if let reading = second.reading, reading.accessKeyValid {
            let readsAnother = first.reading.map { keyChecksHold($0) && $0.key != reading.key } ?? false
            let ranksAnother = first.candidates.first.map { $0.key != reading.key } ?? false
            if !readsAnother, !ranksAnother { claimed = reading }
        }
        var candidates = first.candidates
        for candidate in second.candidates where !candidates.contains(where: { $0.key == candidate.key }) { candidates.append(candidate) }
        if let claimed, let index = candidates.firstIndex(where: { $0.key == claimed.key }) {
            candidates.insert(candidates.remove(at: index), at: 0)
        }
        return Result(reading: claimed ?? first.reading ?? second.reading.map { reading in
            var reading = reading
            reading.accessKeyValid = false
            reading.valid = false
            return reading
        }, found: true, candidates: Array(candidates.prefix(MRZKeyCandidate.maximum)))
    }
}
