import ChipRead
import Foundation
import GBGBridgeNFC
import MRTDCrypto
import MRTDEmulator
import SmartCard
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// The reader end to end through real pcscd + vpcd + the emulator.
@Suite("Reading passports through pcscd", .serialized)
struct PCSCReadTests {
    static let trust = TestFixtures.testTrustStore

    func connect() async throws -> any CardConnection {
        let backend = PCSCBackend()
        let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
        return try await backend.connect(reader: info.name)
    }

    static func key(_ name: String) throws -> AccessKey {
        try AccessKey.mrz(try TestFixtures.description(name).mrz.lines.joined(separator: "\n"))
    }

    @Test("every fixture passport is read and verified through pcscd", arguments: TestFixtures.passportNames)
    func readsThroughPCSC(name: String) async throws {
        let passport = try TestFixtures.passport(name)
        let chip = VirtualPassportChip(passport: passport)
        let key = try Self.key(name)
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            defer { Task { await connection.disconnect() } }
            return try await PassportReader(connection: connection, accessKey: key, options: ReadOptions.forTest(trustStore: Self.trust)).read()
        }
        #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
        #expect(result.files[.dataGroup(2)] == passport.applicationFiles[0x0102])
        let report = ReadReport(result)
        #expect(report.photo != nil && report.photoMimeType == "image/jpeg")
    }

    @Test func wrongMRZIsDeniedQuicklyAndTheCardStaysUsable() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            let wrong = try AccessKey.fields(documentNumber: "L898902C3", dateOfBirth: "740812", dateOfExpiry: "990101")
            let started = ContinuousClock.now
            await #expect {
                _ = try await PassportReader(connection: connection, accessKey: wrong).read()
            } throws: { ($0 as? MRTDError)?.code == .accessDenied }
            #expect(ContinuousClock.now - started < .seconds(3))
            // The right key works on the same connection afterwards: no lock-up.
            let result = try await PassportReader(connection: connection, accessKey: try Self.key("utopia-td3-jpeg"),
                                                  options: ReadOptions.forTest(trustStore: Self.trust)).read()
            #expect(result.passiveOutcome.status == .valid)
            await connection.disconnect()
        }
    }

    @Test func cardRemovedMidFile() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td1-idcard"))
        try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            chip.setFaults(ChipFaults(removeAfterAPDUs: 30))
            await #expect {
                _ = try await PassportReader(connection: connection, accessKey: try Self.key("utopia-td1-idcard")).read()
            } throws: { error in
                guard let error = error as? MRTDError else { return false }
                return [.cardRemoved, .communicationFailure].contains(error.code)
            }
        }
    }

    @Test func corruptedResponseMACIsAnError() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            // After access control (5 APDUs incl. the probe), corrupt the next protected answer.
            chip.setFaults(ChipFaults(statusOverrides: [], readLengthCap: nil))
            let reader = PassportReader(connection: connection, accessKey: try Self.key("utopia-td3-jpeg"))
            let corrupting = Task {
                while !chip.isAuthenticated { try await Task.sleep(for: .milliseconds(1)) }
                chip.setFaults(ChipFaults(corruptNextResponseMAC: true))
            }
            await #expect {
                _ = try await reader.read()
            } throws: { ($0 as? MRTDError)?.code == .secureMessagingFailure }
            corrupting.cancel()
            await connection.disconnect()
        }
    }

    @Test func cappedAndShortOnlyChipsAreReadFully() async throws {
        var content = try TestFixtures.passport("utopia-td3-jpeg")
        content.extendedLength = false
        content.masterFiles.removeValue(forKey: 0x2F01)
        content.maxReadLength = 0x80
        let chip = VirtualPassportChip(passport: content)
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            return try await PassportReader(connection: connection, accessKey: try Self.key("utopia-td3-jpeg"),
                                            options: ReadOptions.forTest(trustStore: Self.trust)).read()
        }
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.files[.dataGroup(2)] == content.applicationFiles[0x0102])
    }
}

/// PACE, CA and AA end to end through real pcscd + vpcd + the emulator.
@Suite("PACE, CA and AA through pcscd", .serialized)
struct PCSCPACETests {
    func connect() async throws -> any CardConnection {
        let backend = PCSCBackend()
        let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
        return try await backend.connect(reader: info.name)
    }

