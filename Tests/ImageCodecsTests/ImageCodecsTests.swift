import Foundation
import ImageCodecs
import Testing

/// The codecs on their own: what they make is read back by an independent decoder (a PNG decoder
/// in Python's standard library for PNG; the JPEG's own markers for JPEG), and whatever they are
/// handed — truncated, garbage, a header promising a huge image — ends in a typed `Failure`, never
/// a crash or an allocation the header asked for.
@Suite("ImageCodecs: JPEG, JPEG 2000 and PNG over libjpeg-turbo, OpenJPEG and libpng")
struct ImageCodecsTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/faces")

    /// A gradient with a hard edge, odd sizes on purpose (no multiple of the 8×8 or 16×16 blocks).
    static func gradient(width: Int = 97, height: Int = 61) -> ImageCodecs.RGBImage {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                pixels += [UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), x < width / 2 ? 40 : 220]
            }
        }
        return .init(width: width, height: height, pixels: pixels)
    }

    /// The frame size a JPEG's SOF marker declares, read from the bytes.
    static func jpegFrameSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        var index = 2
        while index + 9 < bytes.count, bytes[index] == 0xFF {
            let marker = bytes[index + 1]
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (Int(bytes[index + 7]) << 8 | Int(bytes[index + 8]), Int(bytes[index + 5]) << 8 | Int(bytes[index + 6]))
            }
            index += 2 + length
        }
        return nil
    }

    @Test("JPEG: encoded, the markers declare the size; decoded, the pixels are close to the original")
    func jpegRoundTrip() throws {
        let image = Self.gradient()
        let jpeg = try ImageCodecs.encodeJPEG(image, quality: 92)
        #expect(jpeg.prefix(2) == [0xFF, 0xD8] && jpeg.suffix(2) == [0xFF, 0xD9])
        let declared = try #require(Self.jpegFrameSize(jpeg))
        #expect(declared.width == 97 && declared.height == 61)
        let decoded = try ImageCodecs.decodeJPEG(jpeg)
        #expect(decoded.width == 97 && decoded.height == 61 && decoded.pixels.count == 97 * 61 * 3)
        let error = zip(decoded.pixels, image.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        #expect(Double(error) / Double(image.pixels.count) < 6, "mean error \(Double(error) / Double(image.pixels.count))")
    }

    @Test("the face fixtures decode at the size their headers declare")
    func fixturesDecode() throws {
        let jpeg = [UInt8](try Data(contentsOf: Self.fixtures.appendingPathComponent("face-jpeg.jpg")))
        let declared = try #require(Self.jpegFrameSize(jpeg))
        let face = try ImageCodecs.decodeJPEG(jpeg)
        #expect(face.width == declared.width && face.height == declared.height)
        let jp2 = [UInt8](try Data(contentsOf: Self.fixtures.appendingPathComponent("face-jpeg2000.jp2")))
        let size = try #require(ImageCodecs.jpeg2000Size(jp2))
        let decoded = try ImageCodecs.decodeJPEG2000(jp2)
        #expect(decoded.width == size.width && decoded.height == size.height && decoded.pixels.count == size.width * size.height * 3)
    }

    @Test("PNG: every chunk's CRC holds, and Python's zlib-based decoder reads back exactly our pixels")
    func pngIsExact() throws {
        let image = Self.gradient(width: 23, height: 9)
        let png = try ImageCodecs.encodePNG(image)
        #expect(png.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var index = 8
        var chunks: [String] = []
        while index + 12 <= png.count {
            let length = Int(png[index]) << 24 | Int(png[index + 1]) << 16 | Int(png[index + 2]) << 8 | Int(png[index + 3])
            let typeAndData = Array(png[(index + 4)..<(index + 8 + length)])
            let crc = png[(index + 8 + length)..<(index + 12 + length)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            #expect(CRC32.of(typeAndData) == crc, "chunk \(chunks.count) CRC")
            chunks.append(String(decoding: typeAndData.prefix(4), as: UTF8.self))
            index += 12 + length
        }
        #expect(chunks.first == "IHDR" && chunks.last == "IEND" && chunks.contains("IDAT"))
        #expect(index == png.count)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("codec-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let decoded = try Self.python(Self.pngDecoder, file.path)
        #expect(decoded == "23 9 " + image.pixels.map(String.init).joined(separator: ","))
    }

    @Test("PNG decodes back to exactly the pixels encoded; truncations and a 60000×60000 header are refused")
    func pngRoundTripAndBombs() throws {
        let image = Self.gradient(width: 31, height: 17)
        let png = try ImageCodecs.encodePNG(image)
        let decoded = try ImageCodecs.decodePNG(png)
        #expect(decoded == image)
        for cut in [0, 8, 20, png.count / 2, png.count - 13] {
            #expect(throws: ImageCodecs.Failure.self, "cut at \(cut)") { _ = try ImageCodecs.decodePNG(Array(png.prefix(cut))) }
        }
        // IHDR claims 60000×60000 (CRC recomputed, so only the size is wrong).
        var bomb = png
        for offset in [16, 20] { bomb[offset] = 0; bomb[offset + 1] = 0; bomb[offset + 2] = 0xEA; bomb[offset + 3] = 0x60 }
        let crc = CRC32.of(Array(bomb[12..<29]))
        for index in 0..<4 { bomb[29 + index] = UInt8((crc >> (24 - 8 * UInt32(index))) & 0xFF) }
        #expect {
            _ = try ImageCodecs.decodePNG(bomb)
        } throws: { error in
            (error as? ImageCodecs.Failure)?.reason.contains("too large") == true
        }
    }

    @Test("hostile input: empty, garbage, every truncation of a JPEG are typed failures")
    func hostileJPEG() throws {
        #expect(throws: ImageCodecs.Failure.self) { _ = try ImageCodecs.decodeJPEG([]) }
        #expect(throws: ImageCodecs.Failure.self) { _ = try ImageCodecs.decodeJPEG(Array(repeating: 0xFF, count: 4096)) }
        #expect(throws: ImageCodecs.Failure.self) { _ = try ImageCodecs.decodeJPEG2000(Array("not a codestream".utf8)) }
        let jpeg = try ImageCodecs.encodeJPEG(Self.gradient(), quality: 80)
        for cut in stride(from: 2, to: jpeg.count - 2, by: max(1, jpeg.count / 24)) {
            // A truncated scan may decode with grey rows (libjpeg's warning) or fail; it never
            // crashes and never answers a size other than the header's.
            if let image = try? ImageCodecs.decodeJPEG(Array(jpeg.prefix(cut))) {
                #expect(image.width == 97 && image.height == 61 && image.pixels.count == 97 * 61 * 3, "cut at \(cut)")
            }
        }
    }

    @Test("a JPEG whose header declares 60000×60000 is refused from the header, before any allocation")
    func jpegBomb() throws {
        var jpeg = try ImageCodecs.encodeJPEG(Self.gradient(width: 16, height: 16))
        // Patch the SOF0 frame size to 60000×60000: a 600-byte file claiming 10 GB of pixels.
        var index = 2
        while index + 9 < jpeg.count, jpeg[index + 1] != 0xC0 {
            index += 2 + (Int(jpeg[index + 2]) << 8 | Int(jpeg[index + 3]))
        }
        try #require(jpeg[index + 1] == 0xC0)
        for offset in [5, 7] { jpeg[index + offset] = 0xEA; jpeg[index + offset + 1] = 0x60 }
        #expect(Self.jpegFrameSize(jpeg)?.width == 60_000)
        #expect {
            _ = try ImageCodecs.decodeJPEG(jpeg)
        } throws: { error in
            (error as? ImageCodecs.Failure)?.reason.contains("too large") == true
        }
    }

    @Test("encoding refuses a buffer that does not match its size")
    func encodeChecksBuffer() {
        #expect(throws: ImageCodecs.Failure.self) { _ = try ImageCodecs.encodeJPEG(.init(width: 4, height: 4, pixels: [1, 2, 3])) }
        #expect(throws: ImageCodecs.Failure.self) { _ = try ImageCodecs.encodePNG(.init(width: 0, height: 4, pixels: [])) }
    }

    /// A PNG decoder for 8-bit RGB, non-interlaced (all filter types), on Python's zlib.
    static let pngDecoder = #"""
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat, ihdr = 8, b'', None
while pos < len(data):
    length, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b'IHDR': ihdr = struct.unpack('>IIBBBBB', body)
    if kind == b'IDAT': idat += body
    pos += 12 + length
width, height, depth, colour, _, _, interlace = ihdr
assert depth == 8 and colour == 2 and interlace == 0, ihdr
raw, stride, out, prev = zlib.decompress(idat), width * 3, [], [0] * (width * 3)
for row in range(height):
    kind, line = raw[row * (stride + 1)], list(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - 3] if i >= 3 else 0
        b, c = prev[i], (prev[i - 3] if i >= 3 else 0)
        if kind == 1: line[i] = (line[i] + a) & 255
        elif kind == 2: line[i] = (line[i] + b) & 255
        elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    out += line
    prev = line
print(width, height, ','.join(map(str, out)))
"""#

    static func python(_ script: String, _ argument: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, argument]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the Python PNG decoder failed")
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// CRC-32 (ISO 3309, as PNG uses it), bit by bit: an independent check of libpng's chunks.
enum CRC32 {
    static func of(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
