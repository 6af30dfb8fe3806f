import ChipRead
import Foundation
import GBGBridgeNFC
import MRTDEmulator
import SmartCard
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// The checks every quirky read must pass: the same files as the chip holds, verified.
func expectFaithfulRead(_ result: PassportReadResult, of chip: VirtualPassportChip, quirk: Quirk, passport name: String,
                        sourceLocation: SourceLocation = #_sourceLocation) {
    let label = "\(quirk.name) on \(name)"
    #expect(result.passiveOutcome.status == .valid, "\(label): \(result.passiveOutcome.detail)", sourceLocation: sourceLocation)
    for (fid, content) in chip.passport.applicationFiles {
        let file: LDSFile = fid == 0x011E ? .com : fid == 0x011D ? .sod : .dataGroup(Int(fid - 0x0100))
        guard quirk.dataGroups.map({ file.dataGroupNumber.map($0.contains) ?? true }) ?? true else { continue }
        #expect(result.files[file] == content, "\(label): \(file)", sourceLocation: sourceLocation)
    }
    if let wanted = quirk.dataGroups, wanted.contains(5) {
        #expect(result.skipped[.dataGroup(5)] != nil, "\(label): DG5 reported absent", sourceLocation: sourceLocation)
    }
    let offersPACE = chip.passport.pace != nil
    #expect(result.accessControl == (offersPACE && quirk.paceWorks ? "PACE" : "BAC"),
            "\(label): \(result.accessControlNote ?? "")", sourceLocation: sourceLocation)
    if offersPACE && !quirk.paceWorks {
        #expect(result.accessControlNote?.contains("EF.CardAccess") == true, "\(label): the note says why", sourceLocation: sourceLocation)
    }
}

@Suite("Chip quirks, in process")
struct ChipQuirkTests {
    static let passports = ["utopia-td3-jpeg", "utopia-td3-pace"]
    static let trust = TestFixtures.testTrustStore

    @Test("each quirk and all at once, on a BAC passport and a PACE passport", arguments: Quirk.all, passports)
    func quirkyChipIsRead(quirk: Quirk, passport: String) async throws {
        let chip = try quirk.chip(passport)
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip),
                                              accessKey: try quirk.accessKey(passport),
                                              options: ReadOptions.forTest(dataGroups: quirk.dataGroups, trustStore: Self.trust)).read()
        expectFaithfulRead(result, of: chip, quirk: quirk, passport: passport)
        #expect(result.statistics.reauthentications <= 3, "\(quirk.name): \(result.statistics.reauthentications) new sessions")
    }

    @Test("a PACE-only card with each quirk PACE can get around", arguments: Quirk.all.filter(\.paceWorks))
    func paceOnlyCard(quirk: Quirk) async throws {
        let chip = try quirk.chip("utopia-id-pace-only")
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip),
                                              accessKey: try TestFixtures.accessKey("utopia-id-pace-only"),
                                              options: ReadOptions.forTest(dataGroups: quirk.dataGroups, trustStore: Self.trust)).read()
        expectFaithfulRead(result, of: chip, quirk: quirk, passport: "utopia-id-pace-only")
    }

    @Test("with the MRZ (BAC possible), a PACE chip is still opened with PACE", arguments: Quirk.all.filter(\.paceWorks))
    func paceWithTheMRZ(quirk: Quirk) async throws {
        let chip = try quirk.chip("utopia-td3-pace")
        let mrz = try TestFixtures.description("utopia-td3-pace").mrz.lines.joined(separator: "\n")
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try AccessKey.mrz(mrz),
                                              options: ReadOptions.forTest(dataGroups: quirk.dataGroups, trustStore: Self.trust)).read()
        var quirks = ChipQuirks()
        quirk.apply(&quirks)
        if quirks.noShortFileIdentifier == "6A82" && quirks.selectMasterFile != nil {
            // EF.CardAccess answers 6A82 by short EF identifier, and once inside the application
            // the chip lets nobody back to the MF to look for it by file identifier: BAC, and
            // the anti-downgrade check says the signed PACE offer went unused.
            #expect(result.accessControl == "BAC")
            #expect(result.cardAccessCheck.status == .invalid, "\(result.cardAccessCheck.detail)")
            #expect(result.passiveOutcome.status == .valid)
        } else {
            expectFaithfulRead(result, of: chip, quirk: quirk, passport: "utopia-td3-pace")
            #expect(result.cardAccessCheck.status == .valid, "\(quirk.name): \(result.cardAccessCheck.detail)")
        }
    }

    @Test("a chip that supports SFI costs no extra APDU for the fallback")
    func noExtraAPDUWithSFI() async throws {
        let chip = try Quirk(name: "none") { _ in }.chip("utopia-td3-jpeg")
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip),
                                              accessKey: try TestFixtures.accessKey("utopia-td3-jpeg"),
                                              options: ReadOptions.forTest(trustStore: Self.trust)).read()
        // EF.CardAccess, SELECT, GET CHALLENGE, EXTERNAL AUTHENTICATE, one READ BINARY per file.
        #expect(result.statistics.apdus == 1 + 3 + chip.passport.applicationFiles.count)
    }

    @Test("the SSC convention is learnt once: a second unprotected answer costs no new session")
    func sscConventionIsLearntOnce() async throws {
        let quirk = Quirk(name: "plain errors, not counted", dataGroups: [1, 5, 6, 11, 12]) {
            $0.plainErrors = true
            $0.plainErrorsCountInSSC = false
        }
        let chip = try quirk.chip("utopia-td3-jpeg")
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip),
                                              accessKey: try TestFixtures.accessKey("utopia-td3-jpeg"),
                                              options: ReadOptions.forTest(dataGroups: quirk.dataGroups, trustStore: Self.trust)).read()
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.statistics.reauthentications == 1, "one new session to learn the convention, none for DG6")
        #expect(result.skipped.keys.sorted() == [.dataGroup(5), .dataGroup(6)])
    }
}

