import CVCertificates
import Foundation
import MRTDCrypto
import MRTDEmulator
import SmartCard
import Synchronization
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// Progress reports of one read, in order.
final class ProgressLog: Sendable {
    private let entries = Mutex<[ReadProgress]>([])
    var all: [ReadProgress] { entries.withLock { $0 } }
    var handler: PassportReader.ProgressHandler { { [self] progress in entries.withLock { $0.append(progress) } } }
}

/// A chip that leaves the field after `afterAPDUs` commands and is back `returnAfter` ms later.
func tagLossChip(_ name: String, afterAPDUs: Int, returnAfter: Int = 0) throws -> VirtualPassportChip {
    try Quirk.none.chip(name, tagLoss: (afterAPDUs, returnAfter))
}

@Suite("Tag loss: the card leaves the field mid-read and comes back")
struct TagLossTests {
    static let trust = TestFixtures.testTrustStore

    /// Reads `chip` through an in-process reader, waiting up to `wait` for the card after a loss.
    func read(_ chip: VirtualPassportChip, key: AccessKey, wait: Duration = .seconds(5), log: ProgressLog = ProgressLog(),
              dataGroups: [Int]? = nil, swapTo other: VirtualPassportChip? = nil) async throws -> PassportReadResult {
        let backend = EmulatedReaderBackend(chip: chip)
        let connection = try await backend.connect(reader: backend.readerName)
        let name = backend.readerName
        return try await PassportReader(connection: connection, accessKey: key, options: ReadOptions.forTest(dataGroups: dataGroups, trustStore: Self.trust),
                                        progress: log.handler,
                                        reconnect: {
                                            if let other { backend.insert(other) }
                                            return try await backend.reconnect(reader: name, until: .now + wait)
                                        }).read()
    }

