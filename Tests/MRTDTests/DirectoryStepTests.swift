import ChipRead
import GBGBridgeNFC
import MRTDEmulator
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// EF.DIR as a step of the read: asked of chips with EF.CardAccess only, reported when present,
/// one APDU when absent, a note (never a failed read) when broken.
@Suite("The directory step (EF.DIR)")
struct DirectoryStepTests {
    static let table31 = h("61094F07A0000002471001" + "61094F07A0000002472001" + "61094F07A0000002472002" + "61094F07A0000002472003")

    func read(_ name: String, directory: [UInt8]?) async throws -> (PassportReadResult, VirtualPassportChip) {
        var passport = try TestFixtures.passport(name)
        if let directory { passport.masterFiles[EmulatedPassport.efDIR] = directory }
        let chip = VirtualPassportChip(passport: passport)
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try PassportReaderTests.key(name),
                                              options: ReadOptions.forTest(trustStore: PassportReaderTests.trust)).read()
        return (result, chip)
    }

    @Test func anLDS2DirectoryIsReadAndReported() async throws {
        let (result, _) = try await read("utopia-td3-pace", directory: Self.table31)
        #expect(result.accessControl == "PACE")
        #expect(result.directory?.identifiers.count == 4)
        #expect(result.files[.directory] == Self.table31)
        #expect(result.passiveOutcome.status == .valid, "an unsigned EF.DIR does not touch passive authentication")
        let report = ReadReport(result)
        #expect(report.applications?.map(\.aid) == ["A0000002471001", "A0000002472001", "A0000002472002", "A0000002472003"])
        #expect(report.applications?.first?.name == "eMRTD (LDS1)")
        let step = try #require(result.steps.first { $0.name == "directory" })
        #expect(step.apdus >= 2)  // SELECT and at least one READ BINARY
        // In the list's order: after the card access step, before access control.
        let names = result.steps.map(\.name)
        #expect(names.firstIndex(of: "directory")! < names.firstIndex(of: "access control")!, "\(names)")
    }

    @Test func aChipWithoutOneCostsOneAPDUAndShowsNothing() async throws {
        let (with, withChip) = try await read("utopia-td3-pace", directory: Self.table31)
        let (without, withoutChip) = try await read("utopia-td3-pace", directory: nil)
        #expect(without.directory == nil && without.files[.directory] == nil)
        #expect(without.absent[.directory] == nil && without.parseErrors[.directory] == nil)
        #expect(ReadReport(without).applications == nil)
        #expect(without.steps.first { $0.name == "directory" }?.apdus == 1)
        #expect(without.passiveOutcome.status == .valid)
        #expect(withChip.statistics.apdus > withoutChip.statistics.apdus)
        _ = with
    }

    @Test func aBACOnlyChipIsNotAsked() async throws {
        let (result, _) = try await read("utopia-td3-jpeg", directory: Self.table31)
        #expect(result.accessControl == "BAC")
        #expect(result.directory == nil)
        #expect(!result.steps.contains { $0.name == "directory" })
    }

    @Test("a broken EF.DIR is a parse error and the read goes on", arguments: [
        ("6103500141", "no application identifier"),
        ("61094F07A00000024710", "not BER-TLV"),
    ])
    func broken(hex: String, says: String) async throws {
        let (result, _) = try await read("utopia-td3-pace", directory: h(hex))
        #expect(result.directory == nil)
        #expect(result.parseErrors[.directory]?.contains(says) == true, "\(result.parseErrors)")
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.dg1 != nil)
    }
}
