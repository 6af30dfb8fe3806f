import Foundation
import ImageCodecs
import Testing

/// What a decode may cost, and what a header may claim (issue 49): the JPEG 2000 size check reads
/// the SIZ marker of the codestream box, never a decoy elsewhere; a large JPEG is decoded at the
/// scale its reader asked for; a decode past its CPU budget stops as too costly.
@Suite("Decode costs: the codestream's own SIZ, DCT scaling, the CPU budget")
struct DecodeCostTests {
    static func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }

    /// SOC and a SIZ marker for an image `width` × `height` in tiles of `tile` × `tile`, 3 components.
    static func siz(width: Int, height: Int, tile: Int) -> [UInt8] {
        var marker: [UInt8] = [0xFF, 0x4F, 0xFF, 0x51, 0x00, 0x2F, 0x00, 0x00]
        marker += be32(width) + be32(height) + be32(0) + be32(0) + be32(tile) + be32(tile) + be32(0) + be32(0) + [0x00, 0x03]
        for _ in 0..<3 { marker += [0x07, 0x01, 0x01] }
        return marker
    }

    static func box(_ type: String, _ content: [UInt8]) -> [UInt8] { be32(8 + content.count) + Array(type.utf8) + content }

    @Test("a JP2 whose xml box carries a decoy SIZ: the size and tiles of the jp2c codestream count, 40,000 tiles refused")
    func decoySIZIsNotRead() throws {
        let signature: [UInt8] = [0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A]
        let file = signature + Self.box("ftyp", Array("jp2 ".utf8) + Self.be32(0) + Array("jp2 ".utf8))
            + Self.box("xml ", Array("<decoy/>".utf8) + Self.siz(width: 64, height: 64, tile: 64))
            + Self.box("jp2c", Self.siz(width: 4_000, height: 4_000, tile: 20) + [0xFF, 0xD9])
        let size = try #require(ImageCodecs.jpeg2000Size(file))
        #expect(size.width == 4_000 && size.height == 4_000, "\(size)")
        #expect(size.tiles == 40_000)
        #expect(throws: ImageCodecs.Failure.self) { _ = try ImageCodecs.decodeJPEG2000(file) }
        do {
            _ = try ImageCodecs.decodeJPEG2000(file)
        } catch {
            #expect(error.tooCostly && error.reason.contains("tiles"), "\(error)")
        }
        // No jp2c box at all: no size (the decoy is never taken for one).
        let noCodestream = signature + Self.box("xml ", Self.siz(width: 64, height: 64, tile: 64))
        #expect(ImageCodecs.jpeg2000Size(noCodestream) == nil)
    }

    static func photo(width: Int, height: Int) throws -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height { for x in 0..<width { pixels[(y * width + x) * 3] = UInt8(truncatingIfNeeded: x ^ y) } }
        return try ImageCodecs.encodeJPEG(ImageCodecs.RGBImage(width: width, height: height, pixels: pixels))
    }

    @Test("a JPEG larger than its reader needs is decoded at 1/2, 1/4 or 1/8 of its size")
    func jpegIsDecodedAtTheScaleAsked() throws {
        let jpeg = try Self.photo(width: 2_000, height: 1_500)
        let whole = try ImageCodecs.decodeJPEG(jpeg, limits: .init(maxPixels: 4 << 20, maxBytes: 64 << 20))
        #expect(whole.width == 2_000 && whole.height == 1_500)
        let quarter = try ImageCodecs.decodeJPEG(jpeg, limits: .init(maxPixels: 4 << 20, maxBytes: 64 << 20, scaleToPixels: 200_000))
        #expect(quarter.width == 500 && quarter.height == 375, "\(quarter.width)×\(quarter.height)")
        // A JPEG over the pixel limit whole, within it scaled: decoded rather than refused.
        let scaled = try ImageCodecs.decodeJPEG(jpeg, limits: .init(maxPixels: 1 << 20, maxBytes: 64 << 20, scaleToPixels: 1 << 20))
        #expect(scaled.width == 1_000 && scaled.height == 750)
    }

    @Test("a decode past its CPU budget stops as too costly (JPEG and PNG)")
    func cpuBudget() throws {
        let jpeg = try Self.photo(width: 2_000, height: 1_500)
        let tight = ImageCodecs.Limits(maxPixels: 4 << 20, maxBytes: 64 << 20, cpuBudget: .microseconds(1))
        do {
            _ = try ImageCodecs.decodeJPEG(jpeg, limits: tight)
            Issue.record("a 3-megapixel JPEG decoded within a microsecond of CPU")
        } catch {
            #expect(error.tooCostly && error.reason.contains("CPU"), "\(error)")
        }
        let png = try ImageCodecs.encodePNG(try ImageCodecs.decodeJPEG(jpeg, limits: .init(maxPixels: 4 << 20, maxBytes: 64 << 20)))
        do {
            _ = try ImageCodecs.decodePNG(png, limits: tight)
            Issue.record("a 3-megapixel PNG decoded within a microsecond of CPU")
        } catch {
            #expect(error.tooCostly && error.reason.contains("CPU"), "\(error)")
        }
        // Within a generous budget both decode.
        let generous = ImageCodecs.Limits(maxPixels: 4 << 20, maxBytes: 64 << 20, cpuBudget: .seconds(60))
        #expect(try ImageCodecs.decodePNG(png, limits: generous).width == 2_000)
    }
}
