import Testing
@testable import MRZ

/// Three `0`s misread `O` can cancel in a check digit where no two of them do (an `O` is 24, a
/// `0` is 0: 24 × (1 + 3 + 1) ≡ 0), and the look-alike floor's rival for the three is then
/// 0.3³ — far under the tenth — while the chosen reading is a quarter of all the check digit
/// accepts. So a key group with two or more `O`s read unsurely (under 0.95) where a `0` may stand
/// earns no key; the key candidates still offer it, for the chip (`Policy.doubtfulOsMaximum`).
/// Probabilities as the classifier gave them for the zeros tier's frame that was claimed wrong
/// (seed 4646, tier place 4, image 125), made up cell by cell (`MRZDecoderTests.scores`).
@Suite("MRZ verdicts: doubtful Os where 0s may stand")
struct MRZDoubtfulOTests {
    /// A Swiss card numbered XQ0Q00O00 (its check digit 9), as printed.
    static let printed = ["IDCHEXQ0Q00O009<<<<<<<<<<<<<<<", "5410101F2709031GRC<<<<<<<<<<<2", "SMITH<<THI<MAI<<<<<<<<<<<<<<<<"]
    /// The misreading: the number's 6th, 8th and 9th places (weights 1, 3, 1) read O.
    static let misread = ["IDCHEXQ0Q0OOOO9<<<<<<<<<<<<<<<", "5410101F2709031GRC<<<<<<<<<<<2", "SMITH<<THI<MAI<<<<<<<<<<<<<<<<"]
    static let policy = MRZDecoder.Policy.standard.forCapHeight(13)

    @Test("three 0s read O at 0.78, 0.84, 0.90: the check digits hold, no key is claimed, the chip is still offered it")
    func threeDoubtfulOs() throws {
        #expect(Self.policy.zeroOFloor == nil, "13-pixel capitals: the ordinary floor")
        let overrides: [[Int]: [Character: Float]] = [[0, 10]: ["O": 0.78, "0": 0.20], [0, 12]: ["O": 0.84, "0": 0.15], [0, 13]: ["O": 0.90, "0": 0.09]]
        let scores = MRZDecoderTests.scores(Self.misread, sure: 0.99, overrides: overrides)
        let decoder = MRZDecoder(format: .td1, policy: Self.policy)
        let reading = try #require(decoder.decode(scores))
        #expect(reading.documentNumber == "XQ0Q0OOOO" && reading.checkDigits.values.allSatisfy { $0 })
        #expect(!reading.accessKeyValid && !reading.valid)
        // The chip is still asked (the verdict is no candidate's gate).
        let keys = decoder.keyCandidates(scores).map(\.documentNumber)
        #expect(keys.first == "XQ0Q0OOOO", "\(keys)")
        // As before the rule (no limit): claimed.
        var before = Self.policy
        before.doubtfulOsMaximum = 9
        #expect(try #require(MRZDecoder(format: .td1, policy: before).decode(scores)).accessKeyValid)
    }

    @Test("the printed number read surely, its one O sure: claimed; Os read surely are no doubt")
    func sureOs() throws {
        let decoder = MRZDecoder(format: .td1, policy: Self.policy)
        #expect(try #require(decoder.decode(MRZDecoderTests.scores(Self.printed, sure: 0.99))).accessKeyValid)
        // An O-heavy number printed so and read surely keeps its key.
        #expect(try #require(decoder.decode(MRZDecoderTests.scores(Self.misread, sure: 0.99))).accessKeyValid)
    }
}
