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
