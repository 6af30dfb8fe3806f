/// A V4L2 pixel format (its fourcc) and what this module can make of it.
public struct PixelFormat: Sendable, Hashable, CustomStringConvertible {
    public let fourcc: UInt32

    public init(fourcc: UInt32) { self.fourcc = fourcc }

    /// `"MJPG"`, `"YUYV"` …: four ASCII characters; nil for anything else.
    public init?(_ code: String) {
        let bytes = Array(code.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ (0x20..<0x7F).contains($0) }) else { return nil }
        self.init(bytes)
    }

    /// The constants below: four bytes, as V4L2's v4l2_fourcc() packs them (first byte lowest).
    private init(_ bytes: [UInt8]) {
        fourcc = bytes.prefix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    private init(_ code: StaticString) {
        self.init(code.withUTF8Buffer { Array($0) })
    }

    /// The four characters (non-printable bytes as `.`).
    public var description: String {
        String((0..<4).map { shift -> Character in
            let byte = UInt8((fourcc >> (8 * UInt32(shift))) & 0xFF)
            return (0x20..<0x7F).contains(byte) ? Character(Unicode.Scalar(byte)) : "."
        })
    }

    public static let mjpeg = PixelFormat("MJPG" as StaticString)
    public static let jpeg = PixelFormat("JPEG" as StaticString)
    public static let yuyv = PixelFormat("YUYV" as StaticString)
    public static let uyvy = PixelFormat("UYVY" as StaticString)
    public static let yvyu = PixelFormat("YVYU" as StaticString)
    public static let vyuy = PixelFormat("VYUY" as StaticString)
    public static let rgb24 = PixelFormat("RGB3" as StaticString)
    public static let bgr24 = PixelFormat("BGR3" as StaticString)
    public static let grey = PixelFormat("GREY" as StaticString)
    public static let nv12 = PixelFormat("NV12" as StaticString)
    public static let nv21 = PixelFormat("NV21" as StaticString)
    public static let nv16 = PixelFormat("NV16" as StaticString)
    public static let nv61 = PixelFormat("NV61" as StaticString)
    public static let nv24 = PixelFormat("NV24" as StaticString)
    public static let nv42 = PixelFormat("NV42" as StaticString)
    public static let yuv422p = PixelFormat("422P" as StaticString)
    /// 32-bit RGB, named by their bytes in memory: `XR24` is B, G, R, X (V4L2_PIX_FMT_XBGR32).
    public static let xbgr32 = PixelFormat("XR24" as StaticString)
    public static let abgr32 = PixelFormat("AR24" as StaticString)
    /// X, R, G, B (V4L2_PIX_FMT_XRGB32) and A, R, G, B.
    public static let xrgb32 = PixelFormat("BX24" as StaticString)
    public static let argb32 = PixelFormat("BA24" as StaticString)
    /// R, G, B, X (V4L2_PIX_FMT_RGBX32) and R, G, B, A.
    public static let rgbx32 = PixelFormat("XB24" as StaticString)
    public static let rgba32 = PixelFormat("AB24" as StaticString)
    /// X, B, G, R (V4L2_PIX_FMT_BGRX32) and A, B, G, R.
    public static let bgrx32 = PixelFormat("RX24" as StaticString)
    public static let bgra32 = PixelFormat("RA24" as StaticString)
    /// V4L2_PIX_FMT_RGB565, little-endian.
    public static let rgb565 = PixelFormat("RGBP" as StaticString)
    public static let yuv420 = PixelFormat("YU12" as StaticString)
    public static let yvu420 = PixelFormat("YV12" as StaticString)

    /// The formats capture asks for, best first: MJPEG (what a USB 2.0 camera gives at full size),
    /// then the packed 4:2:2 formats, RGB, the semi-planar and planar ones, 16-bit RGB, and grey
    /// last (it loses the colour a document check may need).
    public static let preference: [PixelFormat] = [.mjpeg, .jpeg, .yuyv, .uyvy, .yvyu, .vyuy, .rgb24, .bgr24,
                                                   .xbgr32, .abgr32, .xrgb32, .argb32, .rgbx32, .rgba32, .bgrx32, .bgra32,
                                                   .nv12, .nv21, .nv16, .nv61, .nv24, .nv42, .yuv420, .yvu420, .yuv422p, .rgb565, .grey]

    /// Where R, G and B sit in a 32-bit RGB pixel's four bytes.
    var rgb32Offsets: (r: Int, g: Int, b: Int)? {
        switch self {
        case .xbgr32, .abgr32: return (2, 1, 0)
        case .xrgb32, .argb32: return (1, 2, 3)
        case .rgbx32, .rgba32: return (0, 1, 2)
        case .bgrx32, .bgra32: return (3, 2, 1)
        default: return nil
        }
    }

    public var isSupported: Bool { Self.preference.contains(self) }
    public var isCompressed: Bool { self == .mjpeg || self == .jpeg }
}
