import Foundation
import MRTD
import MRTDCrypto
import SmartCard
import TestSupport
import TestTraits
import Testing
@testable import MRTDEmulator

@Suite("Virtual passport chip (in-process)")
struct ChipTests {
    static let annaKey = MRZ.keyInformation(documentNumber: "L898902C3", dateOfBirth: "740812", dateOfExpiry: "120415")

    func chip(_ name: String = "utopia-td3-jpeg") throws -> VirtualPassportChip {
        VirtualPassportChip(passport: try TestFixtures.passport(name))
    }

    func send(_ chip: VirtualPassportChip, _ command: CommandAPDU) throws -> ResponseAPDU {
        guard case .response(let bytes) = chip.process(try command.encoded()) else { throw SmartCardError(.cardRemoved, "removed") }
        return try ResponseAPDU(bytes: bytes)
    }

    @Test func onlyApplicationSelectAndChallengeBeforeBAC() throws {
        let chip = try chip()
        #expect(try send(chip, .selectApplication([0xA0, 0, 0, 2, 0x47, 0x10, 0x02])).statusWord == .fileNotFound)
        #expect(try send(chip, .selectApplication(EmulatedApplicationID.value)).statusWord == .success)
        #expect(try send(chip, .selectFile(0x011E)).statusWord == .securityStatusNotSatisfied)
        #expect(try send(chip, .readBinary(sfi: 0x1E, offset: 0, length: 4)).statusWord == .securityStatusNotSatisfied)
        #expect(try send(chip, .readBinary(offset: 0, length: 4)).statusWord == .commandNotAllowedNoEF)
        let challenge = try send(chip, .getChallenge())
        #expect(challenge.statusWord == .success && challenge.data.count == 8)
        #expect(try send(chip, CommandAPDU(ins: 0xCA, p1: 0, p2: 0)).statusWord == .insNotSupported)
        // The MF's public files are readable: EF.ATR/INFO announces extended length.
        #expect(try send(chip, CommandAPDU(ins: 0xA4, p1: 0, p2: 0x0C, data: [0x3F, 0x00])).statusWord == .success)
        #expect(try send(chip, .selectFile(0x2F01)).statusWord == .success)
        let info = try send(chip, .readBinary(offset: 0, length: 256))
        #expect(info.data.starts(with: [0x7F, 0x66]))
    }

    @Test func icaoStepReaderReadsEveryFixture() async throws {
        for name in TestFixtures.passportNames {
            let description = try TestFixtures.description(name)
            let mrz = try MRZ(description.mrz.lines.joined(separator: "\n"))
            let connection = EmulatedCardConnection(chip: try chip(name))
            var reader = ICAOStepReader(connection: connection)
            #expect(try await reader.selectApplication() == .success)
            try await reader.basicAccessControl(mrzInformation: mrz.keyInformation)
            let com = try await reader.readFile(0x011E, chunk: 0x80)
            #expect(com.first == 0x60)
            let dg1 = try await reader.readFile(0x0101, chunk: 0x80)
            let mrzText = try BERTLV.parseSingle(dg1).child(0x5F1F)?.value
            #expect(mrzText == Array(mrz.lines.joined().utf8), "\(name)")
            let sod = try await reader.readFile(0x011D, chunk: 0x80)
            #expect(sod.first == 0x77)
            let dg2 = try await reader.readFile(0x0102, chunk: 0x80)
            #expect(dg2.count > 5_000)
        }
    }