    /// The APDUs an undisturbed read of `name` sends.
    func undisturbedAPDUs(_ name: String) async throws -> Int {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport(name))
        let result = try await read(chip, key: try TestFixtures.accessKey(name))
        #expect(result.statistics.reconnections == 0)
        return result.statistics.apdus
    }

    /// Every point of the read: access control, EF.CardAccess, each file's first and later
    /// chunks, Chip Authentication, Active Authentication. The document read is the one on the
    /// chip, verified, whatever APDU the card left on.
    @Test("a loss at any APDU of the read is survived", arguments: ["utopia-td3-jpeg", "utopia-td3-pace", "utopia-id-pace-only"])
    func lossAtEveryAPDU(passport name: String) async throws {
        let total = try await undisturbedAPDUs(name)
        #expect(total > 5)
        for after in 1..<total {
            let chip = try tagLossChip(name, afterAPDUs: after)
            let log = ProgressLog()
            let result: PassportReadResult
            do {
                result = try await read(chip, key: try TestFixtures.accessKey(name), log: log)
            } catch {
                Issue.record("\(name): loss after \(after) of \(total) APDUs: \(error)")
                continue
            }
            let label = "\(name), loss after \(after) of \(total) APDUs"
            #expect(result.statistics.reconnections == 1, "\(label)")
            #expect(result.passiveOutcome.status == .valid, "\(label): \(result.passiveOutcome.detail)")
            for (fid, content) in chip.passport.applicationFiles {
                let file: LDSFile = fid == 0x011E ? .com : fid == 0x011D ? .sod : .dataGroup(Int(fid - 0x0100))
                #expect(result.files[file] == content, "\(label): \(file)")
            }
            if chip.passport.chipAuthenticationKey != nil || chip.passport.chipAuthenticationMappingKey != nil {
                #expect(result.chip.status == .valid, "\(label): \(result.chip.detail)")
            }
            if chip.passport.activeAuthenticationKey != nil {
                #expect(result.active.status == .valid, "\(label): \(result.active.detail)")
            }
            let progress = log.all
            let waiting = progress.filter { $0.phase == .waitingForCard }
            #expect(waiting.count == 1, "\(label): one wait reported")
            #expect(waiting.first?.reason == ReadProgress.cardRemovedReason, "\(label)")
            #expect(waiting.first?.message?.contains("Put it back on the reader") == true, "\(label)")
            #expect(progress.map(\.percent) == progress.map(\.percent).sorted(), "\(label): percent never goes back")
            #expect(progress.last?.percent == 100)
        }
    }

    /// Terminal Authentication and the card leaving: at any APDU — during PACE, CA, the EF.CVCA read,
    /// each PSO:Verify Certificate, GET CHALLENGE, EXTERNAL AUTHENTICATE, or DG3/DG4 after TA — the
    /// chip that comes back is opened, chip-authenticated and terminal-authenticated again, and
    /// DG3/DG4 are read whole. `field/de-passport-2023` does PACE-CAM, then CA for TA;
    /// `field/fi-passport-2024` PACE-CAM only (TA signs the PACE key of the session now).
    @Test("a loss at any APDU of a read with Terminal Authentication is survived", arguments: ["utopia-demo", "field/de-passport-2023", "field/fi-passport-2024"])
    func lossAtEveryAPDUWithTerminalAuthentication(passport name: String) async throws {
        func cvc(_ file: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(file)"))) }
        let credentials = try TerminalCredentials(certificates: [try CVCertificate(bytes: try cvc("UTDVIS00001.cvcert")),
                                                                 try CVCertificate(bytes: try cvc("UTIS0000001.cvcert"))],
                                                  signer: PrivateKeySigner(key: try PrivateKey(bytes: try cvc("UTIS0000001.pkcs8"))))
        let eac = EACConfiguration(trustPoints: [try CVCertificate(bytes: try cvc("UTCVCA00001.cvcert"))], date: try #require(CVDate("261124")))
        func chip(tagLossAfter after: Int?) throws -> VirtualPassportChip {
            var description = try Quirk.none.description(name, tagLoss: after.map { ($0, 0) })
            description.biometrics = true
            var passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports/\(name)").deletingLastPathComponent(),
                                                signer: try TestFixtures.documentSigner())
            passport.eac = eac
            return VirtualPassportChip(passport: passport)
        }
        func read(_ chip: VirtualPassportChip) async throws -> PassportReadResult {
            let backend = EmulatedReaderBackend(chip: chip)
            let connection = try await backend.connect(reader: backend.readerName)
            var options = ReadOptions.forTest(trustStore: Self.trust)
            options.terminal = credentials
            return try await PassportReader(connection: connection, accessKey: try TestFixtures.accessKey(name), options: options,
                                            reconnect: { try await backend.reconnect(reader: backend.readerName, until: .now + .seconds(5)) }).read()
        }
        let undisturbed = try await read(try chip(tagLossAfter: nil))
        #expect(undisturbed.terminal.status == .valid, "\(undisturbed.terminal.detail)")
        let total = undisturbed.statistics.apdus
        for after in 1..<total {
            let label = "\(name), loss after \(after) of \(total) APDUs"
            let disturbed = try chip(tagLossAfter: after)
            do {
                let result = try await read(disturbed)
                #expect(result.statistics.reconnections == 1, "\(label)")
                #expect(result.terminal.status == .valid, "\(label): \(result.terminal.detail)")
                let (dg3, dg4) = (result.files[.dataGroup(3)] == disturbed.passport.applicationFiles[0x0103],
                                  result.files[.dataGroup(4)] == disturbed.passport.applicationFiles[0x0104])
                #expect(dg3 && dg4, "\(label): DG3 \(dg3 ? "read" : "not read whole"), DG4 \(dg4 ? "read" : "not read whole")")
                #expect(result.passiveOutcome.status == .valid && result.chip.status == .valid, "\(label): \(result.chip.detail)")
            } catch {
                Issue.record("\(label): \(error)")
            }
        }
    }

    @Test("a loss at any APDU of a quirky chip read with the MRZ is survived",
          arguments: Quirk.all.filter { ["no SFI (6A82)", "plain errors, not counted in the SSC", "all but SELECT MF"].contains($0.name) })
    func lossAtEveryAPDUOfAQuirkyChip(quirk: Quirk) async throws {
        let mrz = try AccessKey.mrz(try TestFixtures.description("utopia-td3-pace").mrz.lines.joined(separator: "\n"))
        let undisturbed = try await read(try quirk.chip("utopia-td3-pace"), key: mrz, dataGroups: quirk.dataGroups)
        #expect(undisturbed.accessControl == "PACE")
        let total = undisturbed.statistics.apdus
        for after in 1..<total {
            let chip = try quirk.chip("utopia-td3-pace", tagLoss: (after, 0))
            let label = "\(quirk.name), loss after \(after) of \(total) APDUs"
            do {
                let result = try await read(chip, key: mrz, dataGroups: quirk.dataGroups)
                #expect(result.statistics.reconnections == 1, "\(label)")
                expectFaithfulRead(result, of: chip, quirk: quirk, passport: "utopia-td3-pace")
                #expect(result.chip.status == .valid && result.active.status == .valid, "\(label): \(result.chip.detail); \(result.active.detail)")
                #expect(result.cardAccessCheck.status == .valid, "\(label): \(result.cardAccessCheck.detail)")
            } catch {
                Issue.record("\(label): \(error)")
            }
        }
    }

    @Test("the card back after a while: the read waits, reports waitingForCard, then goes on")
    func slowReturn() async throws {
        let chip = try tagLossChip("utopia-td3-jpeg", afterAPDUs: 6, returnAfter: 400)
        let log = ProgressLog()
        let result = try await read(chip, key: try TestFixtures.accessKey("utopia-td3-jpeg"), log: log)
        #expect(result.statistics.reconnections == 1)
        #expect(result.passiveOutcome.status == .valid)
        let phases = log.all.map(\.phase)
        let waiting = try #require(phases.lastIndex(of: .waitingForCard))
        #expect(waiting > 0, "the wait comes after reading began")
        #expect(phases[waiting...].contains(.cardDetected))
        #expect(phases[waiting...].contains(.reading))
    }

    @Test("a card that does not come back in time ends the read with cardRemoved, never a partial document")
    func noReturn() async throws {
        let chip = try tagLossChip("utopia-td3-jpeg", afterAPDUs: 6, returnAfter: 60_000)
        await #expect {
            _ = try await read(chip, key: try TestFixtures.accessKey("utopia-td3-jpeg"), wait: .milliseconds(300))
        } throws: { error in
            guard let error = error as? MRTDError else { return false }
            return error.code == .cardRemoved && error.reason.contains("not put back in time")
        }
    }

    @Test("without a reconnect closure tag loss ends the read at once")
    func noReconnectClosure() async throws {
        let chip = try tagLossChip("utopia-td3-jpeg", afterAPDUs: 6)
        await #expect {
            _ = try await PassportReader(connection: EmulatedCardConnection(chip: chip),
                                         accessKey: try TestFixtures.accessKey("utopia-td3-jpeg"), options: .forTest()).read()
        } throws: { ($0 as? MRTDError)?.code == .cardRemoved }
    }

    @Test("cancellation while waiting for the card ends the read as cancelled")
    func cancelledWhileWaiting() async throws {
        let chip = try tagLossChip("utopia-td3-jpeg", afterAPDUs: 6, returnAfter: 60_000)
        let log = ProgressLog()
        let task = Task { try await read(chip, key: try TestFixtures.accessKey("utopia-td3-jpeg"), wait: .seconds(60), log: log) }
        for _ in 0..<2000 where !log.all.contains(where: { $0.phase == .waitingForCard && $0.reason != nil }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        task.cancel()
        await #expect { _ = try await task.value } throws: { ($0 as? MRTDError)?.code == .cancelled }
    }

    @Test("another chip with the same access key coming back is refused: it does not prove the chip key")
    func differentChipComesBack() async throws {
        // Both chips come from the same description (same MRZ, same files) but each has its own
        // Chip Authentication key: the second could be a clone.
        // Lost after Chip Authentication (which follows DG14, read third), before Active Authentication.
        let first = try tagLossChip("utopia-td3-pace", afterAPDUs: try await undisturbedAPDUs("utopia-td3-pace") - 2)
        let second = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace"))
        #expect(first.passport.chipAuthenticationKey != nil)
        await #expect {
            _ = try await read(first, key: try TestFixtures.accessKey("utopia-td3-pace"), swapTo: second)
        } throws: { ($0 as? MRTDError)?.code == .differentChip }
    }

    @Test("a card that keeps leaving gives up after a bounded number of returns")
    func keepsLeaving() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        chip.setFaults(ChipFaults(removeAfterAPDUs: 3))
        let backend = EmulatedReaderBackend(chip: chip)
        let name = backend.readerName
        await #expect {
            _ = try await PassportReader(connection: try await backend.connect(reader: name),
                                         accessKey: try TestFixtures.accessKey("utopia-td3-jpeg"), options: .forTest(),
                                         reconnect: {
                                             // Back, and gone again before the chip is open.
                                             chip.reinsert()
                                             chip.setFaults(ChipFaults(removeAfterAPDUs: 3))
                                             return try await backend.reconnect(reader: name, until: .now + .seconds(2))
                                         }).read()
        } throws: { error in
            guard let error = error as? MRTDError else { return false }
            return error.code == .cardRemoved && error.reason.contains("hold the document still")
        }
    }
}

