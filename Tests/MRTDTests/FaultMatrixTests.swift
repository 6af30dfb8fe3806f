import Foundation
import MRTDEmulator
import SmartCard
import Synchronization
import TestSupport
import Testing
@testable import MRTD

/// Every command the reader sends × what field chips and readers answer to it (ISO/IEC 7816-4
/// §5.6 status words, ICAO 9303-11 secure messaging, transport faults) → the outcome the reader
/// must reach. Each row is run through a real pcscd with the vpcd driver and through real libnfc
/// with an emulated PN532, the chip answering as the row says.
struct FaultRow: CustomStringConvertible, Sendable {
    enum Expected: Sendable {
        /// The read succeeds with every file the chip gives, passive authentication valid, and
        /// `check` holds.
        case read(@Sendable (PassportReadResult) -> Bool)
        /// The read ends with this error code.
        case fails(MRTDError.Code)
    }

    let command: String
    let answer: String
    var passport = "utopia-td3-pace"
    var key: KeyChoice = .fixture
    var dataGroups: [Int]?
    var quirks: @Sendable (inout ChipQuirks) -> Void = { _ in }
    var faults: ChipFaults?
    /// Whether the reader gets a way back to the card (tag loss survivable).
    var reconnect = true
    var libnfc = true
    let expected: Expected

    enum KeyChoice: Sendable { case fixture, mrz, wrongMRZ, wrongCAN }

    var description: String { "\(command) → \(answer)" }

    func accessKey() throws -> AccessKey {
        let mrz = try TestFixtures.description(passport).mrz.lines.joined(separator: "\n")
        switch key {
        case .fixture: return try TestFixtures.accessKey(passport)
        case .mrz: return try AccessKey.mrz(mrz)
        case .wrongMRZ:
            guard case .mrz(let number, let birth, let expiry) = try AccessKey.mrz(mrz) else { return try AccessKey.mrz(mrz) }
            return .mrz(documentNumber: number, dateOfBirth: birth == "740812" ? "750812" : "740812", dateOfExpiry: expiry)
        case .wrongCAN: return .can("999999")
        }
    }

    func chip() throws -> VirtualPassportChip {
        var description = try TestFixtures.description(passport)
        var quirks = description.quirks ?? ChipQuirks()
        self.quirks(&quirks)
        description.quirks = quirks
        let chip = VirtualPassportChip(passport: try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                                      signer: try TestFixtures.documentSigner()))
        if let faults { chip.setFaults(faults) }
        return chip
    }
}

extension FaultRow {
    static let protectedDG11: @Sendable (PassportReadResult) -> Bool = { $0.absent[.dataGroup(11)] == .protected }
    static let readAll: @Sendable (PassportReadResult) -> Bool = { _ in true }

