import CImageCodecs

/// Memory-to-memory image coding over Debian's codecs: JPEG 2000 decoding (OpenJPEG), JPEG
/// decoding and encoding (libjpeg-turbo), PNG encoding (libpng/zlib). Pixels are 8-bit RGB.
public enum ImageCodecs {
    /// What one decode may cost, checked from the image's header before anything is decoded.
    public struct Limits: Sendable, Hashable {
        /// Pixels of the decoded image.
        public var maxPixels: Int
        /// Estimated working memory of the decoder, in bytes.
        public var maxBytes: Int
        /// JPEG 2000 tiles (OpenJPEG allocates a structure per tile while reading the header).
        public var maxTiles: Int

        /// JPEG only: decoded at 1/2, 1/4 or 1/8 of its size (libjpeg's DCT scaling) until it has at
        /// most this many pixels; 0 decodes it whole. For readers that need no more (the MRZ search).
        public var scaleToPixels: Int
        /// The most CPU time a JPEG or PNG decode may take (this process's CPU clock); nil: none.
        /// Past it the decode stops as too costly.
        public var cpuBudget: Duration?

        public init(maxPixels: Int, maxBytes: Int, maxTiles: Int = 4_096, scaleToPixels: Int = 0, cpuBudget: Duration? = nil) {
            self.maxPixels = maxPixels
            self.maxBytes = maxBytes
            self.maxTiles = maxTiles
            self.scaleToPixels = scaleToPixels
            self.cpuBudget = cpuBudget
        }

        /// Chip images: an ICAO face is a few hundred pixels a side (9303-10 suggests ~420×525),
        /// so 4 megapixels and 64 MiB leave room for any real one; a JPEG 2000 image that declares
        /// more is decoded at a lower resolution level.
        public static let chipImages = Limits(maxPixels: 4_194_304, maxBytes: 64 << 20)

        var c: CImageCodecsLimits {
            let cpu = cpuBudget.map { UInt64(max(1, $0.components.seconds * 1_000_000 + $0.components.attoseconds / 1_000_000_000_000)) } ?? 0
            return CImageCodecsLimits(max_pixels: UInt64(max(0, maxPixels)), max_bytes: UInt64(max(0, maxBytes)),
                                      max_tiles: UInt64(max(0, maxTiles)), scale_to_pixels: UInt64(max(0, scaleToPixels)), cpu_microseconds: cpu)
        }
    }

    /// The largest image decoded by default (pixels).
    public static let maxPixels = Limits.chipImages.maxPixels

    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public let reason: String
        /// Refused for what decoding it would cost (its size past the limits, a progressive JPEG of
        /// more scans than `maxJPEGScans`), not for being damaged: `IMAGE_TOO_COSTLY` to a page.
        public var tooCostly = false
        public var description: String { reason }