    @Test func wrongMRZIsRefusedAndLeavesNoSession() async throws {
        let chip = try chip()
        var reader = ICAOStepReader(connection: EmulatedCardConnection(chip: chip))
        _ = try await reader.selectApplication()
        await #expect(throws: ICAOStepReader.Failure.self) {
            try await reader.basicAccessControl(mrzInformation: MRZ.keyInformation(documentNumber: "L898902C3", dateOfBirth: "740813", dateOfExpiry: "120415"))
        }
        #expect(!chip.isAuthenticated)
        #expect(chip.statistics.bacFailures == 1)
        // A second EXTERNAL AUTHENTICATE without a fresh challenge is refused.
        #expect(try send(chip, CommandAPDU(ins: 0x82, p1: 0, p2: 0, data: [UInt8](repeating: 0, count: 40), ne: 40)).statusWord
                == .conditionsOfUseNotSatisfied)
    }

    @Test func wrongCommandMACDropsTheSession() async throws {
        let chip = try chip()
        var reader = ICAOStepReader(connection: EmulatedCardConnection(chip: chip))
        _ = try await reader.selectApplication()
        try await reader.basicAccessControl(mrzInformation: Self.annaKey)
        #expect(chip.isAuthenticated)
        var sm = try #require(reader.session)
        var protected = try sm.protect(.selectFile(0x011E))
        protected.data[protected.data.count - 1] ^= 0xFF
        #expect(try send(chip, protected).statusWord == .smDataObjectsIncorrect)
        #expect(!chip.isAuthenticated)
        #expect(chip.statistics.secureMessagingFailures == 1)
        // Even a correct command of the old session is now refused.
        #expect(try send(chip, try sm.protect(.selectFile(0x011E))).statusWord == .smDataObjectsIncorrect)
    }

    @Test func extendedLengthAndOddInsReads() async throws {
        // A chip with a 40,000-byte file so offsets above 32767 need READ BINARY B1.
        let big = BERTLV.encode(tag: 0x75, value: (0..<40_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let base = try TestFixtures.passport("utopia-td3-jpeg")
        var files = base.applicationFiles
        files[0x0102] = big
        let chip = VirtualPassportChip(passport: EmulatedPassport(masterFiles: [:], applicationFiles: files,
                                                                  mrzKeyInformation: base.mrzKeyInformation))
        var reader = ICAOStepReader(connection: EmulatedCardConnection(chip: chip))
        _ = try await reader.selectApplication()
        try await reader.basicAccessControl(mrzInformation: Self.annaKey)
        #expect(try await reader.send(.selectFile(0x0102)).statusWord == .success)
        // Extended: 30,000 bytes in one APDU.
        let first = try await reader.send(.readBinary(offset: 0, length: 30_000))
        #expect(first.statusWord == .success && first.data == Array(big[0..<30_000]))
        // Odd INS above offset 32767: the answer is wrapped in DO53.
        let odd = try await reader.send(.readBinary(offset: 33_000, length: 1_000))
        #expect(odd.statusWord == .success)
        let wrapped = try BERTLV.parseSingle(odd.data)
        #expect(wrapped.tag == 0x53)
        #expect(wrapped.value == Array(big[33_000..<(33_000 + wrapped.value.count)]))
        #expect(wrapped.value.count >= 990)
        // Reading past the end returns what is left with 6282.
        let tail = try await reader.send(.readBinary(offset: 0x7F00, length: 0x7FFF))
        #expect(tail.statusWord == .success || tail.statusWord == .endOfFileReached)
    }

    @Test func shortOnlyChipRefusesExtendedAPDUs() async throws {
        let chip = try chip("utopia-td3-jpeg2000")
        var reader = ICAOStepReader(connection: EmulatedCardConnection(chip: chip))
        _ = try await reader.selectApplication()
        try await reader.basicAccessControl(mrzInformation: MRZ.keyInformation(documentNumber: "X9Q7R2K41", dateOfBirth: "950730", dateOfExpiry: "320115"))
        #expect(try await reader.send(.selectFile(0x0102)).statusWord == .success)
        // 0xE7 is the largest short read whose protected answer fits 256 bytes.
        #expect(try await reader.send(.readBinary(offset: 0, length: 0xE7)).data.count == 0xE7)
        // An Le whose answer would not fit gets what fits (Ne is a maximum), not 6700.
        let unfitting = try await reader.send(.readBinary(offset: 0, length: 0xE8))
        #expect(unfitting.statusWord == .success && unfitting.data.count == 0xE7)
        // An extended APDU is refused in plain, which ends the session.
        await #expect(throws: MRTDError.self) { _ = try await reader.send(.readBinary(offset: 0, length: 1_000)) }
        #expect(!chip.isAuthenticated)
    }

    @Test func faultInjection() async throws {
        let chip = try chip()
        var reader = ICAOStepReader(connection: EmulatedCardConnection(chip: chip))
        _ = try await reader.selectApplication()
        try await reader.basicAccessControl(mrzInformation: Self.annaKey)
        _ = try await reader.send(.selectFile(0x0102))

        chip.setFaults(ChipFaults(readLengthCap: 0x80))
        #expect(try await reader.send(.readBinary(offset: 0, length: 0x81)).statusWord == .wrongLength)
        #expect(try await reader.send(.readBinary(offset: 0, length: 0x80)).data.count == 0x80)

        chip.setFaults(ChipFaults(statusOverrides: [.init(ins: 0xB0, statusWord: StatusWord(rawValue: 0x6281))]))
        #expect(try await reader.send(.readBinary(offset: 0, length: 4)).statusWord == StatusWord(rawValue: 0x6281))
        #expect(try await reader.send(.readBinary(offset: 0, length: 4)).statusWord == .success)

        chip.setFaults(ChipFaults(corruptNextResponseMAC: true))
        await #expect(throws: MRTDError.self) { _ = try await reader.send(.readBinary(offset: 0, length: 4)) }

        chip.setFaults(ChipFaults(removeAfterAPDUs: 1))
        _ = chip.process(try CommandAPDU.getChallenge().encoded())
        #expect(chip.process(try CommandAPDU.getChallenge().encoded()) == .removed)
        #expect(chip.isRemoved)
        chip.reinsert()
        #expect(!chip.isRemoved)
        #expect(try send(chip, .getChallenge()).statusWord == .success)
    }

    @Test func emulatedReaderBackendWaitsAndConnects() async throws {
        let backend = EmulatedReaderBackend()
        await #expect(throws: SmartCardError.self) { _ = try await backend.waitForCard(readerMatching: nil, timeout: .milliseconds(50)) }
        let chip = try chip()
        // Inserted from a thread of its own: on a loaded machine a task might wait for the
        // cooperative pool past the 5 s the reader waits.
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            backend.insert(chip)
        }
        let info = try await backend.waitForCard(readerMatching: "emulated", timeout: .seconds(5))
        #expect(info.cardPresent && info.atr == chip.atr)
        let connection = try await backend.connect(reader: info.name)
        #expect(try await connection.transmit(.selectApplication(EmulatedApplicationID.value)).statusWord == .success)
        backend.remove()
        #expect(try await backend.readers().first?.cardPresent == false)
        await #expect(throws: SmartCardError.self) { _ = try await backend.waitForCard(readerMatching: "nothing-like-this", timeout: .seconds(1)) }
    }

    @Test func atrIsWellFormed() throws {
        let atr = try chip().atr
        #expect(atr[0] == 0x3B && atr[2] == 0x80 && atr[3] == 0x01)
        #expect(atr.dropFirst().reduce(0, ^) == 0)  // TCK makes the XOR of T0…TCK zero
    }
}

