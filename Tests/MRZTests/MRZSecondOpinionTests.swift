@testable import MRZ
import Testing

/// The second opinion (`MRZRecognizer.withSecondOpinion`): a second reader's key is claimed only
/// where the first claimed none and read no other key; it never makes the first's refusals
/// disappear into a claim of a key the first contradicts.
@Suite("MRZ second opinion: what a second reader may add to the first's result")
struct MRZSecondOpinionTests {
    /// A TD3 reading of the ICAO specimen's key, or another number, with the verdicts given.
    static func reading(number: String = "L898902C3", checksHold: Bool = true, accessKeyValid: Bool, valid: Bool = false) -> MRZReading {
        MRZReading(format: .td3, lines: [], valid: valid, accessKeyValid: accessKeyValid, documentCode: "P", issuingState: "UTO",
                   documentNumber: number, dateOfBirth: "740812", dateOfExpiry: "120415", nationality: "UTO", surname: "ERIKSSON",
                   givenNames: "ANNA MARIA", sex: "F", optionalData: "ZE184226B",
                   checkDigits: ["documentNumber": checksHold, "dateOfBirth": true, "dateOfExpiry": true], confidence: 0.9, corrections: 0)
    }

    static func candidate(_ number: String, _ score: Double) -> MRZKeyCandidate {
        MRZKeyCandidate(documentNumber: number, dateOfBirth: "740812", dateOfExpiry: "120415", score: score, compositeValid: true)
    }

    @Test("the second's key is claimed where the first read it too, or read nothing whose checks hold; its candidate goes first")
    func claims() {
        let first = MRZRecognizer.Result(reading: Self.reading(accessKeyValid: false), found: true, candidates: [Self.candidate("L898902C3", 0.6)])
        let second = MRZRecognizer.Result(reading: Self.reading(accessKeyValid: true, valid: true), found: true,
                                          candidates: [Self.candidate("L898902C3", 0.9)])
        let merged = MRZRecognizer.withSecondOpinion(first, second)
        #expect(merged.reading?.accessKeyValid == true && merged.reading?.valid == true)
        #expect(merged.candidates.map(\.documentNumber) == ["L898902C3"])

        // The first found a zone but no key whose checks hold, and no candidate.
        let unread = MRZRecognizer.Result(reading: Self.reading(number: "L89890ZC3", checksHold: false, accessKeyValid: false), found: true)
        let fromNothing = MRZRecognizer.withSecondOpinion(unread, second)
        #expect(fromNothing.reading?.accessKeyValid == true && fromNothing.candidates.first?.documentNumber == "L898902C3")
    }

    @Test("a second key the first contradicts — its best reading's checks hold with another key, or its first candidate is another — is not claimed")
    func contradicted() {
        let second = MRZRecognizer.Result(reading: Self.reading(number: "L898902C3", accessKeyValid: true, valid: true), found: true,
                                          candidates: [Self.candidate("L898902C3", 0.9)])
        let readsAnother = MRZRecognizer.Result(reading: Self.reading(number: "L89B9O2C3", accessKeyValid: false), found: true,
                                                candidates: [Self.candidate("L89B9O2C3", 0.7)])
        let merged = MRZRecognizer.withSecondOpinion(readsAnother, second)
        #expect(merged.reading?.accessKeyValid == false && merged.reading?.valid == false)
        #expect(merged.reading?.documentNumber == "L89B9O2C3")
        // Both keys stay candidates for the chip to decide, the first reader's first.
        #expect(merged.candidates.map(\.documentNumber) == ["L89B9O2C3", "L898902C3"])

        let ranksAnother = MRZRecognizer.Result(reading: Self.reading(number: "L89890ZC3", checksHold: false, accessKeyValid: false), found: true,
                                                candidates: [Self.candidate("L89B9O2C3", 0.5)])
        #expect(MRZRecognizer.withSecondOpinion(ranksAnother, second).reading?.accessKeyValid == false)
    }

    @Test("a second search that ran out of time or saw no one document's zone adds nothing; a reading it claimed nothing with is shown unclaimed")
    func refusals() {
        let first = MRZRecognizer.Result(reading: nil, found: true, candidates: [Self.candidate("L898902C3", 0.6)])
        for refusal in [MRZRecognizer.Refusal.budgetExceeded, .ambiguousZone] {
            let second = MRZRecognizer.Result(reading: nil, found: refusal == .ambiguousZone, refusal: refusal,
                                              candidates: [Self.candidate("X12345678", 0.9)])
            let merged = MRZRecognizer.withSecondOpinion(first, second)
            #expect(merged.reading == nil && merged.refusal == nil && merged.candidates.map(\.documentNumber) == ["L898902C3"])
        }
        let unclaimed = MRZRecognizer.Result(reading: Self.reading(accessKeyValid: false), found: true)
        let merged = MRZRecognizer.withSecondOpinion(first, unclaimed)
        #expect(merged.reading?.documentNumber == "L898902C3" && merged.reading?.accessKeyValid == false)
        // At most MRZKeyCandidate.maximum candidates, the first reader's kept first.
        let many = MRZRecognizer.Result(reading: nil, found: true, candidates: (1...5).map { Self.candidate("A0000000\($0)", 0.5) })
        let capped = MRZRecognizer.withSecondOpinion(first, many)
        #expect(capped.candidates.count == MRZKeyCandidate.maximum && capped.candidates.first?.documentNumber == "L898902C3")
    }

    @Test("the standard recognizer has its second opinion; a recognizer built from one model reads alone")
    func wiring() throws {
        let standard = try #require(MRZRecognizer())
        #expect(standard.secondOpinion != nil)
        let alone = MRZRecognizer(classifier: try #require(GlyphClassifier.standard))
        #expect(alone.secondOpinion == nil)
        #expect(alone.loosened(keyMinimum: 0.5).secondOpinion == nil && standard.loosened(keyMinimum: 0.5).secondOpinion != nil)
    }
}
