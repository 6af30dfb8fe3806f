#if canImport(Glibc)
import Glibc
#endif

/// An access key read from a photo, for the chip to confirm (issue 50): a document number, a date
/// of birth and a date of expiry whose check digits hold and whose fields are well formed. Not a
/// verdict — a guess a wrong one of which costs one failed BAC or PACE; the chip decides, and its
/// DG1 is what is shown.
public struct MRZKeyCandidate: Sendable, Hashable, Codable {
    public var documentNumber: String
    /// YYMMDD.
    public var dateOfBirth: String
    public var dateOfExpiry: String
    /// How likely the classifier made this key: the geometric mean of its characters'
    /// probabilities (0…1). Candidates are ranked by it.
    public var score: Double
    /// Whether the composite check digit holds with this key and the rest of the reading; nil
    /// where the format has none (MRV-A, MRV-B). A key whose composite fails may still be the
    /// right one (a misread character elsewhere in the composite's span).
    public var compositeValid: Bool?

    public init(documentNumber: String, dateOfBirth: String, dateOfExpiry: String, score: Double, compositeValid: Bool?) {
        (self.documentNumber, self.dateOfBirth, self.dateOfExpiry, self.score, self.compositeValid) =
            (documentNumber, dateOfBirth, dateOfExpiry, score, compositeValid)
    }

    /// What identifies the key (the chip's BAC/PACE password is derived from these three).
    public var key: [String] { [documentNumber, dateOfBirth, dateOfExpiry] }

    /// The most candidates ever offered: the chip is tried with at most this many keys.
    public static let maximum = 3
}

extension MRZDecoder {
    /// One character choice: a glyph, its (look-alike-floored) probability's log.
    private struct Option {
        var glyph: MRZGlyph
        var logProbability: Double
    }

    /// A partial or whole assignment of a check group's cells.
    private struct Partial {
        var glyphs: [MRZGlyph]
        var logProbability: Double
    }

    /// The most likely ways to read one check group (its cells and its check digit) so that the
    /// check digit holds, best first, at most `limit`: a dynamic programme over the cells with the
    /// weighted sum modulo 10 as its state, each cell's options its allowed characters of some
    /// probability (with OCR-B's digit/letter look-alikes floored as `decodeText` floors them).
    private func groupReadings(_ group: CheckGroup, scores: [[Scores]], national: NationalNumberRule, limit: Int) -> [Partial] {
        let classes = MRZLayout.classes(format)
        let weights = [7, 3, 1]
        func options(_ line: Int, _ position: Int) -> [Option] {
            let raw = scores[line][position]
            let allowed = classes[line][position]
            let floored = allowed == .any ? floored(raw, line: line, position: position, national: national) : raw
            let ranked = MRZGlyph.all.filter { allowed.allows($0) }.map { Option(glyph: $0, logProbability: log(Double(max(floored[$0.index], 1e-6)))) }
                .sorted { $0.logProbability > $1.logProbability }
            // The best few, and anything within a factor of a thousand of the best.
            let best = ranked.first?.logProbability ?? 0
            return Array(ranked.prefix(while: { $0.logProbability > best - log(1_000) }).prefix(4))
        }
        // state: the sum modulo 10 so far → the best partial assignments reaching it.
        var states: [Int: [Partial]] = [0: [Partial(glyphs: [], logProbability: 0)]]
        for (offset, (line, position)) in group.positions.enumerated() {
            var next: [Int: [Partial]] = [:]
            for option in options(line, position) {
                for (sum, partials) in states {
                    let value = (sum + option.glyph.checkValue * weights[offset % 3]) % 10
                    for partial in partials {
                        next[value, default: []].append(Partial(glyphs: partial.glyphs + [option.glyph], logProbability: partial.logProbability + option.logProbability))
                    }
                }
            }
            states = next.mapValues { Array($0.sorted { $0.logProbability > $1.logProbability }.prefix(limit)) }
        }
        // The check digit closes it: its value must be the sum's.
        var whole: [Partial] = []
        for option in options(group.check.0, group.check.1) {
            let accepts = option.glyph.isDigit || (group.fillerAllowed && option.glyph == .filler)
            guard accepts else { continue }
            for partial in states[option.glyph.checkValue % 10] ?? [] {
                if group.fillerAllowed, option.glyph == .filler, !partial.glyphs.allSatisfy({ $0 == .filler }) { continue }
                whole.append(Partial(glyphs: partial.glyphs + [option.glyph], logProbability: partial.logProbability + option.logProbability))
            }
        }
        return Array(whole.sorted { $0.logProbability > $1.logProbability }.prefix(limit))
    }