    static let rows: [FaultRow] = [
        // SELECT
        FaultRow(command: "SELECT DG11 (no SFI)", answer: "6982", quirks: { $0.noShortFileIdentifier = "6A82" },
                 faults: ChipFaults(statusOverrides: [.init(ins: 0xA4, statusWord: .securityStatusNotSatisfied, once: false, data: [0x01, 0x0B])]),
                 expected: .read(protectedDG11)),
        FaultRow(command: "SELECT eMRTD application (BAC)", answer: "6A82", passport: "utopia-td3-jpeg",
                 faults: ChipFaults(statusOverrides: [.init(ins: 0xA4, p1: 0x04, statusWord: .fileNotFound, once: false)]),
                 expected: .fails(.notSupported)),
        FaultRow(command: "SELECT with Le", answer: "6700", quirks: { $0.selectLe = "refused" }, expected: .read(readAll)),
        FaultRow(command: "SELECT without Le", answer: "6700", quirks: { $0.selectLe = "required"; $0.noShortFileIdentifier = "6A86" },
                 expected: .read(readAll)),
        FaultRow(command: "SELECT MF", answer: "6A82", quirks: { $0.selectMasterFile = "6A82" }, expected: .read(readAll)),
        FaultRow(command: "SELECT MF", answer: "6D00", quirks: { $0.selectMasterFile = "6D00"; $0.noShortFileIdentifier = "6986" },
                 expected: .read(readAll)),
        // READ BINARY
        FaultRow(command: "READ BINARY by SFI of DG11", answer: "6982", quirks: { $0.protectedFiles = ["010B"] }, expected: .read(protectedDG11)),
        FaultRow(command: "READ BINARY of DG11 after SELECT (no SFI)", answer: "6982",
                 quirks: { $0.protectedFiles = ["010B"]; $0.noShortFileIdentifier = "6A82" }, expected: .read(protectedDG11)),
        FaultRow(command: "READ BINARY of DG11 after SELECT (no SFI, BAC)", answer: "6982", passport: "utopia-td3-jpeg",
                 quirks: { $0.protectedFiles = ["010B"]; $0.noShortFileIdentifier = "6986" }, expected: .read(protectedDG11)),
        FaultRow(command: "READ BINARY by SFI of an absent DG5", answer: "6A82", dataGroups: [1, 2, 5],
                 expected: .read { $0.absent[.dataGroup(5)] == .notPresent }),
        FaultRow(command: "READ BINARY by SFI", answer: "6986 (SFI refused)", quirks: { $0.noShortFileIdentifier = "6986" }, expected: .read(readAll)),
        FaultRow(command: "READ BINARY by SFI", answer: "6A86 (SFI refused)", quirks: { $0.noShortFileIdentifier = "6A86" }, expected: .read(readAll)),
        FaultRow(command: "READ BINARY by SFI", answer: "6B00 (SFI refused)", quirks: { $0.noShortFileIdentifier = "6B00" }, expected: .read(readAll)),
        FaultRow(command: "READ BINARY by SFI", answer: "6D00 (SFI refused)", quirks: { $0.noShortFileIdentifier = "6D00" }, expected: .read(readAll)),
        FaultRow(command: "READ BINARY by SFI", answer: "6A82 (SFI refused, BAC)", passport: "utopia-td3-jpeg",
                 quirks: { $0.noShortFileIdentifier = "6A82" }, expected: .read(readAll)),
        FaultRow(command: "READ BINARY above the chip's limit", answer: "6CA0", passport: "utopia-td3-jpeg",
                 quirks: { $0.exactLengthHint = true }, faults: ChipFaults(readLengthCap: 0xA0), expected: .read(readAll)),
        FaultRow(command: "READ BINARY above the chip's limit", answer: "6700", faults: ChipFaults(readLengthCap: 0xA0), expected: .read(readAll)),
        FaultRow(command: "READ BINARY with Le = 00", answer: "6700", quirks: { $0.refuseLe00 = true }, expected: .read(readAll)),
        FaultRow(command: "READ BINARY to the end of a file", answer: "6282 with the data", quirks: { $0.endOfFileWarning = true },
                 expected: .read(readAll)),
        FaultRow(command: "every command with answer data", answer: "61xx (GET RESPONSE)", quirks: { $0.getResponseAnswers = true },
                 expected: .read { $0.chip.status == .valid && $0.active.status == .valid }),
        FaultRow(command: "every command with answer data (BAC)", answer: "61xx (GET RESPONSE)", passport: "utopia-td3-jpeg",
                 quirks: { $0.getResponseAnswers = true }, expected: .read(readAll)),
        // Secure messaging
        FaultRow(command: "protected commands that fail", answer: "plain error SW, counted in the SSC", dataGroups: [1, 2, 5, 11],
                 quirks: { $0.plainErrors = true }, expected: .read(readAll)),
        FaultRow(command: "protected commands that fail", answer: "plain error SW, not counted in the SSC", dataGroups: [1, 2, 5, 11],
                 quirks: { $0.plainErrors = true; $0.plainErrorsCountInSSC = false }, expected: .read(readAll)),
        FaultRow(command: "protected commands that fail", answer: "plain error SW ending secure messaging", dataGroups: [1, 2, 5, 11],
                 quirks: { $0.plainErrors = true; $0.plainErrorsEndSession = true }, expected: .read(readAll)),
        FaultRow(command: "READ BINARY of DG2", answer: "6988 in plain (the chip ends secure messaging)",
                 faults: ChipFaults(statusOverrides: [.init(ins: 0xB0, p1: 0x82, statusWord: .smDataObjectsIncorrect, once: true, plain: true)]),
                 expected: .read { $0.statistics.reauthentications >= 1 }),
        FaultRow(command: "every protected command (PACE, AES)", answer: "no DO'99' (ePass)", quirks: { $0.noStatusObject = true },
                 expected: .read { $0.chip.status == .valid }),
        FaultRow(command: "every protected command (BAC, 3DES)", answer: "no DO'99', errors plain and not counted (ePass)",
                 passport: "utopia-td3-jpeg", dataGroups: [1, 2, 5], quirks: { $0.noStatusObject = true }, expected: .read(readAll)),
        FaultRow(command: "a protected READ BINARY", answer: "a response MAC that does not verify",
                 faults: ChipFaults(corruptNextResponseMAC: true), expected: .fails(.secureMessagingFailure)),
        // MSE, GENERAL AUTHENTICATE, GET CHALLENGE, EXTERNAL / INTERNAL AUTHENTICATE
        FaultRow(command: "MSE:Set AT for PACE without the parameter id", answer: "6A87", quirks: { $0.paceParameterIdInMSE = "required" },
                 expected: .read { $0.accessControl == "PACE" }),
        FaultRow(command: "MSE:Set AT for PACE with the parameter id", answer: "6A80", quirks: { $0.paceParameterIdInMSE = "refused" },
                 expected: .read { $0.accessControl == "PACE" }),
        FaultRow(command: "MSE:Set AT for PACE (the MRZ given)", answer: "6A80 always", key: .mrz,
                 faults: ChipFaults(statusOverrides: [.init(ins: 0x22, p1: 0xC1, statusWord: .wrongData, once: false)]),
                 expected: .read { $0.accessControl == "BAC" && $0.accessControlNote?.contains("PACE") == true }),
        FaultRow(command: "MSE:Set AT for PACE (a CAN given)", answer: "6A80 always",
                 faults: ChipFaults(statusOverrides: [.init(ins: 0x22, p1: 0xC1, statusWord: .wrongData, once: false)]),
                 expected: .fails(.notSupported)),
        FaultRow(command: "MSE:Set AT for Chip Authentication", answer: "6A80",
                 faults: ChipFaults(statusOverrides: [.init(ins: 0x22, p1: 0x41, statusWord: .wrongData, once: false)]),
                 expected: .read { $0.chip.status == .invalid }),
        FaultRow(command: "GENERAL AUTHENTICATE token (a wrong CAN)", answer: "6300", key: .wrongCAN, expected: .fails(.accessDenied)),
        FaultRow(command: "EXTERNAL AUTHENTICATE (a wrong MRZ)", answer: "6300", passport: "utopia-td3-jpeg", key: .wrongMRZ,
                 expected: .fails(.accessDenied)),
        FaultRow(command: "GET CHALLENGE of a PACE-only card (EF.CardAccess unreadable)", answer: "6985", passport: "utopia-id-pace-only",
                 key: .mrz, quirks: { $0.cardAccessUnreadable = true }, expected: .fails(.notSupported)),
        FaultRow(command: "INTERNAL AUTHENTICATE", answer: "6D00",
                 faults: ChipFaults(statusOverrides: [.init(ins: 0x88, statusWord: .insNotSupported, once: false)]),
                 expected: .read { $0.active.status == .invalid }),
        // Transport
        FaultRow(command: "APDU 12", answer: "the card leaves after answering, back after 1 s with a new power-on",
                 quirks: { $0.tagLossAfterAPDUs = 12; $0.tagLossAfterAnswer = true; $0.tagLossReturnAfterMilliseconds = 1_000 },
                 expected: .read { $0.statistics.reconnections == 1 }),
        FaultRow(command: "APDU 6 (BAC)", answer: "the card leaves after answering, back after 1 s with a new power-on",
                 passport: "utopia-td3-jpeg",
                 quirks: { $0.tagLossAfterAPDUs = 6; $0.tagLossAfterAnswer = true; $0.tagLossReturnAfterMilliseconds = 1_000 },
                 expected: .read { $0.statistics.reconnections == 1 }),
        FaultRow(command: "APDU 12", answer: "the card leaves and does not come back",
                 quirks: { $0.tagLossAfterAPDUs = 12; $0.tagLossReturnAfterMilliseconds = 600_000 }, expected: .fails(.cardRemoved)),
        FaultRow(command: "APDU 12", answer: "a broken answer, the card still there",
                 quirks: { $0.brokenAnswerAtAPDU = 12 }, libnfc: false, expected: .read { $0.statistics.reconnections == 1 }),
        FaultRow(command: "APDU 12 (no way back to the card)", answer: "a broken answer, the card still there",
                 quirks: { $0.brokenAnswerAtAPDU = 12 }, reconnect: false, libnfc: false, expected: .fails(.communicationFailure)),
    ]
}

