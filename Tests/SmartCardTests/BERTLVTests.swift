import Testing
@testable import SmartCard

@Suite("BER-TLV")
struct BERTLVTests {
    @Test("lengths encode in the shortest form", arguments: [
        (0, "00"), (0x7F, "7F"), (0x80, "8180"), (0xFF, "81FF"), (0x100, "820100"), (0xFFFF, "82FFFF"),
        (0x1_0000, "83010000"), (0x100_0000, "8401000000"),
    ])
    func lengths(length: Int, encoded: String) {
        #expect(BERTLV.encodeLength(length) == h(encoded))
    }

    @Test func multiByteTags() throws {
        // 1-, 2-, 3- and 4-byte tags.
        for (tag, encoded) in [(UInt32(0x5C), "5C"), (0x5F1F, "5F1F"), (0x7F61, "7F61"), (0x5F8101, "5F8101"), (0x5F818101, "5F818101")] {
            let object = TLV(tag: tag, value: [1, 2])
            #expect(object.encoded() == h(encoded + "020102"))
            let parsed = try BERTLV.parseSingle(object.encoded())
            #expect(parsed == object)
        }
        #expect(throws: SmartCardError.self) { _ = try BERTLV.header(h("5F8181818101")) }
    }

    @Test func nestedStructuresAndHeader() throws {
        // EF.COM of the ICAO example: 60 14 5F01 04 "0107" 5F36 06 "040000" 5C 02 61 75
        let com = h("60145F0104303130375F36063034303030305C026175")
        let header = try BERTLV.header(com)
        #expect(header.tag == 0x60 && header.headerLength == 2 && header.valueLength == 0x14 && header.totalLength == 22)
        let object = try BERTLV.parseSingle(com)
        #expect(object.isConstructed)
        #expect(try object.child(0x5C)?.value == [0x61, 0x75])
        #expect(try object.child(0x5F01)?.value == Array("0107".utf8))
        #expect(try object.children().count == 3)
        let rebuilt = TLV(tag: 0x60, children: try object.children())
        #expect(rebuilt.encoded() == com)
    }

    @Test func longForms() throws {
        let value = [UInt8](repeating: 7, count: 300)
        let encoded = BERTLV.encode(tag: 0x5F2E, value: value)
        #expect(Array(encoded.prefix(5)) == h("5F2E82012C"))
        #expect(try BERTLV.parseSingle(encoded).value == value)
    }

    @Test func indefiniteLengths() throws {
        // 30 80 (04 01 AA) (30 80 (02 01 05) 00 00) 00 00
        let encoded = h("3080040" + "1AA" + "3080020105" + "0000" + "0000")
        let object = try BERTLV.parseSingle(encoded)
        #expect(object.tag == 0x30)
        let children = try object.children()
        #expect(children.count == 2)
        #expect(children[0] == TLV(tag: 0x04, value: [0xAA]))
        #expect(try children[1].children() == [TLV(tag: 0x02, value: [5])])
        #expect(throws: SmartCardError.self) { _ = try BERTLV.parseSingle(h("0480")) }  // primitive indefinite
        #expect(throws: SmartCardError.self) { _ = try BERTLV.parseSingle(h("3080040100")) }  // no end marker
        let deep = [UInt8](repeating: 0x30, count: 0).isEmpty ? Array(repeating: h("3080"), count: 100).flatMap { $0 } : []
        #expect(throws: SmartCardError.self) { _ = try BERTLV.parseSingle(deep) }
    }

    @Test func paddingIsTolerated() throws {
        #expect(try BERTLV.parseAll(h("5C0161" + "0000FFFF")) == [TLV(tag: 0x5C, value: [0x61])])
        #expect(try BERTLV.parseSingle(h("5C0161FF00")).value == [0x61])
        #expect(throws: SmartCardError.self) { _ = try BERTLV.parseSingle(h("5C01615C0161")) }
    }

    @Test("truncated or oversize input is a typed error", arguments: [
        "", "5F", "5C", "5C05010203", "5C85FFFFFFFFFF", "5C84FFFFFFFF00", "5C8201", "7F",
    ])
    func malformed(input: String) {
        #expect(throws: SmartCardError.self) { _ = try BERTLV.parseSingle(h(input)) }
    }

    @Test func randomInputNeverCrashes() {
        var state: UInt64 = 0x1234_5678
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        for _ in 0..<20_000 {
            let length = Int(next() % 40)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            _ = try? BERTLV.parseAll(bytes)
            _ = try? CommandAPDU(bytes: bytes)
        }
    }
}