    /// The access keys these cells could hold, each passing its three check digits and the
    /// format's rules for a key (a known document code, a number padded only at its end, dates),
    /// best first, at most `MRZKeyCandidate.maximum`. Nil text or no such key: none.
    func keyCandidates(_ scores: [[Scores]]) -> [MRZKeyCandidate] {
        guard let (best, _, _) = decodeText(scores) else { return [] }
        let groups = checkGroups()
        guard let number = groups.first(where: { $0.name == "documentNumber" }), let birth = groups.first(where: { $0.name == "dateOfBirth" }),
              let expiry = groups.first(where: { $0.name == "dateOfExpiry" }) else { return [] }
        let perGroup = 4
        let national = nationalNumberRule(scores, lenient: policy.candidatesFollowLaw)
        // A TD1/TD2 long document number (its check digit a filler, the number going on in the
        // optional data) is taken as the best reading has it, when its check digit holds there.
        var numbers = groupReadings(number, scores: scores, national: national, limit: perGroup)
        if (format == .td1 || format == .td2), best[number.check.0][number.check.1] == .filler, holds(number, best) {
            numbers = [Partial(glyphs: (number.positions + [number.check]).map { best[$0.0][$0.1] },
                               logProbability: (number.positions + [number.check]).map { log(Double(max(scores[$0.0][$0.1][best[$0.0][$0.1].index], 1e-6))) }.reduce(0, +))]
        }
        let births = groupReadings(birth, scores: scores, national: national, limit: perGroup)
        let expiries = groupReadings(expiry, scores: scores, national: national, limit: perGroup)
        let composite = groups.first { $0.isComposite }
        var found: [(candidate: MRZKeyCandidate, log: Double)] = []
        var seen = Set<[String]>()
        let keyCells = Double((number.positions.count + 1) + (birth.positions.count + 1) + (expiry.positions.count + 1))
        for n in numbers {
            for b in births {
                for e in expiries {
                    var text = best
                    for (cells, reading) in [(number, n), (birth, b), (expiry, e)] {
                        for (index, (line, position)) in (cells.positions + [cells.check]).enumerated() { text[line][position] = reading.glyphs[index] }
                    }
                    guard wellFormedCandidate(text), holds(number, text), holds(birth, text), holds(expiry, text) else { continue }
                    let reading = fieldsOfKey(text)
                    guard seen.insert(reading).inserted else { continue }
                    let total = n.logProbability + b.logProbability + e.logProbability
                    found.append((MRZKeyCandidate(documentNumber: reading[0], dateOfBirth: reading[1], dateOfExpiry: reading[2],
                                                  score: exp(total / keyCells), compositeValid: composite.map { holds($0, text) }), total))
                }
            }
        }
        return Array(found.sorted { $0.log > $1.log }.prefix(MRZKeyCandidate.maximum).map(\.candidate))
    }

    /// A key the chip may be tried with: a number that is not empty and does not start with a
    /// filler, and dates. Looser than the verdict's `wellFormedKey` on purpose: the document
    /// code is no part of the key (a misread `I` is no reason not to try the key), and a filler
    /// inside the number is what Germany's temporary and children's passports print (`G<0000000`)
    /// — a `0` read as `<` is the same check value, so both are offered and the chip tells.
    func wellFormedCandidate(_ text: [[MRZGlyph]]) -> Bool {
        let number = value(text, .documentNumber)
        guard let first = number.first, first != "<" else { return false }
        return Self.isDate(value(text, .dateOfExpiry), allowUnknown: false) && Self.isDate(value(text, .dateOfBirth), allowUnknown: true)
    }

    /// The key's three fields in `text`, as `MRZReading` gives them (the number trimmed of its
    /// padding, a long number whole).
    func fieldsOfKey(_ text: [[MRZGlyph]]) -> [String] {
        var number = value(text, .documentNumber)
        while number.last == "<" { number.removeLast() }
        if (format == .td1 || format == .td2), value(text, .documentNumberCheck) == "<", let (glyphs, _) = longDocumentNumber(text) {
            number = String(glyphs.map(\.character))
        }
        return [number, value(text, .dateOfBirth), value(text, .dateOfExpiry)]
    }
}
