import Biometrics
import Foundation
import TestSupport
import Testing

/// DG3/DG4 parsing against a real German test passport's records (JMRTD's test resources, in
/// ../shared/fixtures) and the emulator's synthesised ones; damaged input is an error, never a crash.
@Suite("DG3 and DG4: ISO/IEC 19794-4 and -6 records")
struct BiometricDataGroupTests {
    static func shared(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: TestFixtures.sharedURL("lds/bsi2008/\(name)")))
    }

    @Test("the BSI 2008 test passport's DG3: WSQ fingerprints", .enabled(if: TestFixtures.sharedFixturesAvailable, "needs ../shared/fixtures"))
    func realDG3() throws {
        let group = try BiometricDataGroup(bytes: try Self.shared("Datagroup3.bin"))
        #expect(group.unparsed.isEmpty, "\(group.unparsed)")
        try #require(group.images.count == 2)
        let first = group.images[0]
        #expect(first.kind == "finger" && first.position == 2 && first.positionName == "right index finger")
        #expect(first.format == "WSQ" && !first.displayable && first.mimeType == nil)
        #expect(first.width == 620 && first.height == 620 && first.quality == 100)
        #expect(first.data.starts(with: [0xFF, 0xA0]), "a WSQ image begins with SOI FFA0")
    }

    @Test("the BSI 2008 test passport's DG4: JPEG 2000 irises", .enabled(if: TestFixtures.sharedFixturesAvailable, "needs ../shared/fixtures"))
    func realDG4() throws {
        let group = try BiometricDataGroup(bytes: try Self.shared("Datagroup4.bin"))
        #expect(group.unparsed.isEmpty, "\(group.unparsed)")
        try #require(!group.images.isEmpty)
        for image in group.images {
            #expect(image.kind == "iris" && image.format == "JPEG 2000" && image.mimeType == "image/jp2")
            #expect(image.width > 0 && image.height > 0, "\(image.width)×\(image.height) \(image.positionName)")
            #expect(image.data.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]), "a JP2 signature box")
        }
        #expect(group.images.first.map { ($0.width, $0.height, $0.positionName) } ?? (0, 0, "") == (163, 149, "right eye"))
    }

    @Test("truncated and altered records are errors or skipped records, never a crash",
          .enabled(if: TestFixtures.sharedFixturesAvailable, "needs ../shared/fixtures"))
    func damaged() throws {
        for name in ["Datagroup3.bin", "Datagroup4.bin"] {
            let bytes = try Self.shared(name)
            for length in stride(from: 0, to: bytes.count, by: 97) {
                _ = try? BiometricDataGroup(bytes: Array(bytes.prefix(length)))
            }
            for index in stride(from: 0, to: min(bytes.count, 200), by: 1) {
                var altered = bytes
                altered[index] ^= 0xFF
                if let group = try? BiometricDataGroup(bytes: altered) {
                    for image in group.images { #expect(image.data.count <= bytes.count) }
                }
            }
        }
        #expect(throws: BiometricError.self) { try BiometricDataGroup(bytes: [0x61, 0x00]) }
    }
}

/// Records that multiply (issue 42): a data group is read to `maxTemplates` templates and
/// `maxImages` images; the rest is counted, not built, and said once.
@Suite("DG3 and DG4: bounded before anything is built")
struct BiometricBoundsTests {
    static func be(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// BER-TLV with a definite length.
    static func tlv(_ tag: [UInt8], _ value: [UInt8]) -> [UInt8] {
        let length: [UInt8] = value.count < 0x80 ? [UInt8(value.count)] : value.count < 0x100 ? [0x81, UInt8(value.count)]
            : value.count < 0x10000 ? [0x82] + be(value.count, 2) : [0x83] + be(value.count, 3)
        return tag + length + value
    }

    static func group(tag: UInt8, records: [[UInt8]]) -> [UInt8] {
        let templates = records.map { tlv([0x7F, 0x60], tlv([0xA1], tlv([0x81], [0x10])) + tlv([0x5F, 0x2E], $0)) }
        return tlv([tag], tlv([0x7F, 0x61], tlv([0x02], [UInt8(truncatingIfNeeded: records.count)]) + templates.flatMap { $0 }))
    }

    /// One ISO/IEC 19794-6 record announcing `subtypes` × `each` empty images (11 bytes each).
    static func irisRecord(subtypes: Int, each: Int) -> [UInt8] {
        var body: [UInt8] = []
        for subtype in 1...subtypes {
            body += [UInt8(subtype)] + be(each, 2)
            for image in 0..<each { body += be(image, 2) + [50, 0, 0, 0, 0, 0, 0, 0, 0] }
        }
        var header: [UInt8] = Array("IIR".utf8) + [0] + Array("010".utf8) + [0] + be(45 + body.count, 4)
        header += be(0, 2) + [UInt8(subtypes)] + be(45, 2) + be(0, 2) + be(200, 2) + be(2, 2) + be(64, 2) + be(48, 2)
        header += [UInt8](repeating: 0, count: 45 - header.count)
        return header + body
    }

    static func fingerRecord() -> [UInt8] {
        let view = be(14, 4) + [2, 1, 1, 80, 0] + be(0, 2) + be(0, 2) + [0]
        return Array("FIR".utf8) + [0] + Array("010".utf8) + [0] + be(32 + view.count, 6) + be(0, 2) + be(31, 2) + [1, 1]
            + be(500, 2) + be(500, 2) + be(500, 2) + be(500, 2) + [8, 0, 0, 0] + view
    }

    @Test("a 3.6 MB DG4 of 327,675 empty iris images: 16 read, the rest counted and named once")
    func irisFlood() throws {
        let bytes = Self.group(tag: 0x76, records: [Self.irisRecord(subtypes: 5, each: 65_535)])
        #expect(bytes.count > 3_600_000)
        let group = try BiometricDataGroup(bytes: bytes)
        #expect(group.images.count == BiometricDataGroup.maxImages)
        #expect(group.unparsed.count == 1 && group.unparsed[0].contains("327675 biometric images announced"), "\(group.unparsed)")
    }

    @Test("51,000 finger templates: the first 16 read, the others only counted")
    func fingerFlood() throws {
        let bytes = Self.group(tag: 0x63, records: Array(repeating: Self.fingerRecord(), count: 51_000))
        let group = try BiometricDataGroup(bytes: bytes)
        #expect(group.images.count == 16)
        #expect(group.unparsed.contains { $0.contains("51000 biometric templates") }, "\(group.unparsed)")
    }

    @Test("ten fingers in ten templates and two irises: everything read, nothing named")
    func realisticCountsAreUntouched() throws {
        let fingers = try BiometricDataGroup(bytes: Self.group(tag: 0x63, records: Array(repeating: Self.fingerRecord(), count: 10)))
        #expect(fingers.images.count == 10 && fingers.unparsed.isEmpty)
        let irises = try BiometricDataGroup(bytes: Self.group(tag: 0x76, records: [Self.irisRecord(subtypes: 2, each: 1)]))
        #expect(irises.images.count == 2 && irises.unparsed.isEmpty)
    }
}