        public init(reason: String, tooCostly: Bool = false) {
            self.reason = reason
            self.tooCostly = tooCostly
        }
    }

    /// The most scans a progressive JPEG may have (CImageCodecs): cameras and encoders write about
    /// ten; one refinement scan repeated 2,000 times cost 73 s of CPU before.
    public static let maxJPEGScans = 64

    /// An RGB image: `width × height × 3` bytes, rows top to bottom.
    public struct RGBImage: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public var pixels: [UInt8]

        public init(width: Int, height: Int, pixels: [UInt8]) {
            self.width = width
            self.height = height
            self.pixels = pixels
        }
    }

    /// Decodes a JP2 file or J2K codestream within `limits` (see `Limits`); blocking and CPU-bound:
    /// servers call it through `DecodeQueue`.
    public static func decodeJPEG2000(_ data: [UInt8], limits: Limits = .chipImages) throws(Failure) -> RGBImage {
        var c = limits.c
        return try decode(data, "JPEG 2000") { pointer, width, height, message in
            data.withUnsafeBufferPointer {
                CImageCodecs_decode_jpeg2000($0.baseAddress, $0.count, &c, &pointer, &width, &height, &message, message.count)
            }
        }
    }

    /// The number of colour components a JPEG's frame header (SOFn) declares: 1 grey, 3 colour,
    /// 4 CMYK or YCCK (what many document scanners write; browsers differ on showing them). Nil
    /// when no frame header comes before the first scan.
    public static func jpegComponents(_ data: [UInt8]) -> Int? {
        var index = 2
        while index + 4 <= data.count {
            guard data[index] == 0xFF else { return nil }
            let marker = data[index + 1]
            if marker == 0xFF { index += 1; continue }
            if marker == 0xDA || marker == 0xD9 { return nil }
            let length = Int(data[index + 2]) << 8 | Int(data[index + 3])
            guard length >= 2, index + 2 + length <= data.count else { return nil }
            // SOF0–SOF15 but DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker), length >= 8 { return Int(data[index + 9]) }
            index += 2 + length
        }
        return nil
    }

    /// Decodes a JPEG within `limits` and `maxJPEGScans` (libjpeg's own API; a warning — corrupt
    /// data, a premature end — is a failure).
    public static func decodeJPEG(_ data: [UInt8], limits: Limits = .chipImages) throws(Failure) -> RGBImage {
        var c = limits.c
        return try decode(data, "JPEG") { pointer, width, height, message in
            data.withUnsafeBufferPointer {
                CImageCodecs_decode_jpeg($0.baseAddress, $0.count, &c, &pointer, &width, &height, &message, message.count)
            }
        }
    }

    /// Decodes a PNG within `limits` (any colour type or depth, to 8-bit RGB; transparency over white).
    public static func decodePNG(_ data: [UInt8], limits: Limits = .chipImages) throws(Failure) -> RGBImage {
        var c = limits.c
        return try decode(data, "PNG") { pointer, width, height, message in
            data.withUnsafeBufferPointer {
                CImageCodecs_decode_png($0.baseAddress, $0.count, &c, &pointer, &width, &height, &message, message.count)
            }
        }
    }

    /// A JPEG 2000 image's size as its SIZ marker declares it (no decoding), or `nil`.
    public static func jpeg2000Size(_ data: [UInt8]) -> (width: Int, height: Int, tiles: Int, components: Int)? {
        var size = CImageCodecsJPEG2000Size()
        let rc = data.withUnsafeBufferPointer { CImageCodecs_jpeg2000_size($0.baseAddress, $0.count, &size) }
        guard rc == 0 else { return nil }
        return (Int(clamping: size.width), Int(clamping: size.height), Int(clamping: size.tiles), Int(size.components))
    }

    private static func decode(_ data: [UInt8], _ name: String,
                               _ call: (inout UnsafeMutablePointer<UInt8>?, inout Int32, inout Int32, inout [CChar]) -> Int32)
        throws(Failure) -> RGBImage
    {
        var pointer: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = call(&pointer, &width, &height, &message)
        guard rc == 0, let pointer else {
            throw Failure(reason: "\(name) decoding failed: \(text(message))", tooCostly: rc == -5 || rc == -6 || rc == -7)
        }
        defer { CImageCodecs_free(pointer) }
        return RGBImage(width: Int(width), height: Int(height),
                        pixels: Array(UnsafeBufferPointer(start: pointer, count: Int(width) * Int(height) * 3)))
    }

    public static func encodeJPEG(_ image: RGBImage, quality: Int = 90) throws(Failure) -> [UInt8] {
        try check(image)
        var pointer: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = CImageCodecs_encode_jpeg(image.pixels, Int32(image.width), Int32(image.height), Int32(max(1, min(100, quality))),
                                          &pointer, &length, &message, message.count)
        guard rc == 0, let pointer else { throw Failure(reason: "JPEG encoding failed: \(text(message))") }
        defer { CImageCodecs_free(pointer) }
        return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
    }

    public static func encodePNG(_ image: RGBImage) throws(Failure) -> [UInt8] {
        try check(image)
        var pointer: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = CImageCodecs_encode_png(image.pixels, Int32(image.width), Int32(image.height), &pointer, &length, &message, message.count)
        guard rc == 0, let pointer else { throw Failure(reason: "PNG encoding failed: \(text(message))") }
        defer { CImageCodecs_free(pointer) }
        return Array(UnsafeBufferPointer(start: pointer, count: length))
    }

    private static func check(_ image: RGBImage) throws(Failure) {
        guard image.width > 0, image.height > 0, image.pixels.count == image.width * image.height * 3 else {
            throw Failure(reason: "RGB buffer does not match \(image.width)×\(image.height)")
        }
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
