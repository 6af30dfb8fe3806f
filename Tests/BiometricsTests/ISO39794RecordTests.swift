import Biometrics
import Foundation
import TestSupport
import Testing

/// DG3/DG4 whose biometric data blocks are ISO/IEC 39794-4/-6 data blocks (tagged binary
/// encoding), built here from the standard's ASN.1: finger positions, eye labels, formats, codes
/// written both as an INTEGER and as the choice of a code, sizes from the images' own headers
/// (a real WSQ and a real JPEG 2000 of the BSI test passport: the sizes its 19794 records state).
@Suite("DG3 and DG4: ISO/IEC 39794-4 and -6 data blocks")
struct ISO39794RecordTests {
    static func der(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        let count = value.count
        let length: [UInt8] = count < 0x80 ? [UInt8(count)] : count < 0x100 ? [0x81, UInt8(count)]
            : count < 0x10000 ? [0x82, UInt8(count >> 8), UInt8(count & 0xFF)] : [0x83, UInt8(count >> 16), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
        return [tag] + length + value
    }

    /// `[n] { [0] code }` (a choice) or `[n] code`.
    static func code(_ number: UInt8, _ value: UInt8, choice: Bool) -> [UInt8] {
        choice ? der(0xA0 | number, der(0x80, [value])) : der(0x80 | number, [value])
    }

    static let version = der(0xA0, der(0x80, [0x03]) + der(0x81, [0x00]))

    static func finger(position: UInt8, format: UInt8, image: [UInt8], choice: Bool) -> [UInt8] {
        der(0x30, code(0, position, choice: choice) + code(1, 0, choice: choice) + code(2, format, choice: choice) + der(0x83, image))
    }

    static func iris(eye: UInt8, format: UInt8, image: [UInt8]) -> [UInt8] {
        der(0x30, der(0x80, [eye]) + code(1, 3, choice: true) + der(0x82, [8]) + code(3, format, choice: true) + der(0x84, [0])
            + der(0x85, [0]) + der(0x86, [0]) + der(0xA7, der(0x80, [0x01, 0x00])) + der(0x89, image))
    }

    /// DG3 (63) or DG4 (76) with one biometric information template around `block`.
    static func dataGroup(_ tag: UInt8, _ block: [UInt8]) -> [UInt8] {
        let header = der(0xA1, der(0x80, [0x01, 0x01]) + der(0x87, [0x01, 0x01]))
        let template = [0x7F, 0x60] + Array(der(0x00, header + [0x5F, 0x2E] + Array(der(0x00, block).dropFirst())).dropFirst())
        let group = [0x7F, 0x61] + Array(der(0x00, der(0x02, [1]) + template).dropFirst())
        return der(tag, group)
    }

    /// A PNG's signature and IHDR chunk: 300 × 400.
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        + [0, 0, 0x01, 0x2C, 0, 0, 0x01, 0x90, 8, 0, 0, 0, 0, 0, 0, 0, 0]

    @Test func fingerprintsInA39794_4DataBlock() throws {
        let jp2 = [UInt8](try Data(contentsOf: TestFixtures.url("faces/face-jpeg2000.jp2")))
        // Codes as a choice in one representation, as the INTEGER in the other.
        let block = Self.der(0x64, Self.version + Self.der(0xA1, Self.finger(position: 2, format: 3, image: jp2, choice: true)
            + Self.finger(position: 7, format: 4, image: Self.png, choice: false)))
        let group = try BiometricDataGroup(bytes: Self.dataGroup(0x63, block))
        #expect(group.unparsed.isEmpty, "\(group.unparsed)")
        try #require(group.images.count == 2)
        let (first, second) = (group.images[0], group.images[1])
        #expect(first.kind == "finger" && first.position == 2 && first.positionName == "right index finger")
        #expect(first.format == "JPEG 2000" && first.mimeType == "image/jp2" && !first.displayable)
        #expect(first.width == 413 && first.height == 531, "from the JP2 image header box (height, then width)")
        #expect(first.data == jp2)
        #expect(second.position == 7 && second.positionName == "left index finger" && second.format == "PNG" && second.displayable)
        #expect(second.width == 300 && second.height == 400)
    }

    @Test func irisesInA39794_6DataBlock() throws {
        let block = Self.der(0x66, Self.version + Self.der(0xA1, Self.iris(eye: 1, format: 2, image: Self.png) + Self.iris(eye: 2, format: 0,
                                                                                                                     image: Array("P5\n640 480\n255\n".utf8) + [0, 0])))
        let group = try BiometricDataGroup(bytes: Self.dataGroup(0x76, block))
        #expect(group.unparsed.isEmpty, "\(group.unparsed)")
        try #require(group.images.count == 2)
        #expect(group.images[0].kind == "iris" && group.images[0].positionName == "right eye" && group.images[0].format == "PNG")
        #expect(group.images[1].positionName == "left eye" && group.images[1].format == "PGM" && !group.images[1].displayable)
        #expect(group.images[1].width == 640 && group.images[1].height == 480)
    }

    @Test("a real WSQ and a real JPEG 2000 (the BSI 2008 test passport) in 39794 blocks: the sizes its 19794 records state",
          .enabled(if: TestFixtures.sharedFixturesAvailable, "needs ../shared/fixtures"))
    func realImagesSizedFromTheirHeaders() throws {
        for (file, tag, kind) in [("Datagroup3.bin", UInt8(0x63), "finger"), ("Datagroup4.bin", UInt8(0x76), "iris")] {
            let original = try BiometricDataGroup(bytes: [UInt8](try Data(contentsOf: TestFixtures.sharedURL("lds/bsi2008/\(file)"))))
            let image = try #require(original.images.first)
            let representation = kind == "finger" ? Self.finger(position: UInt8(image.position), format: image.format == "WSQ" ? 1 : 3,
                                                                image: image.data, choice: true)
                                                  : Self.iris(eye: UInt8(image.position), format: 4, image: image.data)
            let rewrapped = try BiometricDataGroup(bytes: Self.dataGroup(tag, Self.der(kind == "finger" ? 0x64 : 0x66,
                                                                                       Self.version + Self.der(0xA1, representation))))
            let again = try #require(rewrapped.images.first)
            #expect(again.width == image.width && again.height == image.height && again.width > 0, "\(file): \(again.width)×\(again.height) vs \(image.width)×\(image.height)")
            #expect(again.format == image.format && again.data == image.data)
        }
    }

    @Test func damaged39794BlocksAreNamedNotCrashed() throws {
        // No image data ([3] missing).
        let noImage = Self.der(0x64, Self.version + Self.der(0xA1, Self.der(0x30, Self.code(0, 2, choice: true) + Self.code(2, 1, choice: true))))
        let group = try BiometricDataGroup(bytes: Self.dataGroup(0x63, noImage))
        #expect(group.images.isEmpty && group.unparsed.count == 1 && group.unparsed[0].contains("image data"), "\(group.unparsed)")
        // An extension block where the position code should be.
        let extensionBlock = Self.der(0x64, Self.version + Self.der(0xA1, Self.der(0x30, Self.der(0xA0, Self.der(0xA1, [0x80, 0x00]))
            + Self.code(2, 1, choice: true) + Self.der(0x83, [1, 2, 3]))))
        let refused = try BiometricDataGroup(bytes: Self.dataGroup(0x63, extensionBlock))
        #expect(refused.unparsed.first?.contains("extension block") == true, "\(refused.unparsed)")
        // Truncated anywhere: an error or an unparsed entry, never a crash.
        let full = Self.dataGroup(0x63, Self.der(0x64, Self.version + Self.der(0xA1, Self.finger(position: 2, format: 4, image: Self.png, choice: true))))
        for cut in 1..<full.count {
            _ = try? BiometricDataGroup(bytes: Array(full.prefix(cut)))
        }
    }
}
