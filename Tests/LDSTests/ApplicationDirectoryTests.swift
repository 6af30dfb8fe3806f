import SmartCardCore
import Testing
@testable import LDS

/// EF.DIR as ICAO 9303-10 §3.11.2 lays it out (Table 31: one application template per application).
@Suite("EF.DIR: the chip's applications")
struct ApplicationDirectoryTests {
    /// ICAO 9303-10 Table 31's example: the eMRTD application and the three LDS2 applications.
    static let table31 = "61094F07A0000002471001" + "61094F07A0000002472001" + "61094F07A0000002472002" + "61094F07A0000002472003"

    static func bytes(_ text: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            result.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    @Test func table31ListsFourApplicationsByName() throws {
        let directory = try ApplicationDirectory(bytes: Self.bytes(Self.table31))
        #expect(directory.identifiers.count == 4)
        let described = directory.identifiers.map(ApplicationDirectory.describe)
        #expect(described.map(\.hex) == ["A0000002471001", "A0000002472001", "A0000002472002", "A0000002472003"])
        #expect(described.map(\.name) == ["eMRTD (LDS1)", "travel records (LDS2)", "visa records (LDS2)", "additional biometrics (LDS2)"])
    }

    @Test func encodeWritesTable31() {
        let identifiers = ["A0000002471001", "A0000002472001", "A0000002472002", "A0000002472003"].map(Self.bytes)
        #expect(ApplicationDirectory.encode(identifiers) == Self.bytes(Self.table31))
    }

    @Test func anUnknownApplicationIsListedWithoutAName() throws {
        let directory = try ApplicationDirectory(bytes: Self.bytes("61084F06E828BD080F01" + "61094F07A0000002471001"))
        let described = directory.identifiers.map(ApplicationDirectory.describe)
        #expect(described.map(\.hex) == ["E828BD080F01", "A0000002471001"])
        #expect(described[0].name == nil && described[1].name == "eMRTD (LDS1)")
    }

    @Test func paddingAndOtherObjectsAreSkipped() throws {
        // Zero padding after the templates (a chip whose file is larger than its content) and an
        // object that is not an application template.
        let directory = try ApplicationDirectory(bytes: Self.bytes("5301AA" + Self.table31 + "0000000000"))
        #expect(directory.identifiers.count == 4)
        #expect(try ApplicationDirectory(bytes: []).identifiers.isEmpty)
    }

    @Test("malformed directories are typed errors that say what is wrong", arguments: [
        ("61094F07A00000024710", "not BER-TLV"),  // a template running past the end
        ("6103500141", "no application identifier"),  // a label (50) but no 4F
        ("61064F04A0000002", "4 bytes"),  // an identifier too short
        ("61134F11A0000002471001A0000002471001A00000", "17 bytes"),  // too long
        ("61034F81", "not BER-TLV"),  // an identifier whose length runs out
        (String(repeating: "61094F07A0000002471001", count: 17), "more than 16"),
    ])
    func malformed(hex: String, says: String) {
        #expect {
            _ = try ApplicationDirectory(bytes: Self.bytes(hex))
        } throws: { error in
            guard let error = error as? MRTDError else { return false }
            return error.code == .malformedData && "\(error)".contains(says)
        }
    }

    @Test func theFileIsNamedAndBoundedLikeEveryOther() {
        #expect(LDSFile(name: "EF.DIR") == .directory && LDSFile(name: "DIR") == .directory && LDSFile(dumpFileName: "EF_DIR.bin") == .directory && LDSFile(dumpFileName: "2f00.bin") == .directory)
        #expect(LDSFile.directory.fid == 0x2F00 && LDSFile.directory.sfi == 0x1E)
        #expect(LDSFile.directory.sizeCeiling == 1_024)
    }
}
