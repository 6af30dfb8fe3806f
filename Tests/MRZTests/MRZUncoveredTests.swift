import Testing
@testable import MRZ

/// What no check digit covers earns `valid` on the classifier's word alone, so that word must be
/// sure; and a key claimed only on a second look (a cap height chosen again, shifted cells) must
/// not contradict what the first looks read. Probabilities made up cell by cell
/// (`MRZDecoderTests.scores`), as the frames that were claimed wrong gave them.
@Suite("MRZ verdicts: uncovered look-alikes, second looks")
struct MRZUncoveredTests {
    /// ICAO's MRV-A specimen: its optional data (`6ZE184226B`, line 2 from 28) has no check digit.
    static let visa = MRZDecoderTests.specimens[3].1

    @Test("a visa's optional data: a look-alike the classifier read at 0.88 keeps the key, loses valid (its floored twin leaves the margin); read surely, valid")
    func uncoveredLookAlike() throws {
        let decoder = MRZDecoder(format: .mrvA, policy: .standard)
        let sure = try #require(decoder.decode(MRZDecoderTests.scores(Self.visa, sure: 0.99)))
        #expect(sure.valid && sure.accessKeyValid)
        // The optional data's `8` (line 2, place 32) read 8 at 0.88, B at 0.09 by the classifier:
        // floored, B is 0.26 — over the 0.8 minimum and the 0.5 margin, as the frame claimed wrong.
        let unsure = try #require(decoder.decode(MRZDecoderTests.scores(Self.visa, sure: 0.99, overrides: [[1, 32]: ["8": 0.88, "B": 0.09]])))
        #expect(unsure.lines == Self.visa && unsure.accessKeyValid)
        #expect(!unsure.valid, "nothing but the classifier's 0.88 says 8 and not B there")
        // A letter without a look-alike, as unsure, is held to the ordinary minimum only.
        let letter = try #require(decoder.decode(MRZDecoderTests.scores(Self.visa, sure: 0.99, overrides: [[1, 30]: ["E": 0.9, "F": 0.05]])))
        #expect(letter.valid)
    }

    static func reading(_ number: String, key: Bool) throws -> MRZReading {
        var reading = try #require(MRZDecoder(format: .td3, policy: .standard).decode(MRZDecoderTests.scores(MRZDecoderTests.specimens[0].1, sure: 0.99)))
        reading.documentNumber = number
        reading.accessKeyValid = key
        reading.valid = key
        return reading
    }

    @Test("a key claimed on a second look is no claim when a first look read another key whose check digits hold")
    func secondLookConflict() throws {
        let claimed = try Self.reading("DG0BUA58E", key: true)
        let birth = claimed.dateOfBirth, expiry = claimed.dateOfExpiry
        let vetoed = MRZRecognizer.withoutPrimaryConflict(claimed, primaryKeys: [["DGOBUA58K", birth, expiry]])
        #expect(!vetoed.accessKeyValid && !vetoed.valid)
        #expect(MRZRecognizer.withoutPrimaryConflict(claimed, primaryKeys: [["DG0BUA58E", birth, expiry]]).accessKeyValid, "the same key: kept")
        #expect(MRZRecognizer.withoutPrimaryConflict(claimed, primaryKeys: []).accessKeyValid, "no first look read a key: kept")
        // An unclaimed reading is left as it is.
        #expect(!MRZRecognizer.withoutPrimaryConflict(try Self.reading("X", key: false), primaryKeys: [["Y", birth, expiry]]).accessKeyValid)
    }
}