@Suite("Chip quirks through pcscd", .serialized)
struct ChipQuirkPCSCTests {
    static let trust = TestFixtures.testTrustStore

    @Test("quirks end to end through pcscd + vpcd", arguments: Quirk.all, ["utopia-td3-jpeg", "utopia-td3-pace"])
    func throughPCSC(quirk: Quirk, passport: String) async throws {
        let chip = try quirk.chip(passport)
        let key = try quirk.accessKey(passport)
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            defer { Task { await connection.disconnect() } }
            return try await PassportReader(connection: connection, accessKey: key,
                                            options: ReadOptions.forTest(dataGroups: quirk.dataGroups, trustStore: Self.trust)).read()
        }
        expectFaithfulRead(result, of: chip, quirk: quirk, passport: passport)
    }
}

@Suite("Files EF.SOD lists but the chip does not give (downgrade protection)")
struct HiddenFileTests {
    static let trust = TestFixtures.testTrustStore

    func read(hiding fid: UInt16, protect: Bool = false, passport name: String = "utopia-td3-pace") async throws -> PassportReadResult {
        var passport = try TestFixtures.passport(name)
        let chip: VirtualPassportChip
        if protect {
            chip = VirtualPassportChip(passport: passport)
            // Access protected, as EAC data groups are: 6982 to the read by SFI and to SELECT.
            chip.setFaults(ChipFaults(statusOverrides: [
                .init(ins: 0xB0, p1: 0x80 | UInt8(fid & 0x1F), statusWord: .securityStatusNotSatisfied, once: false),
                .init(ins: 0xA4, statusWord: .securityStatusNotSatisfied, once: false).forFile(fid),
            ]))
        } else {
            passport.applicationFiles[fid] = nil  // EF.SOD still lists it
            chip = VirtualPassportChip(passport: passport)
        }
        return try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try TestFixtures.accessKey(name),
                                        options: ReadOptions.forTest(trustStore: Self.trust)).read()
    }

    @Test("a chip that hides DG15 fails Active Authentication instead of passing as a chip without it")
    func hiddenDG15() async throws {
        let result = try await read(hiding: 0x010F)
        #expect(result.active.status == .invalid, "\(result.active.detail)")
        #expect(result.active.detail.contains("DG15"))
        #expect(result.passive?.dataGroups["DG15"] == .missing)
        #expect(result.passiveOutcome.status == .invalid)
        #expect(result.passiveOutcome.detail.contains("DG15"))
    }

    @Test("a chip that hides DG14 fails Chip Authentication")
    func hiddenDG14() async throws {
        let result = try await read(hiding: 0x010E)
        #expect(result.chip.status == .invalid, "\(result.chip.detail)")
        #expect(result.passive?.dataGroups["DG14"] == .missing)
    }

    @Test("a protected DG15 is reported protected; AA cannot pass")
    func protectedDG15() async throws {
        let result = try await read(hiding: 0x010F, protect: true)
        #expect(result.passive?.dataGroups["DG15"] == .protected)
        #expect(result.active.status == .invalid, "\(result.active.detail)")
        #expect(result.passiveOutcome.status == .valid, "protected files are expected on real chips: \(result.passiveOutcome.detail)")
    }

    @Test("a hidden DG11 makes passive authentication invalid, naming it")
    func hiddenDG11() async throws {
        let result = try await read(hiding: 0x010B)
        #expect(result.passive?.dataGroups["DG11"] == .missing)
        #expect(result.passiveOutcome.status == .invalid)
        #expect(result.skipped[.dataGroup(11)] != nil)
    }

    @Test("asking only for DG1 still checks AA and CA (their files are read for the verification)")
    func verificationFilesAreRead() async throws {
        let passport = try TestFixtures.passport("utopia-td3-pace")
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: VirtualPassportChip(passport: passport)),
                                              accessKey: try TestFixtures.accessKey("utopia-td3-pace"),
                                              options: ReadOptions.forTest(dataGroups: [1], trustStore: Self.trust)).read()
        #expect(result.active.status == .valid, "\(result.active.detail)")
        #expect(result.chip.status == .valid, "\(result.chip.detail)")
        #expect(result.passive?.dataGroups["DG2"] == .notRead)
    }
}