extension ChipFaults.StatusOverride {
    init(ins: UInt8, p1: UInt8? = nil, statusWord: StatusWord, once: Bool, data: [UInt8]) {
        self.init(ins: ins, p1: p1, statusWord: statusWord, once: once)
        self.data = data
    }
}

/// The way back to the card after tag loss: the back end's reconnect, waiting up to 4 s.
func reconnector(_ backend: any CardReaderBackend, _ reader: String, enabled: Bool) -> PassportReader.Reconnect? {
    guard enabled else { return nil }
    return { @Sendable in try await backend.reconnect(reader: reader, until: .now + .seconds(4)) }
}

/// One read of a row's chip.
func read(_ row: FaultRow, _ key: AccessKey, _ connection: any CardConnection,
          _ reconnect: PassportReader.Reconnect?) async -> Result<PassportReadResult, MRTDError> {
    let reader = PassportReader(connection: connection, accessKey: key,
                                options: ReadOptions.forTest(dataGroups: row.dataGroups, trustStore: TestFixtures.testTrustStore),
                                reconnect: reconnect)
    let result: Result<PassportReadResult, MRTDError>
    do { result = .success(try await reader.read()) } catch { result = .failure(error) }
    await reader.connection.disconnect()
    return result
}

/// Checks a read against its row: the outcome, and every file the chip gives read as it is.
func judge(_ row: FaultRow, _ outcome: Result<PassportReadResult, MRTDError>, chip: VirtualPassportChip, transport: String) {
    switch (row.expected, outcome) {
    case (.fails(let code), .failure(let error)):
        #expect(error.code == code, "\(transport) \(row): \(error)")
    case (.fails(let code), .success(let result)):
        Issue.record("\(transport) \(row): read although \(code) was expected (\(result.accessControl))")
    case (.read, .failure(let error)):
        Issue.record("\(transport) \(row): \(error)")
    case (.read(let check), .success(let result)):
        #expect(result.passiveOutcome.status == .valid, "\(transport) \(row): \(result.passiveOutcome.detail)")
        for (fid, content) in chip.passport.applicationFiles {
            let file: LDSFile = fid == 0x011E ? .com : fid == 0x011D ? .sod : .dataGroup(Int(fid - 0x0100))
            guard row.dataGroups.map({ file.dataGroupNumber.map($0.contains) ?? true }) ?? true, result.absent[file] == nil else { continue }
            #expect(result.files[file] == content, "\(transport) \(row): \(file)")
        }
        #expect(check(result), "\(transport) \(row): chip \(result.chip), active \(result.active), absent \(result.absent), steps \(result.steps.map(\.name))")
    }
}

