import Foundation
import ImageCodecs
import MRZ
import MRZSynthesis

/// The `real` tier: zones made of real MRZ lines (`../shared/fixtures/mrz-real-lines`) from the
/// documents kept for measuring — never trained or tuned on. Per kind: the key right (of the
/// zones whose printed key check digits hold), false keys (a key claimed that is not the printed
/// one, or claimed where the printed check digits are wrong), false valids, no-reads, timing, the
/// printed key as the first of the key candidates and among them; then
/// the per-character confusion of the real lines.
enum RealTier {
    struct Tally {
        var zones = 0, keyable = 0, keyRight = 0, exact = 0, falseKey = 0, falseValid = 0, noRead = 0
        var firstCandidate = 0, anyCandidate = 0
        var times: [Double] = []
    }

    /// `dump`: a directory each zone is written to as a PNG (`real-N.png`), to look at.
    static func run(recognizer: MRZRecognizer, scale: Float, listing: Bool, part: RealLines.Part = .measurement, dump: String? = nil) -> Int {
        let real: RealLines
        do {
            real = try RealLines()
        } catch {
            print("real    skipped: \(error)")
            return 0
        }
        let cases = real.cases(part)
        let documents = Set(real.lines.filter { $0.part == part }.map(\.document)).count
        print("real tier: \(cases.count) zones from \(documents) source images of the \(part.rawValue) part (scale \(scale))")
        var tallies: [RealLines.Case.Kind: Tally] = [:]
        var confusion: [String: Int] = [:]
        var characters = 0, wrongCharacters = 0, misaligned = 0
        var falseAccepts = 0
        for (number, item) in cases.enumerated() {
            let image = scale == 1 ? item.image : RealZone.scaled(item.image, by: scale)
            if let dump, let png = try? ImageCodecs.encodePNG(image.rgb) {
                try? Data(png).write(to: URL(fileURLWithPath: "\(dump)/real-\(number).png"))
            }
            let started = ContinuousClock.now
            let result = recognizer.read(image)
            let reading = result.reading
            let elapsed = ContinuousClock.now - started
            var tally = tallies[item.kind] ?? Tally()
            tally.zones += 1
            tally.times.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
            let truth = item.truthReading
            let printed = truth.key
            if item.keyHolds {
                tally.keyable += 1
                let keys = result.candidates.map(\.key)
                if keys.first == printed { tally.firstCandidate += 1 }
                if keys.contains(printed) { tally.anyCandidate += 1 }
            }
            if let reading, reading.accessKeyValid {
                let right = item.keyHolds && reading.documentNumber == truth.documentNumber && reading.dateOfBirth == truth.dateOfBirth
                    && reading.dateOfExpiry == truth.dateOfExpiry
                if right {
                    tally.keyRight += 1
                } else {
                    tally.falseKey += 1
                    print("  false key (#\(number) \(item.kind.rawValue), \(item.files.map { ($0 as NSString).lastPathComponent })): \(reading.lines) for \(item.truth)")
                }
            } else if item.keyHolds {
                tally.noRead += 1
                if listing {
                    let rank = result.candidates.firstIndex { $0.key == printed }.map { "candidate \($0 + 1) of \(result.candidates.count)" }
                        ?? "not among \(result.candidates.count) candidates"
                    let why = reading.map { r in " [checks \(r.checkDigits.filter { !$0.value }.keys.sorted()), least sure \(String(format: "%.2f", r.confidence)), corrections \(r.corrections)]" } ?? ""
                    print("  not read (#\(number) \(item.kind.rawValue), \(item.files.map { ($0 as NSString).lastPathComponent })\(result.refusal.map { ", \($0.rawValue)" } ?? "")): \(reading?.lines ?? []) for \(item.truth)\(why), printed key \(rank)")
                }
            }
            if let reading, reading.valid {
                if reading.lines == item.truth && item.keyHolds { tally.exact += 1 } else {
                    tally.falseValid += 1
                    print("  false valid (\(item.kind.rawValue), \(item.files.map { ($0 as NSString).lastPathComponent })): \(reading.lines) for \(item.truth)")
                }
            }
            // Per character, on the real lines of a reading with the truth's layout that lies on
            // them (at least half its characters agree: else the cells are elsewhere, counted apart).
            if let reading, reading.lines.count == item.truth.count {
                let places = item.realLine.map { [$0] } ?? Array(item.truth.indices)
                for place in places where reading.lines[place].count == item.truth[place].count {
                    let pairs = Array(zip(reading.lines[place], item.truth[place]))
                    guard pairs.filter({ $0.0 == $0.1 }).count * 2 >= pairs.count else { misaligned += 1; continue }
                    for (read, printed) in pairs {
                        characters += 1
                        if read != printed {
                            wrongCharacters += 1
                            confusion["\(printed)→\(read)", default: 0] += 1
                        }
                    }
                }
            }
            tallies[item.kind] = tally
        }
        print("kind                 zones   key right   exact MRZ   false key   false valid   not read   p50 ms   p95 ms   1st cand   any cand")
        for kind in RealLines.Case.Kind.allCases {
            guard var tally = tallies[kind] else { continue }
            tally.times.sort()
            falseAccepts += tally.falseKey + tally.falseValid
            print(kind.rawValue.padding(toLength: 20, withPad: " ", startingAt: 0) + String(format: "%6d", tally.zones)
                  + "   " + percent(tally.keyRight, of: tally.keyable) + "    " + percent(tally.exact, of: tally.keyable)
                  + "   " + String(format: "%9d", tally.falseKey) + "   " + String(format: "%11d", tally.falseValid)
                  + "   " + percent(tally.noRead, of: tally.keyable) + " " + milliseconds(tally.times, 0.5) + "   " + milliseconds(tally.times, 0.95)
                  + "    " + percent(tally.firstCandidate, of: tally.keyable) + "    " + percent(tally.anyCandidate, of: tally.keyable)
                  + "   (\(tally.keyable) with the printed key's check digits holding)")
        }
        let top = confusion.sorted { $0.value > $1.value }.prefix(20).map { "\($0.key) \($0.value)" }
        print(String(format: "real lines, per character (readings on the right cells): %d read, %d wrong (%.2f %%); %d lines read elsewhere; most confused (printed→read): ",
                     characters, wrongCharacters, Double(wrongCharacters) / Double(max(1, characters)) * 100, misaligned) + top.joined(separator: ", "))
        return falseAccepts
    }
}
