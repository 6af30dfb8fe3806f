import Testing
@testable import MRZ

/// Key candidates (issue 50): the readings a chip is tried with, made up cell by cell so the test
/// says exactly what it checks — every candidate passes its three check digits and the key's
/// rules, the likeliest first, at most three, whatever the verdicts.
@Suite("MRZ key candidates: check digits hold, likeliest first, at most three")
struct MRZKeyCandidateTests {
    static let td3 = MRZDecoderTests.specimens[0].1

    static func candidates(_ lines: [String], format: MRZFormat = .td3, overrides: [[Int]: [Character: Float]] = [:]) -> [MRZKeyCandidate] {
        MRZDecoder(format: format, policy: .standard).keyCandidates(MRZDecoderTests.scores(lines, overrides: overrides))
    }

    @Test("a sure reading gives its own key first, the composite holding, the score near the cells' probability")
    func sureReading() throws {
        let found = Self.candidates(Self.td3)
        let first = try #require(found.first)
        #expect(first.key == ["L898902C3", "740812", "120415"])
        #expect(first.compositeValid == true)
        #expect(first.score > 0.9 && first.score <= 1)
        #expect(found.count <= MRZKeyCandidate.maximum)
        #expect(found.allSatisfy { candidate in
            MRZDecoderTests.specimens[0].1[1].hasPrefix("L898902C3") && candidate.dateOfBirth.count == 6 && candidate.dateOfExpiry.count == 6
        })
    }

    @Test("a 0 the classifier took for an O: the check digit's reading comes first, the photo's after it")
    func zeroReadAsO() throws {
        // L898902C3: position 5 of line 2 is the `0`; read as `O` more surely than as `0`.
        let found = Self.candidates(Self.td3, overrides: [[1, 5]: ["O": 0.7, "0": 0.29]])
        let keys = found.map(\.key)
        #expect(keys.first == ["L898902C3", "740812", "120415"], "\(keys)")
        // The reading whose number's check digit fails is never offered.
        #expect(!keys.contains(["L89890OC3", "740812", "120415"]))
    }

    @Test("a misread the check digit cannot correct alone: the runner-up reading that holds is offered")
    func runnerUpThatHolds() throws {
        // The birth date's `8` read `3` (0.55), its runner-up `8` (0.4): only 8 makes 740812's check digit 2 hold.
        let found = Self.candidates(Self.td3, overrides: [[1, 15]: ["3": 0.55, "8": 0.4]])
        #expect(found.map(\.key).contains(["L898902C3", "740812", "120415"]), "\(found.map(\.key))")
        #expect(found.allSatisfy { $0.dateOfBirth != "740312" }, "a birth date failing its check digit: \(found.map(\.key))")
    }

    @Test("Germany's G<0000000: offered with the filler, and with a 0 there (same check value) for the chip to tell")
    func germanFillerNumber() throws {
        let lines = ["PCD<<MUSTERMANN<<LEON<<<<<<<<<<<<<<<<<<<<<<<", "G<00000002D<<1003156M2010315<<<<<<<<<<<<<<<6"]
        let found = Self.candidates(lines, overrides: [[1, 1]: ["<": 0.8, "0": 0.19]])
        let keys = found.map(\.key)
        #expect(keys.first == ["G<0000000", "100315", "201031"], "\(keys)")
        #expect(keys.contains(["G00000000", "100315", "201031"]), "\(keys)")
        // The verdict takes the filler where Germany puts it, under D<<.
        let reading = try #require(MRZDecoder(format: .td3, policy: .standard).decode(MRZDecoderTests.scores(lines)))
        #expect(reading.accessKeyValid, "\(reading.checkDigits)")
        // Anywhere else a filler inside a number earns no verdict (a K read as <): only Germany's
        // pattern, under D<<.
        #expect(MRZDecoder.isGermanFillerNumber("G<0000000", state: "D<<"))
        #expect(!MRZDecoder.isGermanFillerNumber("G<0000000", state: "UTO"))
        #expect(!MRZDecoder.isGermanFillerNumber("T<X273N80", state: "D<<"))
        #expect(!MRZDecoder.isGermanFillerNumber("GK0000000", state: "D<<"))
    }

    @Test("no key whose check digits can hold: no candidate; never more than three", arguments: [0.34, 0.97])
    func boundsAndNothing(sure: Double) throws {
        // A misprinted birth check digit that no probable reading repairs: nothing to try.
        var lines = Self.td3
        lines[1] = String(lines[1].prefix(19)) + "7" + String(lines[1].dropFirst(20))
        let found = MRZDecoder(format: .td3, policy: .standard).keyCandidates(MRZDecoderTests.scores(lines, sure: Float(sure)))
        #expect(found.count <= MRZKeyCandidate.maximum)
        if sure > 0.9 { #expect(found.isEmpty, "\(found.map(\.key))") }
    }
}
