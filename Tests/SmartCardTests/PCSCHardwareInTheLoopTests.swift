import Foundation
import MRTD
import MRTDEmulator
import TestSupport
import Testing
@testable import SmartCard

/// Real pcscd, real vpcd driver, our chip on the other end of vpcd's socket.
@Suite("PC/SC back end against pcscd + vpcd + emulator", .serialized)
struct PCSCHardwareInTheLoopTests {
    static let reader = PCSCDHarness.vpcdReaderName
    static let annaKey = MRZ.keyInformation(documentNumber: "L898902C3", dateOfBirth: "740812", dateOfExpiry: "120415")

    func withEmulator<T: Sendable>(_ passport: String = "utopia-td3-jpeg",
                                   _ body: @Sendable (VPCDClient<VirtualPassportChip>, VirtualPassportChip) async throws -> T) async throws -> T {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport(passport))
        return try await PCSCDHarness.withEmulatedCard(chip) { client in try await body(client, chip) }
    }

    @Test func listsTheVirtualReadersWithCardAndATR() async throws {
        try await withEmulator { _, chip in
            let backend = PCSCBackend()
            var readers: [ReaderInfo] = []
            for _ in 0..<50 {
                readers = try await backend.readers()
                if readers.first(where: { $0.name == Self.reader })?.cardPresent == true { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let entry = try #require(readers.first { $0.name == Self.reader })
            #expect(entry.backend == "pcsc" && entry.cardPresent)
            #expect(entry.atr == chip.atr)
            #expect(readers.contains { $0.name == "Virtual PCD 00 01" && !$0.cardPresent })
        }
    }

    @Test func waitConnectSelectChallengeAndICAOReader() async throws {
        try await withEmulator { _, chip in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: "PCD 00 00", timeout: .seconds(10))
            #expect(info.name == Self.reader)
            let connection = try await backend.connect(reader: info.name)
            #expect(connection.atr == chip.atr)
            #expect(await connection.isCardPresent())
            var reader = ICAOStepReader(connection: connection)
            #expect(try await reader.selectApplication() == .success)
            let challenge = try await connection.transmit(.getChallenge())
            #expect(challenge.statusWord == .success && challenge.data.count == 8)
            try await reader.basicAccessControl(mrzInformation: Self.annaKey)
            let com = try await reader.readFile(0x011E)
            #expect(com == chip.passport.applicationFiles[0x011E])
            let dg2 = try await reader.readFile(0x0102)
            #expect(dg2 == chip.passport.applicationFiles[0x0102])
            // Extended length through pcscd: the whole DG2 in one APDU.
            let whole = try await reader.send(.readBinary(offset: 0, length: dg2.count))
            #expect(whole.data == dg2)
            await connection.disconnect()
        }
    }

    @Test func detectsRemoval() async throws {
        try await withEmulator { client, _ in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: Self.reader, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            #expect(try await connection.transmit(.selectApplication(EmulatedApplicationID.value)).statusWord == .success)
            client.removeCard()
            var present = true
            for _ in 0..<50 where present {
                try await Task.sleep(for: .milliseconds(100))
                present = await connection.isCardPresent()
            }
            #expect(!present)
            await #expect {
                _ = try await connection.transmit(.getChallenge())
            } throws: { error in
                guard let error = error as? SmartCardError else { return false }
                return [.cardRemoved, .noCard, .communicationFailure, .cardUnresponsive].contains(error.code)
            }
            #expect(try await backend.readers().first { $0.name == Self.reader }?.cardPresent == false)
        }
    }

    @Test func removalFaultMidExchange() async throws {
        try await withEmulator { _, chip in
            let backend = PCSCBackend()
            let connection = try await backend.connect(reader: try await backend.waitForCard(readerMatching: Self.reader, timeout: .seconds(10)).name)
            chip.setFaults(ChipFaults(removeAfterAPDUs: 2))
            _ = try await connection.transmit(.selectApplication(EmulatedApplicationID.value))
            _ = try await connection.transmit(.getChallenge())
            await #expect(throws: SmartCardError.self) { _ = try await connection.transmit(.getChallenge()) }
        }
    }

    @Test func waitTimesOutAndCanBeCancelled() async throws {
        try await withEmulator { _, _ in
            let backend = PCSCBackend()
            // Reader 00 01 has no card.
            await #expect {
                _ = try await backend.waitForCard(readerMatching: "Virtual PCD 00 01", timeout: .milliseconds(300))
            } throws: { ($0 as? SmartCardError)?.code == .timeout }

            let waiting = Task { try await backend.waitForCard(readerMatching: "Virtual PCD 00 01", timeout: nil) }
            try await Task.sleep(for: .milliseconds(300))
            let started = ContinuousClock.now
            waiting.cancel()
            await #expect {
                _ = try await waiting.value
            } throws: { ($0 as? SmartCardError)?.code == .cancelled }
            #expect(ContinuousClock.now - started < .seconds(5))

            await #expect {
                _ = try await backend.connect(reader: "No Such Reader 99")
            } throws: { ($0 as? SmartCardError)?.code == .readerNotFound }
        }
    }

    @Test func reinsertionAfterRemovalIsSeenByAWait() async throws {
        try await withEmulator { client, _ in
            let backend = PCSCBackend()
            client.removeCard()
            try await Task.sleep(for: .milliseconds(300))
            let waiting = Task { try await backend.waitForCard(readerMatching: Self.reader, timeout: .seconds(15)) }
            try await Task.sleep(for: .milliseconds(300))
            client.insertCard()
            let info = try await waiting.value
            #expect(info.cardPresent)
        }
    }
}
