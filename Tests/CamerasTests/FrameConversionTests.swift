import ImageCodecs
import Testing
@testable import Cameras

/// Raw V4L2 frames to RGB, checked against the standards' own numbers: the 75 % colour bars of
/// ITU-R BT.601 and BT.709 in 8-bit limited-range Y'CbCr (EBU/SMPTE test signals), packed into
/// every layout the V4L2 specification describes, by packing code written here from that
/// specification (not from the converter).
@Suite("Frame conversion: V4L2 pixel formats to RGB")
struct FrameConversionTests {
    /// 75 % bars: white, yellow, cyan, green, magenta, red, blue, black — as (Y, Cb, Cr).
    static let bars601: [(Int, Int, Int)] = [(180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58),
                                             (84, 184, 198), (65, 100, 212), (35, 212, 114), (16, 128, 128)]
    static let bars709: [(Int, Int, Int)] = [(180, 128, 128), (168, 44, 136), (145, 147, 44), (133, 63, 52),
                                             (63, 193, 204), (51, 109, 212), (28, 212, 120), (16, 128, 128)]
    /// The same bars in R'G'B': 75 % of 255 is 191.
    static let barsRGB: [(Int, Int, Int)] = [(191, 191, 191), (191, 191, 0), (0, 191, 191), (0, 191, 0),
                                             (191, 0, 191), (191, 0, 0), (0, 0, 191), (0, 0, 0)]

    /// An image `bars × barWidth` wide and `height` tall, one bar per column group, as (Y, Cb, Cr) per pixel.
    struct YCbCrImage {
        var width: Int
        var height: Int
        var pixel: (Int, Int) -> (Int, Int, Int)
    }

    static func barImage(_ bars: [(Int, Int, Int)], barWidth: Int = 4, height: Int = 4) -> YCbCrImage {
        YCbCrImage(width: bars.count * barWidth, height: height) { x, _ in bars[x / barWidth] }
    }

    /// Packs `image` as `format` (V4L2 specification layouts; chroma taken from the first pixel
    /// of each subsampled group, which the bars make uniform). `pad` extra bytes end each line.
    static func pack(_ image: YCbCrImage, _ format: PixelFormat, pad: Int = 0) -> (bytes: [UInt8], bytesPerLine: Int) {
        let (w, h) = (image.width, image.height)
        var out: [UInt8] = []
        func b(_ v: Int) -> UInt8 { UInt8(v) }
        switch format {
        case .yuyv, .uyvy, .yvyu, .vyuy:
            let line = w * 2 + pad
            for y in 0..<h {
                for x in stride(from: 0, to: w, by: 2) {
                    let (y0, cb, cr) = image.pixel(x, y), (y1, _, _) = image.pixel(x + 1, y)
                    switch format {
                    case .yuyv: out += [b(y0), b(cb), b(y1), b(cr)]
                    case .uyvy: out += [b(cb), b(y0), b(cr), b(y1)]
                    case .yvyu: out += [b(y0), b(cr), b(y1), b(cb)]
                    default: out += [b(cr), b(y0), b(cb), b(y1)]
                    }
                }
                out += [UInt8](repeating: 0xEE, count: pad)
            }
            return (out, line)
        case .nv12, .nv21, .nv16, .nv61, .nv24, .nv42:
            let line = w + pad
            for y in 0..<h { out += (0..<w).map { b(image.pixel($0, y).0) } + [UInt8](repeating: 0xEE, count: pad) }
            let vertical = format == .nv12 || format == .nv21 ? 2 : 1
            let horizontal = format == .nv24 || format == .nv42 ? 1 : 2
            let swap = format == .nv21 || format == .nv61 || format == .nv42
            for y in stride(from: 0, to: h, by: vertical) {
                var row: [UInt8] = []
                for x in stride(from: 0, to: w, by: horizontal) {
                    let (_, cb, cr) = image.pixel(x, y)
                    row += swap ? [b(cr), b(cb)] : [b(cb), b(cr)]
                }
                out += row + [UInt8](repeating: 0xEE, count: line * 2 / horizontal - row.count)
            }
            return (out, line)
        case .yuv420, .yvu420, .yuv422p:
            let line = w + pad
            for y in 0..<h { out += (0..<w).map { b(image.pixel($0, y).0) } + [UInt8](repeating: 0xEE, count: pad) }
            let vertical = format == .yuv422p ? 1 : 2
            func plane(_ component: ((Int, Int, Int)) -> Int) -> [UInt8] {
                var plane: [UInt8] = []
                for y in stride(from: 0, to: h, by: vertical) {
                    plane += stride(from: 0, to: w, by: 2).map { b(component(image.pixel($0, y))) }
                    plane += [UInt8](repeating: 0xEE, count: line / 2 - w / 2)
                }
                return plane
            }
            let cb = plane { $0.1 }, cr = plane { $0.2 }
            out += format == .yvu420 ? cr + cb : cb + cr
            return (out, line)
        case .grey:
            let line = w + pad
            for y in 0..<h { out += (0..<w).map { b(image.pixel($0, y).0) } + [UInt8](repeating: 0xEE, count: pad) }
            return (out, line)
        default:
            return ([], 0)
        }
    }