@Suite("EF dumps and descriptions")
struct DumpTests {
    @Test(.needsSharedFixtures) func loadsSharedLDSDumps() throws {
        let bsi = try EmulatedPassport(dumpDirectory: TestFixtures.sharedURL("lds/bsi2008"))
        #expect(bsi.applicationFiles[0x011E] != nil && bsi.applicationFiles[0x011D] != nil)
        #expect((1...4).allSatisfy { bsi.applicationFiles[EmulatedPassport.dataGroupFID($0)] != nil })
        #expect(bsi.applicationFiles[0x010E] != nil && bsi.applicationFiles[0x010F] != nil)
        let loes = try EmulatedPassport(dumpDirectory: TestFixtures.sharedURL("lds/loes2006"))
        #expect(loes.applicationFiles.keys.sorted() == [0x0101, 0x0102, 0x010F, 0x011D, 0x011E])
        #expect(loes.mrzKeyInformation.count == 24)
    }

    @Test func dumpNames() {
        #expect(EmulatedPassport.fileID(forDumpName: "EF_COM.bin")?.0 == 0x011E)
        #expect(EmulatedPassport.fileID(forDumpName: "Datagroup14.bin")?.0 == 0x010E)
        #expect(EmulatedPassport.fileID(forDumpName: "DG2.bin")?.0 == 0x0102)
        #expect(EmulatedPassport.fileID(forDumpName: "ef010F.bin")?.0 == 0x010F)
        #expect(EmulatedPassport.fileID(forDumpName: "EF_CardAccess.bin")! == (0x011C, true))
        #expect(EmulatedPassport.fileID(forDumpName: "notes.txt") == nil)
    }

    @Test func badDescriptionsAreClearErrors() throws {
        let signer = try TestFixtures.documentSigner()
        var description = PassportDescription(mrz: ["P<UTO", "X"])
        #expect(throws: EmulatorError.self) { _ = try EmulatedPassport(description: description, baseDirectory: TestFixtures.directory, signer: signer) }
        description = try TestFixtures.description("utopia-td3-jpeg")
        description.faceImage = "does-not-exist.jpg"
        #expect(throws: EmulatorError.self) { _ = try EmulatedPassport(description: description, baseDirectory: TestFixtures.directory, signer: signer) }
        description.faceImage = "passports/README.md"
        #expect(throws: EmulatorError.self) { _ = try EmulatedPassport(description: description, baseDirectory: TestFixtures.directory, signer: signer) }
        #expect(throws: EmulatorError.self) { _ = try EmulatedPassport(dumpDirectory: TestFixtures.url("faces")) }
    }

    @Test func generatedFilesHaveTheRightShape() throws {
        let passport = try TestFixtures.passport("utopia-td3-jpeg")
        let com = try BERTLV.parseSingle(passport.applicationFiles[0x011E]!)
        #expect(try com.child(0x5C)?.value == [0x61, 0x75, 0x6B, 0x6C])
        let dg2 = try BERTLV.parseSingle(passport.applicationFiles[0x0102]!)
        let group = try #require(try dg2.child(0x7F61))
        let template = try #require(try group.child(0x7F60))
        let record = try #require(try template.child(0x5F2E)).value
        #expect(record.starts(with: Array("FAC\0010\0".utf8)))
        let jpeg = try Data(contentsOf: TestFixtures.url("faces/face-jpeg.jpg"))
        #expect(Array(record.suffix(jpeg.count)) == Array(jpeg))
        let dg11 = try BERTLV.parseSingle(passport.applicationFiles[0x010B]!)
        #expect(try dg11.child(0x5F11)?.value == Array("ZENITH<UTOPIA".utf8))
    }
}
