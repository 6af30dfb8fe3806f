import Foundation
import ImageCodecs
import Testing

/// CMYK JPEGs, as many document scanners write them (issue 42: refused as IMAGE_INVALID before),
/// made by an encoder that is not ours (Pillow, Debian's python3-pil, writing Adobe's inverted inks).
@Suite("CMYK JPEGs")
struct CMYKJPEGTests {
    /// A 64 × 48 picture in Pillow's CMYK JPEG: the left half red, the right half white.
    static func pillowCMYK() throws -> [UInt8]? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return nil }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cmyk-\(UUID().uuidString).jpg").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import sys
            from PIL import Image
            image = Image.new("RGB", (64, 48), (255, 255, 255))
            image.paste((220, 30, 30), (0, 0, 32, 48))
            image.convert("CMYK").save(sys.argv[1], "JPEG", quality=95)
            """, path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test("a CMYK JPEG decodes to its colours (Adobe's inverted inks undone)")
    func decodesCMYK() throws {
        let bytes = try #require(try Self.pillowCMYK(), "python3-pil is needed (scripts/install-deps.sh)")
        #expect(ImageCodecs.jpegComponents(bytes) == 4)
        let image = try ImageCodecs.decodeJPEG(bytes)
        #expect(image.width == 64 && image.height == 48)
        func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
            let i = (y * image.width + x) * 3
            return (Int(image.pixels[i]), Int(image.pixels[i + 1]), Int(image.pixels[i + 2]))
        }
        let red = pixel(8, 24), white = pixel(56, 24)
        #expect(red.0 > 180 && red.1 < 80 && red.2 < 80, "\(red)")
        #expect(white.0 > 230 && white.1 > 230 && white.2 > 230, "\(white)")
    }

    @Test("frame headers: grey, colour, none")
    func components() throws {
        let colour = try ImageCodecs.encodeJPEG(ImageCodecs.RGBImage(width: 8, height: 8, pixels: [UInt8](repeating: 128, count: 192)), quality: 90)
        #expect(ImageCodecs.jpegComponents(colour) == 3)
        #expect(ImageCodecs.jpegComponents([0xFF, 0xD8, 0xFF, 0xDA, 0, 2]) == nil)
        #expect(ImageCodecs.jpegComponents([0xFF, 0xD8, 0xFF, 0xC0, 0xFF, 0xFF]) == nil, "a length past the end")
    }
}
