import Foundation
import ImageCodecs
import MRTDEmulator
import TestSupport
import Testing

/// `gbgbridge read --mrz-from-image PHOTO` (issue 50) as a user runs it, through a real pcscd and
/// the emulator: the photo's key candidates tried on the chip, the answer naming which opened it,
/// the MRZ shown the chip's DG1 (verified), never the photo's; a chip of another document refuses
/// every key and the read says how many were tried.
@Suite("gbgbridge read --mrz-from-image through pcscd", .serialized,
       .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
struct ReadFromImageTests {
    func read(_ photo: String) async throws -> CommandOutcome {
        try await runCommand(GBGBridgeBinary.path, ["read", "--reader", PCSCDHarness.vpcdReaderName, "--mrz-from-image", photo, "--json",
                                                    "--trust", "Fixtures/pki/csca.cert.pem", "--timeout", "10"], timeout: .seconds(180))
    }

    @Test("the specimen's photo opens its chip: accessKeyFrom photo, candidate 1; the MRZ is DG1's")
    func photoOpensTheChip() async throws {
        let directory = try MRZCommandTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let photo = try MRZCommandTests.specimenFiles(in: directory).jpeg
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let outcome = try await PCSCDHarness.withEmulatedCard(chip) { _ in try await read(photo) }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let from = try #require(report["accessKeyFrom"] as? [String: Any], "\(outcome.standardOutput.prefix(400))")
        #expect(from["source"] as? String == "photo" && from["candidate"] as? Int == 1 && from["tried"] as? Int == 1)
        #expect(report["mrz"] as? String == MRZDecoderTests.specimens[0].1.joined(separator: "\n"))
        #expect(((report["verification"] as? [String: Any])?["passive"] as? [String: Any])?["status"] as? String == "valid")
        #expect(outcome.standardError.contains("read from the photo; now the chip decides"), "\(outcome.standardError)")
    }

    @Test("a chip of another document refuses every key read from the photo: exit 3, how many were tried")
    func anotherChipRefuses() async throws {
        let directory = try MRZCommandTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let photo = try MRZCommandTests.specimenFiles(in: directory).png
        var passport = try TestFixtures.passport("utopia-td1-idcard")
        passport.quirks.slowAfterWrongKey = 50
        let chip = VirtualPassportChip(passport: passport)
        let outcome = try await PCSCDHarness.withEmulatedCard(chip) { _ in try await read(photo) }
        #expect(outcome.status == 3, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("keys read from the photo"), "\(outcome.standardError)")
        #expect(outcome.standardOutput.contains("ACCESS_DENIED"), "\(outcome.standardOutput)")
        #expect((1...3).contains(chip.statistics.bacFailures), "\(chip.statistics)")
        #expect(!outcome.standardError.contains("L898902C3"), "no key in the output")
    }

    @Test("a photo without an MRZ: exit 7, nothing sent to a chip")
    func photoWithoutMRZ() async throws {
        let directory = try MRZCommandTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let blank = directory.appendingPathComponent("blank.png")
        try Data(try ImageCodecs.encodePNG(ImageCodecs.RGBImage(width: 320, height: 200, pixels: [UInt8](repeating: 230, count: 320 * 200 * 3)))).write(to: blank)
        let outcome = try await runCommand(GBGBridgeBinary.path, ["read", "--mrz-from-image", blank.path, "--timeout", "1"], timeout: .seconds(120))
        #expect(outcome.status == 7, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("no access key read from"), "\(outcome.standardError)")
    }
}