extension ChipFaults.StatusOverride {
    /// The override for SELECT of one file identifier only (matched on the command data).
    func forFile(_ fid: UInt16) -> ChipFaults.StatusOverride {
        var copy = self
        copy.data = [UInt8(fid >> 8), UInt8(fid & 0xFF)]
        return copy
    }
}

@Suite("EF.CardAccess against the signed security infos (anti-downgrade)")
struct CardAccessConsistencyTests {
    static let trust = TestFixtures.testTrustStore

    func read(_ passport: EmulatedPassport, key: AccessKey) async throws -> PassportReadResult {
        try await PassportReader(connection: EmulatedCardConnection(chip: VirtualPassportChip(passport: passport)), accessKey: key,
                                 options: ReadOptions.forTest(trustStore: Self.trust)).read()
    }

    static func mrz(_ name: String) throws -> AccessKey {
        try AccessKey.mrz(try TestFixtures.description(name).mrz.lines.joined(separator: "\n"))
    }

    @Test("a genuine PACE chip: EF.CardAccess offers what DG14 lists", arguments: ["utopia-td3-pace", "utopia-id-pace-only"])
    func consistent(name: String) async throws {
        let result = try await read(try TestFixtures.passport(name), key: try TestFixtures.accessKey(name))
        #expect(result.cardAccessCheck.status == .valid, "\(result.cardAccessCheck.detail)")
        #expect(ReadReport(result).verification.cardAccess?.status == .valid)
    }

