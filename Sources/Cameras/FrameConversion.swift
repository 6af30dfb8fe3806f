import ImageCodecs

/// Camera frames to RGB: MJPEG through libjpeg-turbo (within limits, the default Huffman tables
/// for frames that carry none, as UVC cameras send them), raw Y'CbCr with the matrix and range the
/// driver reports (BT.601, BT.709 or BT.2020; limited or full), and packed RGB. A frame shorter than
/// its format needs is an error, never a read past its end.
enum FrameConversion {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// What a camera frame may cost to decode: 64 megapixels, 512 MiB of working memory.
    static let limits = ImageCodecs.Limits(maxPixels: 64 << 20, maxBytes: 512 << 20)

    /// How the driver says a frame's Y'CbCr values are to be read (V4L2's `colorspace`,
    /// `ycbcr_enc` and `quantization`, defaults resolved as the V4L2 specification's
    /// V4L2_MAP_*_DEFAULT macros do).
    struct Encoding: Sendable, Hashable {
        enum Matrix: Sendable, Hashable { case bt601, bt709, bt2020 }
        var matrix: Matrix
        var fullRange: Bool

        static let bt601Limited = Encoding(matrix: .bt601, fullRange: false)

        init(matrix: Matrix, fullRange: Bool) {
            self.matrix = matrix
            self.fullRange = fullRange
        }

        init(colorspace: UInt32, ycbcrEncoding: UInt32, quantization: UInt32) {
            // videodev2.h: V4L2_COLORSPACE_REC709 = 3, JPEG = 7, BT2020 = 10, DCI_P3 = 12;
            // V4L2_YCBCR_ENC_709 = 2, XV709 = 4, BT2020 = 6, BT2020_CONST_LUM = 7;
            // V4L2_QUANTIZATION_FULL_RANGE = 1, LIM_RANGE = 2.
            switch ycbcrEncoding {
            case 2, 4: matrix = .bt709
            case 6, 7: matrix = .bt2020
            case 0: matrix = colorspace == 3 || colorspace == 12 ? .bt709 : colorspace == 10 ? .bt2020 : .bt601
            default: matrix = .bt601
            }
            switch quantization {
            case 1: fullRange = true
            case 2: fullRange = false
            default: fullRange = colorspace == 7  // JPEG colorspace: full range; every other: limited
            }
        }

        /// 16.16 fixed-point factors: luma scale and offset, and the four chroma terms.
        var factors: (y: Int, yOffset: Int, rCr: Int, gCb: Int, gCr: Int, bCb: Int) {
            let (kr, kb): (Double, Double) = switch matrix {
            case .bt601: (0.299, 0.114)
            case .bt709: (0.2126, 0.0722)
            case .bt2020: (0.2627, 0.0593)
            }
            let kg = 1 - kr - kb
            let yScale = fullRange ? 1.0 : 255.0 / 219.0
            let cScale = fullRange ? 1.0 : 255.0 / 224.0
            func fixed(_ value: Double) -> Int { Int((value * 65_536).rounded()) }
            return (fixed(yScale), fullRange ? 0 : 16, fixed(2 * (1 - kr) * cScale), fixed(2 * (1 - kb) * kb / kg * cScale),
                    fixed(2 * (1 - kr) * kr / kg * cScale), fixed(2 * (1 - kb) * cScale))
        }
    }

