import ChipRead
import GBGBridge
import GBGBridgeNFC
import MRTD
import MRTDEmulator
import SmartCard
import TestSupport
import Testing

/// Keys read from a photo are guesses the chip confirms (issue 50): tried in turn on the same
/// card, at most three, the first that opens the chip named in the answer (`accessKeyFrom`), none
/// opening it an ACCESS_DENIED that says how many were tried — also against a chip that slows
/// down after each wrong key, as passports do.
@Suite("Key candidates tried on the chip")
struct KeyCandidateReadTests {
    static let right = ["L898902C3", "740812", "120415"]
    static let wrongNumber = ["L898902O3", "740812", "120415"]
    static let wrongBirth = ["L898902C3", "740813", "120415"]

    static func keys(_ triples: [[String]]) throws -> [AccessKey] {
        try triples.map { try AccessKey.fields(documentNumber: $0[0], dateOfBirth: $0[1], dateOfExpiry: $0[2]) }
    }

    @MainActor
    static func rig(candidates: [[String]], slowAfterWrongKey: Int? = nil) throws -> NFCRig {
        var passport = try TestFixtures.passport("utopia-td3-jpeg")
        passport.quirks.slowAfterWrongKey = slowAfterWrongKey
        let rig = try NFCRig(chip: VirtualPassportChip(passport: passport))
        let keys = try Self.keys(candidates)
        rig.service.documentCaptureMRZ = { _ in .success(keys) }
        return rig
    }

    @Test("the second candidate opens the chip: accessKeyFrom says so, the MRZ shown is the chip's")
    @MainActor
    func secondCandidateOpens() async throws {
        let rig = try Self.rig(candidates: [Self.wrongNumber, Self.right, Self.wrongBirth], slowAfterWrongKey: 40)
        rig.request("c1", #"{"accessKey":{"fromDocumentCapture":true},"timeoutSeconds":10}"#)
        let answer = try #require(await rig.response("c1"))
        #expect(answer.payload.status == .success, "\(answer.payload.error?.message ?? "")")
        let from = try #require(answer.payload.data?["accessKeyFrom"]?.objectValue)
        #expect(from["source"] == .string("photo") && from["candidate"] == .number(2) && from["tried"] == .number(2), "\(from)")
        #expect(answer.payload.data?["document"]?.objectValue?["documentNumber"] == .string("L898902C3"))
        #expect(rig.chip.statistics.bacFailures == 1 && rig.chip.statistics.bacSuccesses == 1)
        // The chip held its next attempt back after the wrong key, and the read went on.
        #expect(rig.chip.statistics.slowedAnswers == 1)
    }

    @Test("no candidate opens the chip: ACCESS_DENIED, recoverable, naming how many keys read from the photo were tried")
    @MainActor
    func noCandidateOpens() async throws {
        let rig = try Self.rig(candidates: [Self.wrongNumber, Self.wrongBirth], slowAfterWrongKey: 20)
        rig.request("c2", #"{"accessKey":{"fromDocumentCapture":true},"timeoutSeconds":10}"#)
        let answer = try #require(await rig.response("c2"))
        #expect(answer.payload.status == .error)
        #expect(answer.payload.error?.code == "ACCESS_DENIED" && answer.payload.error?.recoverable == true)
        #expect(answer.payload.error?.message.contains("tried 2 keys read from the photo") == true, "\(answer.payload.error?.message ?? "")")
        // Nothing of the keys in the message.
        #expect(answer.payload.error?.message.contains("L898902") == false)
        #expect(rig.chip.statistics.bacFailures == 2 && rig.chip.statistics.slowedAnswers == 1)
    }

    @Test("never more than three keys: the right one fourth is never tried")
    func atMostThree() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let backend = EmulatedReaderBackend(chip: chip)
        let keys = try Self.keys([Self.wrongNumber, Self.wrongBirth, ["L898902C3", "740812", "120416"], Self.right])
        let job = ReadJob(reader: nil, accessKey: keys[0], options: .forTest(), cardTimeout: .seconds(10))
        let (outcome, trial) = await job.run(on: backend, keys: keys, progress: { _ in })
        guard case .failed(let error, _, _, _) = outcome else { Issue.record("the fourth key was tried"); return }
        #expect(error.code == .accessDenied)
        #expect(trial.used == nil && trial.tried == 3)
        #expect(chip.statistics.bacFailures == 3 && chip.statistics.bacSuccesses == 0)
    }

    @Test("a key the chip refuses for another reason than the key ends the trial (the next key is not tried)")
    func otherFailuresEndTheTrial() async throws {
        let job = ReadJob(reader: "no such reader", accessKey: try Self.keys([Self.right])[0], options: .forTest(), cardTimeout: .milliseconds(200))
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let (outcome, trial) = await job.run(on: EmulatedReaderBackend(chip: chip), keys: try Self.keys([Self.wrongNumber, Self.right]), progress: { _ in })
        guard case .noCard = outcome else { Issue.record("\(outcome)"); return }
        #expect(trial.tried == 1 && trial.used == nil)
    }
}
