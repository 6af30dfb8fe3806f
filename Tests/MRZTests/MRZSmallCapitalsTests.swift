import Testing
@testable import MRZ

/// Under 8-pixel capitals (`Policy.forSmallGlyphs`) a rival reading must be a twentieth as likely
/// as the key: the classifier's own sure misreadings can cancel in a check digit there. A rival
/// that rests on the look-alike floor alone is held to the tenth, as at larger print
/// (`Policy.floorRivalRatio`). Probabilities made up cell by cell (`MRZDecoderTests.scores`).
@Suite("MRZ verdicts under 8-pixel capitals: the classifier's rivals and the floor's")
struct MRZSmallCapitalsTests {
    static let td3 = MRZDecoderTests.specimens[0].1
    static let small = MRZDecoder.Policy.standard.forCapHeight(6)
    static let large = MRZDecoder.Policy.standard.forCapHeight(20)

    @Test("L898902C3 read surely: the floor's rival LB9B902C3 (8 as B twice, 0.3 x 0.3) is no reason to refuse it")
    func floorsRival() throws {
        #expect(Self.small.floorRivalRatio == 0.1 && Self.small.keyUndetectableRatio == 0.05)
        let scores = MRZDecoderTests.scores(Self.td3, sure: 0.99)
        let reading = try #require(MRZDecoder(format: .td3, policy: Self.small).decode(scores))
        #expect(reading.documentNumber == "L898902C3" && reading.accessKeyValid)
        // The same under the single twentieth (the policy before): refused.
        var before = MRZDecoder.Policy.standard
        before.smallFloorRivalRatio = 0.05
        let refused = try #require(MRZDecoder(format: .td3, policy: before.forCapHeight(6)).decode(scores))
        #expect(refused.documentNumber == "L898902C3" && !refused.accessKeyValid)
    }

    @Test("the classifier's own rival at 0.0625 (8 or 9, 2 or 1, each 0.8 / 0.2, cancelling): refused under 8 pixels, not above")
    func classifiersRival() throws {
        // L898902C3: places 3 and 6 (weight 7 each): 8 -> 9 adds 7, 2 -> 1 takes 7 away.
        let scores = MRZDecoderTests.scores(Self.td3, sure: 0.99, overrides: [[1, 3]: ["8": 0.8, "9": 0.2], [1, 6]: ["2": 0.8, "1": 0.2]])
        let small = try #require(MRZDecoder(format: .td3, policy: Self.small).decode(scores))
        #expect(small.documentNumber == "L898902C3" && !small.accessKeyValid)
        let large = try #require(MRZDecoder(format: .td3, policy: Self.large).decode(scores))
        #expect(large.documentNumber == "L898902C3" && large.accessKeyValid)
    }

    @Test("0 and O stay at 0.35 under 8 pixels: two zeros whose changes cancel are still refused")
    func zerosStillRefused() throws {
        // C01X00T47 under UTO: places 1 and 4 (weight 3) read O and Q add 72 + 78 ≡ 0: 0.35 x 0.3,
        // over the tenth.
        let scores = MRZDecoderTests.scores(MRZNationalNumberTests.issued(by: "UTO"), sure: 0.99)
        let reading = try #require(MRZDecoder(format: .td3, policy: Self.small).decode(scores))
        #expect(reading.documentNumber == "C01X00T47" && !reading.accessKeyValid)
    }
}