    static func rgb(_ bytes: [UInt8], format: PixelFormat, width: Int, height: Int, bytesPerLine: Int,
                    encoding: Encoding = .bt601Limited) throws(Problem) -> ImageCodecs.RGBImage {
        guard width > 0, height > 0, width <= 16_384, height <= 16_384 else {
            throw Problem(description: "the camera reported an impossible frame size \(width)×\(height)")
        }
        if format.isCompressed {
            let image: ImageCodecs.RGBImage
            do {
                image = try ImageCodecs.decodeJPEG(bytes, limits: limits)
            } catch {
                throw Problem(description: "the camera sent a corrupt MJPEG frame (\(error.reason))")
            }
            return image
        }
        var out = [UInt8](repeating: 0, count: width * height * 3)
        func need(_ count: Int) throws(Problem) {
            guard bytes.count >= count else {
                throw Problem(description: "the camera sent a short \(format) frame: \(bytes.count) bytes for \(width)×\(height) (\(count) needed)")
            }
        }
        let f = encoding.factors
        @inline(__always) func put(_ index: Int, _ y: Int, _ cb: Int, _ cr: Int) {
            let luma = (y - f.yOffset) * f.y
            let u = cb - 128, v = cr - 128
            out[index] = clamp((luma + f.rCr * v + 32_768) >> 16)
            out[index + 1] = clamp((luma - f.gCb * u - f.gCr * v + 32_768) >> 16)
            out[index + 2] = clamp((luma + f.bCb * u + 32_768) >> 16)
        }
        switch format {
        case .yuyv, .uyvy, .yvyu, .vyuy:
            let stride = max(bytesPerLine, width * 2)
            try need(stride * (height - 1) + ((width + 1) / 2) * 4)
            // Byte positions of Y0, Cb, Y1, Cr in each 4-byte group.
            let (y0, u, y1, v): (Int, Int, Int, Int) = switch format {
            case .yuyv: (0, 1, 2, 3)
            case .uyvy: (1, 0, 3, 2)
            case .yvyu: (0, 3, 2, 1)
            default: (1, 2, 3, 0)  // VYUY
            }
            for row in 0..<height {
                let line = row * stride
                var x = 0
                while x < width {
                    let group = line + (x / 2) * 4
                    let cb = Int(bytes[group + u]), cr = Int(bytes[group + v])
                    put((row * width + x) * 3, Int(bytes[group + y0]), cb, cr)
                    if x + 1 < width { put((row * width + x + 1) * 3, Int(bytes[group + y1]), cb, cr) }
                    x += 2
                }
            }
        case .nv12, .nv21, .nv16, .nv61, .nv24, .nv42:
            // A luma plane, then one plane of interleaved chroma pairs (4:2:0, 4:2:2 or 4:4:4).
            let stride = max(bytesPerLine, width)
            let vertical = format == .nv12 || format == .nv21 ? 2 : 1
            let horizontal = format == .nv24 || format == .nv42 ? 1 : 2
            let chromaStride = stride * 2 / horizontal
            let chromaRows = (height + vertical - 1) / vertical
            let lumaSize = stride * height
            try need(lumaSize + chromaStride * (chromaRows - 1) + ((width + horizontal - 1) / horizontal) * 2)
            let crFirst = format == .nv21 || format == .nv61 || format == .nv42
            for row in 0..<height {
                let chromaLine = lumaSize + (row / vertical) * chromaStride
                for x in 0..<width {
                    let pair = chromaLine + (x / horizontal) * 2
                    let first = Int(bytes[pair]), second = Int(bytes[pair + 1])
                    put((row * width + x) * 3, Int(bytes[row * stride + x]), crFirst ? second : first, crFirst ? first : second)
                }
            }
        case .yuv420, .yvu420, .yuv422p:
            // Three planes: Y, then Cb and Cr (Cr and Cb for YV12) at half width, and half height
            // but for 4:2:2.
            let stride = max(bytesPerLine, width)
            let chromaStride = stride / 2
            let vertical = format == .yuv422p ? 1 : 2
            let chromaWidth = (width + 1) / 2, chromaHeight = (height + vertical - 1) / vertical
            let lumaSize = stride * height
            let chromaPlane = chromaStride * chromaHeight
            guard chromaStride >= chromaWidth else { throw Problem(description: "the camera reported a \(format) line of \(bytesPerLine) bytes for \(width) pixels") }
            try need(lumaSize + 2 * chromaPlane)
            let (cbPlane, crPlane) = format == .yvu420 ? (lumaSize + chromaPlane, lumaSize) : (lumaSize, lumaSize + chromaPlane)
            for row in 0..<height {
                for x in 0..<width {
                    let chroma = (row / vertical) * chromaStride + x / 2
                    put((row * width + x) * 3, Int(bytes[row * stride + x]), Int(bytes[cbPlane + chroma]), Int(bytes[crPlane + chroma]))
                }
            }
        case _ where format == .rgb24 || format == .bgr24 || format.rgb32Offsets != nil:
            let size = format.rgb32Offsets == nil ? 3 : 4
            let (r, g, b) = format.rgb32Offsets ?? (format == .rgb24 ? (0, 1, 2) : (2, 1, 0))
            let stride = max(bytesPerLine, width * size)
            try need(stride * (height - 1) + width * size)
            for row in 0..<height {
                for x in 0..<width {
                    let source = row * stride + x * size, target = (row * width + x) * 3
                    out[target] = bytes[source + r]
                    out[target + 1] = bytes[source + g]
                    out[target + 2] = bytes[source + b]
                }
            }
        case .rgb565:
            let stride = max(bytesPerLine, width * 2)
            try need(stride * (height - 1) + width * 2)
            for row in 0..<height {
                for x in 0..<width {
                    let source = row * stride + x * 2, target = (row * width + x) * 3
                    let value = Int(bytes[source]) | Int(bytes[source + 1]) << 8  // little-endian: rrrrrggg gggbbbbb
                    let r = (value >> 11) & 0x1F, g = (value >> 5) & 0x3F, b = value & 0x1F
                    out[target] = UInt8((r << 3) | (r >> 2))
                    out[target + 1] = UInt8((g << 2) | (g >> 4))
                    out[target + 2] = UInt8((b << 3) | (b >> 2))
                }
            }
        case .grey:
            let stride = max(bytesPerLine, width)
            try need(stride * (height - 1) + width)
            for row in 0..<height {
                for x in 0..<width {
                    let value = bytes[row * stride + x], target = (row * width + x) * 3
                    out[target] = value; out[target + 1] = value; out[target + 2] = value
                }
            }
        default:
            throw Problem(description: "the pixel format \(format) is not one this host converts")
        }
        return ImageCodecs.RGBImage(width: width, height: height, pixels: out)
    }

    @inline(__always)
    private static func clamp(_ value: Int) -> UInt8 { UInt8(min(255, max(0, value))) }
}