@Suite("Tag loss through pcscd", .serialized)
struct TagLossPCSCTests {
    @Test("the card leaves vpcd mid-file and comes back: the read goes on", arguments: [(7, "utopia-td3-jpeg"), (14, "utopia-td3-pace")])
    func throughPCSC(after: Int, passport name: String) async throws {
        let chip = try tagLossChip(name, afterAPDUs: after, returnAfter: 300)
        let log = ProgressLog()
        let key = try TestFixtures.accessKey(name)
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let reader = PassportReader(connection: try await backend.connect(reader: info.name), accessKey: key,
                                        options: ReadOptions.forTest(trustStore: TestFixtures.testTrustStore), progress: log.handler,
                                        reconnect: { try await backend.reconnect(reader: info.name, until: .now + .seconds(10)) })
            let result = try await reader.read()
            await reader.connection.disconnect()
            return result
        }
        #expect(result.statistics.reconnections == 1)
        #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
        for (fid, content) in chip.passport.applicationFiles {
            let file: LDSFile = fid == 0x011E ? .com : fid == 0x011D ? .sod : .dataGroup(Int(fid - 0x0100))
            #expect(result.files[file] == content, "\(file)")
        }
        #expect(log.all.contains { $0.phase == .waitingForCard && $0.reason == ReadProgress.cardRemovedReason })
    }
}
