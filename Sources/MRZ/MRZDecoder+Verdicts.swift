extension MRZDecoder {
    /// The reading of `text`, with the verdicts the probabilities and the checks allow.
    func reading(_ text: [[MRZGlyph]], picks: [[Pick]],
                 corrected: Set<[Int]>, groups: [CheckGroup], contrast: [[Float]]) -> MRZReading {
        let lines = text.map { String($0.map(\.character)) }
        var checks: [String: Bool] = [:]
        for group in groups { checks[group.name] = holds(group, text) }

        // The access key's characters: the number (and its overflow), the dates, their check digits.
        let key = keyPositions(text)
        let classes = MRZLayout.classes(format)
        let checksHold = ["documentNumber", "dateOfBirth", "dateOfExpiry"].allSatisfy { checks[$0] == true }
            && checks["composite"] != false
        var keySafe = true
        let ratio = policy.keyUndetectableRatio
        for (line, position) in key where keySafe {
            let chosen = text[line][position]
            let probabilities = picks[line][position].probabilities
            let p = probabilities[chosen.index]
            // A character the check digit corrected was the runner-up: it needs the margin below,
            // not the first choice's probability.
            guard p >= (corrected.contains([line, position]) ? policy.minimumRunnerUp : policy.keyMinimum) else { keySafe = false; break }
            // A glyph the classifier does not take for OCR-B at all (another font, a smudge): its
            // 37 characters' probabilities sum to less than the whole.
            guard picks[line][position].foreign <= policy.keyForeignMaximum else { keySafe = false; break }
            // Against every character the position allows that a check digit could not tell from
            // this one (same value modulo 10): far less likely, by a ratio.
            for other in MRZGlyph.all where other != chosen && classes[line][position].allows(other)
                && (other.checkValue - chosen.checkValue) % 10 == 0 {
                if probabilities[other.index] > p * ratio { keySafe = false }
            }
            if !keySafe { break }
        }
        let accessKeyValid = checksHold && keySafe && wellFormedKey(text) && keyGroupsUnambiguous(text, picks: picks, ratio: ratio)

        // Everything else: confident, and well formed.
        var restConfident = true
        let keySet = Set(key.map { [$0.0, $0.1] })
        let covered = Set(groups.flatMap { ($0.positions + [$0.check]).map { [$0.0, $0.1] } })
        for (line, cells) in picks.enumerated() {
            for (position, pick) in cells.enumerated() where !keySet.contains([line, position]) {
                let chosen = text[line][position]
                let p = pick.probabilities[chosen.index]
                if !covered.contains([line, position]) {
                    if p < policy.validUncoveredMinimum { restConfident = false }
                    // A digit/letter look-alike no check digit covers (a visa's optional data), read
                    // less than surely by the classifier itself: nothing but its word chooses
                    // between `0` and `O` there (seed 8585, small tier, image 468: `0VHYSX2N` as
                    // `OVHYSX2N`, valid).
                    let own = pick.classifier.isEmpty ? p : pick.classifier[chosen.index]
                    if classes[line][position] == .any, Self.hasLookAlike(chosen), own < policy.sureLookAlike { restConfident = false }
                }
                let runnerUp = pick.probabilities.enumerated().filter { $0.offset != chosen.index }.map(\.element).max() ?? 0
                if corrected.contains([line, position]) || contrast[line][position] < CellSampler.faintRatio || p < policy.validMinimum || p - runnerUp < policy.validMargin
                    || pick.foreign > policy.validForeignMaximum {
                    restConfident = false
                }
            }
        }
        let allChecks = checks.values.allSatisfy { $0 }
        let valid = accessKeyValid && restConfident && allChecks && wellFormed(text)
        let confidence = picks.flatMap { $0 }.map { Double($0.probabilities[$0.glyph.index]) }.min() ?? 0
        return fields(text, lines: lines, valid: valid, accessKeyValid: accessKeyValid, checks: checks, confidence: confidence,
                      corrections: corrected.count)
    }

    /// The positions of the access key: document number (with a long number's overflow and check
    /// digit), date of birth, date of expiry, and their check digits.
    func keyPositions(_ text: [[MRZGlyph]]) -> [(Int, Int)] {
        var positions: [(Int, Int)] = []
        for group in checkGroups() where ["documentNumber", "dateOfBirth", "dateOfExpiry"].contains(group.name) {
            positions += group.positions + [group.check]
        }
        if (format == .td1 || format == .td2), text[format == .td1 ? 0 : 1][format == .td1 ? 14 : 9] == .filler {
            let (line, start) = format == .td1 ? (0, 15) : (1, 28)
            let overflow = text[line][start...].prefix { $0 != .filler }.count
            positions += (start..<(start + overflow)).map { (line, $0) }
        }
        return positions
    }

    func value(_ text: [[MRZGlyph]], _ name: MRZField.Name) -> String {
        guard let field = MRZLayout.fields(format).first(where: { $0.name == name }) else { return "" }
        return String(text[field.line][field.range].map(\.character))
    }

    /// The key's fields as ICAO 9303 lays them out: a document code of the format (a line read
    /// one cell off — a stray blob before it — starts with anything; the benchmark found one whose
    /// check digits all held after a correction, `OC<KOR…` for `C<KOR…`), a number that starts
    /// with a character and is padded with fillers only at its end (`T<X273N8O` for `TKX273N8O`:
    /// `<` and `K` are check-digit twins), and dates that are dates.
    func wellFormedKey(_ text: [[MRZGlyph]]) -> Bool {
        guard knownDocumentCode(text) else { return false }
        let number = value(text, .documentNumber)
        guard number.contains(where: { $0 != "<" }), number.first != "<" else { return false }
        guard !number.drop(while: { $0 != "<" }).contains(where: { $0 != "<" }) || Self.isGermanFillerNumber(number, state: value(text, .issuingState)) else {
            return false
        }
        return Self.isDate(value(text, .dateOfExpiry), allowUnknown: false) && Self.isDate(value(text, .dateOfBirth), allowUnknown: true)
    }

    /// Germany's temporary, children's, official and diplomatic passports number themselves a
    /// letter, a filler, then digits (`G<0000000`, `A<0000000`): a filler inside the number, in
    /// the one place Germany puts it, under Germany's issuer code `D<<` (issue 50: six German
    /// passport types were refused).
    static func isGermanFillerNumber(_ number: String, state: String) -> Bool {
        let characters = Array(number)
        guard state == "D<<", characters.count == 9, characters[0].isASCII, characters[0].isLetter, characters[1] == "<" else { return false }
        return characters[2...].allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// P for passports (TD3), V for visas, A, C or I for cards (TD1, TD2): ICAO 9303-4/5/6/7.
    func knownDocumentCode(_ text: [[MRZGlyph]]) -> Bool {
        guard let first = value(text, .documentCode).first, "PIACV".contains(first) else { return false }
        switch format {
        case .td3: return first == "P"
        case .mrvA, .mrvB: return first == "V"
        case .td1, .td2: return first != "P" && first != "V"
        }
    }

    /// The rest: states and authorities that exist, names of letters with fillers only after them,
    /// a sex of M, F, X or `<` (the document code is the key's).
    func wellFormed(_ text: [[MRZGlyph]]) -> Bool {
        for name in [MRZField.Name.issuingState, .nationality] {
            // A code some state or authority has (ICAO 9303-3 §5; Germany's is "D<<").
            guard MRZStateCodes.known(value(text, name)) else { return false }
        }
        let names = value(text, .names)
        guard names.first.map({ $0 != "<" }) == true else { return false }
        return true
    }

    /// YYMMDD. With `allowUnknown` (the date of birth), a part not known is filled (ICAO 9303-3
    /// §3.8: "all or part of the date … the relevant character positions" — a year, a month or a
    /// day, each two fillers); a single filler inside a part is no date. It is what a `0` read as
    /// `<` looks like, and the check digit cannot see it (both count 0): a hard-tier visa's birth
    /// date `610205` read `61<205` had every key check digit holding (`--seed 7777`, image 808).
    static func isDate(_ text: String, allowUnknown: Bool) -> Bool {
        let characters = Array(text)
        guard characters.count == 6 else { return false }
        var parts: [Int?] = []
        for start in [0, 2, 4] {
            let pair = characters[start...(start + 1)]
            if allowUnknown, pair.allSatisfy({ $0 == "<" }) {
                parts.append(nil)
            } else {
                guard pair.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(String(pair)) else { return false }
                parts.append(value)
            }
        }
        return (parts[1].map { (1...12).contains($0) } ?? true) && (parts[2].map { (1...31).contains($0) } ?? true)
    }

    private func fields(_ text: [[MRZGlyph]], lines: [String], valid: Bool, accessKeyValid: Bool, checks: [String: Bool],
                        confidence: Double, corrections: Int) -> MRZReading {
        func trimmed(_ name: MRZField.Name) -> String {
            var value = value(text, name)
            while value.last == "<" { value.removeLast() }
            return value
        }
        var number = trimmed(.documentNumber)
        var optional = trimmed(.optionalData)
        if (format == .td1 || format == .td2), let (glyphs, _) = longDocumentNumber(text), trimmed(.documentNumberCheck) == "" {
            number = String(glyphs.map(\.character))
            let field = value(text, .optionalData)
            optional = String(field.drop { $0 != "<" }.drop { $0 == "<" }.reversed().drop { $0 == "<" }.reversed())
        }
        if format == .td1 {
            let second = trimmed(.optionalData2)
            if !second.isEmpty { optional = optional.isEmpty ? second : optional + "<" + second }
        }
        let names = value(text, .names)
        let parts = names.split(separator: "<<", maxSplits: 1, omittingEmptySubsequences: false)
        let surname = parts.first.map { $0.split(separator: "<").joined(separator: " ") } ?? ""
        let given = parts.count > 1 ? parts[1].split(separator: "<").joined(separator: " ") : ""
        return MRZReading(format: format, lines: lines, valid: valid, accessKeyValid: accessKeyValid,
                          documentCode: trimmed(.documentCode), issuingState: trimmed(.issuingState), documentNumber: number,
                          dateOfBirth: value(text, .dateOfBirth), dateOfExpiry: value(text, .dateOfExpiry),
                          nationality: trimmed(.nationality), surname: surname, givenNames: given, sex: value(text, .sex),
                          optionalData: optional, checkDigits: checks, confidence: confidence, corrections: corrections)
    }
}