@Suite("FaultMatrix: every command × every field answer, through pcscd + vpcd", .serialized)
struct FaultMatrixPCSCTests {
    @Test(arguments: FaultRow.rows)
    func row(_ row: FaultRow) async throws {
        let chip = try row.chip()
        let key = try row.accessKey()
        let outcome = try await PCSCDHarness.withEmulatedCard(chip) { _ -> Result<PassportReadResult, MRTDError> in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            return await read(row, key, connection, reconnector(backend, info.name, enabled: row.reconnect))
        }
        judge(row, outcome, chip: chip, transport: "pcscd+vpcd")
    }
}

@Suite("FaultMatrix: every command × every field answer, through libnfc + PN532", .serialized)
struct FaultMatrixLibNFCTests {
    @Test(arguments: FaultRow.rows.filter(\.libnfc))
    func row(_ row: FaultRow) async throws {
        let chip = try row.chip()
        let key = try row.accessKey()
        let terminal = try PN532PseudoTerminal(chip: chip, cardType: .typeA)
        terminal.start()
        defer { terminal.stop() }
        let backend = LibNFCBackend(connectionStrings: [terminal.connectionString], discover: false, pollInterval: .milliseconds(20))
        let info = try await backend.waitForCard(readerMatching: nil, timeout: .seconds(10))
        let connection = try await backend.connect(reader: info.name)
        let outcome = await read(row, key, connection, reconnector(backend, info.name, enabled: row.reconnect))
        judge(row, outcome, chip: chip, transport: "libnfc+PN532")
    }
}
