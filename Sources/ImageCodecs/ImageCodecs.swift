import CImageCodecs

/// Memory-to-memory image coding over Debian's codecs: JPEG 2000 decoding (OpenJPEG), JPEG
/// decoding and encoding (libjpeg-turbo), PNG encoding (libpng/zlib). Pixels are 8-bit RGB.
public enum ImageCodecs {
    /// The largest image decoded (pixels), so hostile headers cannot make us allocate gigabytes.
    public static let maxPixels = 16_000_000

    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

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

    public static func decodeJPEG2000(_ data: [UInt8]) throws(Failure) -> RGBImage {
        try decode(data, "JPEG 2000") { pointer, width, height, message in
            data.withUnsafeBufferPointer {
                CImageCodecs_decode_jpeg2000($0.baseAddress, $0.count, Int32(maxPixels), &pointer, &width, &height, &message, message.count)
            }
        }
    }

    public static func decodeJPEG(_ data: [UInt8]) throws(Failure) -> RGBImage {
        try decode(data, "JPEG") { pointer, width, height, message in
            data.withUnsafeBufferPointer {
                CImageCodecs_decode_jpeg($0.baseAddress, $0.count, &pointer, &width, &height, &message, message.count)
            }
        }
    }

    private static func decode(_ data: [UInt8], _ name: String,
                               _ call: (inout UnsafeMutablePointer<UInt8>?, inout Int32, inout Int32, inout [CChar]) -> Int32)
        throws(Failure) -> RGBImage
    {
        var pointer: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = call(&pointer, &width, &height, &message)
        guard rc == 0, let pointer else { throw Failure(reason: "\(name) decoding failed: \(text(message))") }
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