    static func assertBars(_ image: ImageCodecs.RGBImage, _ expected: [(Int, Int, Int)], barWidth: Int = 4,
                           tolerance: Int = 2, _ label: String) {
        for (index, bar) in expected.enumerated() {
            for y in 0..<image.height {
                let x = index * barWidth + barWidth / 2
                let at = (y * image.width + x) * 3
                let got = (Int(image.pixels[at]), Int(image.pixels[at + 1]), Int(image.pixels[at + 2]))
                #expect(abs(got.0 - bar.0) <= tolerance && abs(got.1 - bar.1) <= tolerance && abs(got.2 - bar.2) <= tolerance,
                        "\(label) bar \(index) row \(y): \(got) for \(bar)")
            }
        }
    }

    static let yuvFormats: [PixelFormat] = [.yuyv, .uyvy, .yvyu, .vyuy, .nv12, .nv21, .nv16, .nv61, .nv24, .nv42, .yuv420, .yvu420, .yuv422p]

    @Test("BT.601 75 % bars in every Y'CbCr layout give 191/0 RGB bars", arguments: yuvFormats)
    func bt601Bars(format: PixelFormat) throws {
        let (bytes, line) = Self.pack(Self.barImage(Self.bars601), format)
        let image = try FrameConversion.rgb(bytes, format: format, width: 32, height: 4, bytesPerLine: line,
                                            encoding: FrameConversion.Encoding(colorspace: 8, ycbcrEncoding: 0, quantization: 0))
        Self.assertBars(image, Self.barsRGB, "\(format)")
    }

    @Test("BT.709 bars need the 709 matrix: with it they are right, read as 601 they are not")
    func bt709Bars() throws {
        let (bytes, line) = Self.pack(Self.barImage(Self.bars709), .yuyv)
        let rec709 = try FrameConversion.rgb(bytes, format: .yuyv, width: 32, height: 4, bytesPerLine: line,
                                             encoding: FrameConversion.Encoding(colorspace: 3, ycbcrEncoding: 0, quantization: 0))
        Self.assertBars(rec709, Self.barsRGB, "709")
        let as601 = try FrameConversion.rgb(bytes, format: .yuyv, width: 32, height: 4, bytesPerLine: line, encoding: .bt601Limited)
        let at = (4 + 2) * 3  // the yellow bar's middle
        #expect(abs(Int(as601.pixels[at + 1]) - 191) > 4, "a 709 frame read as 601 should be visibly off")
    }

    @Test("full range: Y 0 and 255 are black and white; limited: 16 and 235 are")
    func ranges() throws {
        let full = FrameConversion.Encoding(colorspace: 7, ycbcrEncoding: 0, quantization: 0)  // JPEG colorspace
        #expect(full.fullRange)
        let white = try FrameConversion.rgb([255, 128, 255, 128], format: .yuyv, width: 2, height: 1, bytesPerLine: 4, encoding: full)
        #expect(white.pixels == [255, 255, 255, 255, 255, 255])
        let black = try FrameConversion.rgb([16, 128, 16, 128], format: .yuyv, width: 2, height: 1, bytesPerLine: 4, encoding: .bt601Limited)
        #expect(black.pixels == [0, 0, 0, 0, 0, 0])
        let limitedWhite = try FrameConversion.rgb([235, 128, 235, 128], format: .yuyv, width: 2, height: 1, bytesPerLine: 4, encoding: .bt601Limited)
        #expect(limitedWhite.pixels == [255, 255, 255, 255, 255, 255])
        #expect(FrameConversion.Encoding(colorspace: 8, ycbcrEncoding: 0, quantization: 1).fullRange)
        #expect(FrameConversion.Encoding(colorspace: 10, ycbcrEncoding: 0, quantization: 0).matrix == .bt2020)
        #expect(FrameConversion.Encoding(colorspace: 8, ycbcrEncoding: 2, quantization: 0).matrix == .bt709)
    }

    @Test("grey and padded lines: the pad bytes never show")
    func greyAndPadding() throws {
        let (bytes, line) = Self.pack(Self.barImage(Self.bars601), .grey, pad: 6)
        let image = try FrameConversion.rgb(bytes, format: .grey, width: 32, height: 4, bytesPerLine: line)
        #expect(image.pixels[0] == 180 && image.pixels[1] == 180 && image.pixels[2] == 180)
        let (padded, paddedLine) = Self.pack(Self.barImage(Self.bars601), .yuyv, pad: 8)
        let fromPadded = try FrameConversion.rgb(padded, format: .yuyv, width: 32, height: 4, bytesPerLine: paddedLine)
        Self.assertBars(fromPadded, Self.barsRGB, "YUYV padded")
    }

    @Test("packed RGB: each layout's bytes land in R, G and B", arguments: [
        (PixelFormat.rgb24, [10, 20, 30]), (.bgr24, [30, 20, 10]), (.xbgr32, [30, 20, 10, 99]), (.abgr32, [30, 20, 10, 99]),
        (.xrgb32, [99, 10, 20, 30]), (.argb32, [99, 10, 20, 30]), (.rgbx32, [10, 20, 30, 99]), (.rgba32, [10, 20, 30, 99]),
        (.bgrx32, [99, 30, 20, 10]), (.bgra32, [99, 30, 20, 10]),
    ])
    func packedRGB(format: PixelFormat, pixel: [UInt8]) throws {
        let image = try FrameConversion.rgb(pixel + pixel, format: format, width: 2, height: 1, bytesPerLine: pixel.count * 2)
        #expect(image.pixels == [10, 20, 30, 10, 20, 30])
    }

    @Test("RGB565 little-endian: pure red, green and blue expand to 255")
    func rgb565() throws {
        // 0xF800 red, 0x07E0 green, 0x001F blue, little-endian.
        let image = try FrameConversion.rgb([0x00, 0xF8, 0xE0, 0x07, 0x1F, 0x00], format: .rgb565, width: 3, height: 1, bytesPerLine: 6)
        #expect(image.pixels == [255, 0, 0, 0, 255, 0, 0, 0, 255])
    }

    @Test("short frames, impossible sizes and unknown formats are typed errors, never a read past the end",
          arguments: [PixelFormat.yuyv, .nv12, .nv16, .nv24, .yuv420, .yuv422p, .grey, .rgb24, .xbgr32, .rgb565])
    func shortFrames(format: PixelFormat) throws {
        let bytesPerPixel = [PixelFormat.rgb24: 3, .xbgr32: 4, .rgb565: 2][format]
        let (bytes, line) = bytesPerPixel.map { ([UInt8](repeating: 0x40, count: 32 * 4 * $0), 32 * $0) } ?? Self.pack(Self.barImage(Self.bars601), format)
        #expect(try FrameConversion.rgb(bytes, format: format, width: 32, height: 4, bytesPerLine: line).pixels.count == 32 * 4 * 3)
        for cut in [0, 1, bytes.count / 2, bytes.count - 1] {
            #expect(throws: FrameConversion.Problem.self, "\(format) cut to \(cut) of \(bytes.count)") {
                _ = try FrameConversion.rgb(Array(bytes.prefix(cut)), format: format, width: 32, height: 4, bytesPerLine: line)
            }
        }
        #expect(throws: FrameConversion.Problem.self) { _ = try FrameConversion.rgb(bytes, format: format, width: 0, height: 4, bytesPerLine: line) }
        #expect(throws: FrameConversion.Problem.self) { _ = try FrameConversion.rgb(bytes, format: format, width: 100_000, height: 4, bytesPerLine: line) }
        let bayer = try #require(PixelFormat("BA81"))
        #expect(throws: FrameConversion.Problem.self) { _ = try FrameConversion.rgb(bytes, format: bayer, width: 32, height: 4, bytesPerLine: line) }
    }

    @Test("odd widths keep the last column")
    func oddWidth() throws {
        let image = YCbCrImage(width: 3, height: 2) { _, _ in (180, 128, 128) }
        var bytes: [UInt8] = []
        for _ in 0..<2 { bytes += [180, 128, 180, 128, 180, 128, 0, 128] }  // 3 pixels need two groups
        let rgb = try FrameConversion.rgb(bytes, format: .yuyv, width: image.width, height: image.height, bytesPerLine: 8)
        #expect(rgb.pixels.count == 18 && rgb.pixels.allSatisfy { abs(Int($0) - 191) <= 1 })
    }
}