    @Test("mapping × group × cipher with MRZ and CAN", arguments: [
        (13, KeyDerivation.KeyType.aes128, false, PACE.Mapping.genericMapping), (12, .aes256, true, .genericMapping),
        (16, .tripleDES, false, .genericMapping), (0, .aes128, true, .genericMapping), (2, .aes192, false, .genericMapping),
        (1, .aes256, true, .integratedMapping), (17, .tripleDES, false, .integratedMapping),
        (13, .aes128, true, .chipAuthenticationMapping), (15, .aes256, false, .chipAuthenticationMapping),
    ])
    func paceThroughPCSC(parameterId: Int, keyType: KeyDerivation.KeyType, useCAN: Bool, mapping: PACE.Mapping) async throws {
        var passport = try TestFixtures.passport("utopia-td3-pace")
        let keyAgreement = PACEDomain.standardized(parameterId)!.keyAgreement
        let info = PACEInfo(protocolID: PACE.ProtocolID(keyAgreement: keyAgreement, mapping: mapping, keyType: keyType), parameterId: parameterId)
        if mapping == .chipAuthenticationMapping {
            try passport.enableChipAuthenticationMapping(info, signer: try TestFixtures.documentSigner(), can: "112233", bacAllowed: true)
        } else {
            passport.enablePACE(info, can: "112233", bacAllowed: true)
        }
        let chip = VirtualPassportChip(passport: passport)
        let key = useCAN ? AccessKey.can("112233") : try PCSCReadTests.key("utopia-td3-pace")
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            defer { Task { await connection.disconnect() } }
            return try await PassportReader(connection: connection, accessKey: key, options: ReadOptions.forTest(trustStore: PCSCReadTests.trust)).read()
        }
        #expect(result.accessControl == "PACE")
        #expect(result.paceMapping == mapping.rawValue)
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.chip.status == .valid)
        #expect(result.active.status == .valid)
    }

    @Test func wrongCANIsDeniedWithoutLockingUp() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-id-pace-only"))
        try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            await #expect {
                _ = try await PassportReader(connection: connection, accessKey: .can("999999")).read()
            } throws: { ($0 as? MRTDError)?.code == .accessDenied }
            let result = try await PassportReader(connection: connection, accessKey: .can("123456"),
                                                  options: ReadOptions.forTest(trustStore: PCSCReadTests.trust)).read()
            #expect(result.accessControl == "PACE")
            #expect(result.chip.status == .valid && result.active.status == .valid)
            await connection.disconnect()
        }
    }

    @Test func clonedChipThroughPCSC() async throws {
        var description = try TestFixtures.description("utopia-td3-pace")
        description.clone = true
        // And an early passport's Chip Authentication: DH with 3DES through MSE:Set KAT, its DG14
        // without ChipAuthenticationInfo (the 256-byte key needs an extended-length APDU).
        description.chipAuthentication = "DH-MODP2048/224-3DES-v1"
        let chip = VirtualPassportChip(passport: try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                                      signer: try TestFixtures.documentSigner()))
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            defer { Task { await connection.disconnect() } }
            return try await PassportReader(connection: connection, accessKey: try PCSCReadTests.key("utopia-td3-pace"),
                                            options: ReadOptions.forTest(trustStore: PCSCReadTests.trust)).read()
        }
        // A copy: neither the AA key (DG15) nor the CA key (DG14) is the chip's own.
        #expect(result.active.status == .invalid)
        #expect(result.chip.status == .invalid, "\(result.chip.detail)")
        #expect(result.chip.detail.contains("copy"))
        #expect(result.passiveOutcome.status == .valid, "the files are the genuine ones: \(result.passiveOutcome.detail)")
    }

    @Test func aChipThatFailsChipAuthenticationThroughPCSC() async throws {
        // The chip refuses the CA key agreement, as a copy without the DG14 private key would:
        // `invalid`, and the read goes on (secure messaging re-established) to the last group.
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace"))
        chip.setFaults(ChipFaults(statusOverrides: [.init(ins: 0x86, p1: 0x00, statusWord: .wrongData, once: false)]))
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await connect()
            defer { Task { await connection.disconnect() } }
            return try await PassportReader(connection: connection, accessKey: try PCSCReadTests.key("utopia-td3-pace"),
                                            options: ReadOptions.forTest(trustStore: PCSCReadTests.trust, accessControl: .bacOnly)).read()
        }
        #expect(result.chip.status == .invalid, "\(result.chip.detail)")
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.dg2?.faces.isEmpty == false)
    }
}