    @Test("EF.CardAccess taken away: the read falls back to BAC, and the downgrade is reported")
    func hiddenPACE() async throws {
        var passport = try TestFixtures.passport("utopia-td3-pace")
        passport.masterFiles[EmulatedPassport.efCardAccess] = nil
        let result = try await read(passport, key: try Self.mrz("utopia-td3-pace"))
        #expect(result.accessControl == "BAC")
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.cardAccessCheck.status == .invalid)
        #expect(result.cardAccessCheck.detail.contains("PACE-ECDH-GM-AES-128"), "\(result.cardAccessCheck.detail)")
        #expect(result.cardAccessCheck.detail.contains("BAC"))
    }

    @Test("EF.CardAccess replaced by a weaker offer is reported")
    func weakenedPACE() async throws {
        var passport = try TestFixtures.passport("utopia-td3-pace")
        let weaker = PACEInfo(protocolID: PACE.ProtocolID(keyAgreement: .ecdh, mapping: .genericMapping, keyType: .tripleDES),
                              parameterId: 13, domainParameters: nil)
        passport.masterFiles[EmulatedPassport.efCardAccess] = DER.set([weaker.der])
        let result = try await read(passport, key: try Self.mrz("utopia-td3-pace"))
        #expect(result.cardAccessCheck.status == .invalid, "\(result.cardAccessCheck.detail)")
        #expect(result.cardAccessCheck.detail.contains("AES-128"))
    }

    @Test("a chip whose DG14 does not repeat EF.CardAccess cannot be checked (notChecked, never valid)")
    func nonConformantDG14() async throws {
        var description = try TestFixtures.description("utopia-td3-pace")
        var quirks = ChipQuirks()
        quirks.dg14WithoutCardAccessInfos = true
        description.quirks = quirks
        let passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        let result = try await read(passport, key: try TestFixtures.accessKey("utopia-td3-pace"))
        #expect(result.cardAccessCheck.status == .notChecked, "\(result.cardAccessCheck.detail)")
    }
}

@Suite("Chip quirks and tag loss through libnfc and an emulated PN532", .serialized)
struct ChipQuirkLibNFCTests {
    static let trust = TestFixtures.testTrustStore

    /// Reads `chip` through libnfc (a PN532 on a pseudo-terminal: short APDUs only, as on real
    /// PN53x readers), waiting for the card after a loss as `nfc.read` does.
    func readThroughPN532(_ chip: VirtualPassportChip, key: AccessKey, dataGroups: [Int]? = nil,
                          log: ProgressLog = ProgressLog()) async throws -> PassportReadResult {
        let terminal = try PN532PseudoTerminal(chip: chip)
        terminal.start()
        defer { terminal.stop() }
        let backend = LibNFCBackend(connectionStrings: [terminal.connectionString], discover: false, pollInterval: .milliseconds(20))
        let info = try await backend.waitForCard(readerMatching: nil, timeout: .seconds(10))
        let reader = PassportReader(connection: try await backend.connect(reader: info.name), accessKey: key,
                                    options: ReadOptions.forTest(dataGroups: dataGroups, trustStore: Self.trust), progress: log.handler,
                                    reconnect: { try await backend.reconnect(reader: info.name, until: .now + .seconds(10)) })
        let result = try await reader.read()
        await reader.connection.disconnect()
        return result
    }

    @Test("each quirk and all at once through libnfc", arguments: Quirk.all)
    func throughLibNFC(quirk: Quirk) async throws {
        let chip = try quirk.chip("utopia-td3-pace")
        let result = try await readThroughPN532(chip, key: try quirk.accessKey("utopia-td3-pace"), dataGroups: quirk.dataGroups)
        expectFaithfulRead(result, of: chip, quirk: quirk, passport: "utopia-td3-pace")
        #expect(result.statistics.extendedLength == false)
    }

    @Test("the card leaves the PN532's field mid-read and comes back", arguments: [5, 14, 30])
    func tagLossThroughLibNFC(after: Int) async throws {
        let chip = try tagLossChip("utopia-td3-pace", afterAPDUs: after, returnAfter: 300)
        let log = ProgressLog()
        let result = try await readThroughPN532(chip, key: try TestFixtures.accessKey("utopia-td3-pace"), log: log)
        #expect(result.statistics.reconnections == 1)
        expectFaithfulRead(result, of: chip, quirk: Quirk(name: "tag loss after \(after) APDUs") { _ in }, passport: "utopia-td3-pace")
        #expect(result.chip.status == .valid && result.active.status == .valid, "\(result.chip.detail); \(result.active.detail)")
        #expect(log.all.contains { $0.phase == .waitingForCard && $0.reason == ReadProgress.cardRemovedReason })
    }
}
