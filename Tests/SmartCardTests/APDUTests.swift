import Testing
@testable import SmartCard

func h(_ text: String) -> [UInt8] {
    guard let value = bytes(hex: text) else { fatalError("bad hex in test: \(text)") }
    return value
}

@Suite("Command APDU encodings (ISO 7816-4 cases)")
struct CommandAPDUTests {
    @Test("short and extended cases encode and parse back",
          arguments: [
            (CommandAPDU(ins: 0xA4, p1: 0, p2: 0), "00A40000", 1),
            (CommandAPDU(ins: 0x84, p1: 0, p2: 0, ne: 8), "0084000008", 2),
            (CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 256), "00B0000000", 2),
            (CommandAPDU(ins: 0xA4, p1: 2, p2: 0x0C, data: [0x01, 0x1E]), "00A4020C02011E", 3),
            (CommandAPDU(ins: 0xA4, p1: 4, p2: 0, data: [0xA0, 0, 0, 2, 0x47, 0x10, 1], ne: 256), "00A4040007A000000247100100", 4),
            (CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 257), "00B00000000101", 2),
            (CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 65_536), "00B00000000000", 2),
            (CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 0xE7, forceExtended: true), "00B000000000E7", 2),
            (CommandAPDU(ins: 0xD6, p1: 0, p2: 0, data: [UInt8](repeating: 0xAB, count: 300)),
             "00D60000" + "00012C" + String(repeating: "AB", count: 300), 3),
            (CommandAPDU(ins: 0x86, p1: 0, p2: 0, data: [0x7C, 0x00], ne: 65_536, forceExtended: true), "00860000000002" + "7C00" + "0000", 4),
            (CommandAPDU(ins: 0x2A, p1: 0x9E, p2: 0x9A, data: [UInt8](repeating: 1, count: 256), ne: 512),
             "002A9E9A000100" + String(repeating: "01", count: 256) + "0200", 4),
          ])
    func roundTrip(command: CommandAPDU, encoded: String, isoCase: Int) throws {
        #expect(try command.encoded() == h(encoded))
        #expect(command.isoCase == isoCase)
        let parsed = try CommandAPDU(bytes: h(encoded))
        #expect(parsed.cla == command.cla && parsed.ins == command.ins && parsed.p1 == command.p1 && parsed.p2 == command.p2)
        #expect(parsed.data == command.data)
        #expect(parsed.ne == command.ne)
        #expect(parsed.isExtended == command.isExtended)
    }

    @Test func readBinaryAboveOffset32767UsesOddINS() throws {
        #expect(try CommandAPDU.readBinary(offset: 0x7FFF, length: 0xDF).encoded() == h("00B07FFFDF"))
        #expect(try CommandAPDU.readBinary(offset: 0x8000, length: 0xDF).encoded() == h("00B100000454028000DF"))
        #expect(try CommandAPDU.readBinary(offset: 0x01_0203, length: 4).encoded() == h("00B1000005540301020304"))
        #expect(try CommandAPDU.readBinary(sfi: 0x1E, offset: 0, length: 4).encoded() == h("00B09E0004"))
    }

    @Test("malformed command bytes are typed errors",
          arguments: ["", "00", "00A400", "00A4020C05011E", "00A4020C0000", "00A4020C00000501", "00A4020C02011E0000"])
    func malformedCommands(hexBytes: String) {
        #expect(throws: SmartCardError.self) { _ = try CommandAPDU(bytes: h(hexBytes)) }
    }

    @Test func invalidLengthsAreRefused() {
        #expect(throws: SmartCardError.self) { _ = try CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 0).encoded() }
        #expect(throws: SmartCardError.self) { _ = try CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 65_537).encoded() }
        #expect(throws: SmartCardError.self) {
            _ = try CommandAPDU(ins: 0xD6, p1: 0, p2: 0, data: [UInt8](repeating: 0, count: 65_536)).encoded()
        }
    }
}

@Suite("Response APDUs and status words")
struct ResponseAPDUTests {
    @Test func splitsDataAndStatus() throws {
        let response = try ResponseAPDU(bytes: h("0102039000"))
        #expect(response.data == [1, 2, 3])
        #expect(response.statusWord == .success && response.isSuccess)
        #expect(response.bytes == h("0102039000"))
        #expect(throws: SmartCardError.self) { _ = try ResponseAPDU(bytes: [0x90]) }
    }

    @Test("status words have names and meanings",
          arguments: [
            (0x9000, "SUCCESS"), (0x6282, "END_OF_FILE"), (0x6300, "VERIFICATION_FAILED"), (0x63C2, "VERIFICATION_FAILED_TRIES_LEFT"),
            (0x6700, "WRONG_LENGTH"), (0x6982, "SECURITY_STATUS_NOT_SATISFIED"), (0x6985, "CONDITIONS_NOT_SATISFIED"),
            (0x6986, "COMMAND_NOT_ALLOWED"), (0x6988, "SM_DATA_OBJECTS_INCORRECT"), (0x6A82, "FILE_NOT_FOUND"),
            (0x6A86, "INCORRECT_P1_P2"), (0x6A88, "REFERENCED_DATA_NOT_FOUND"), (0x6110, "BYTES_REMAINING"), (0x6CDF, "WRONG_LE"),
          ])
    func names(raw: Int, name: String) {
        let sw = StatusWord(rawValue: UInt16(raw))
        #expect(sw.name == name)
        #expect(!sw.meaning.isEmpty)
    }

    @Test func statusWordDetails() {
        #expect(StatusWord.triesLeft(2).meaning.contains("2 tries left"))
        #expect(StatusWord.wrongLe(0xDF).meaning.contains("223"))
        #expect(StatusWord.bytesRemaining(0x10).isSuccess)
        #expect(StatusWord(rawValue: 0x6282).isWarning)
        #expect(StatusWord(rawValue: 0x1234).name == "SW_1234")
    }

    @Test func hexHelpers() {
        #expect(bytes(hex: "0a 0B:0c") == [10, 11, 12])
        #expect(bytes(hex: "+1") == nil)
        #expect(bytes(hex: "abc") == nil)
        #expect(hex([0xDE, 0xAD], separator: " ") == "DE AD")
    }
}
