import CImageCodecs

/// Turns chip images into something every browser shows: JPEG 2000 (most EU passports' faces)
/// is decoded with OpenJPEG and re-encoded as JPEG with libjpeg-turbo; JPEG passes through.
public enum ImageTranscoder {
    /// The largest image accepted (pixels), so a hostile chip cannot make us allocate gigabytes.
    public static let maxPixels = 16_000_000

    public struct Output: Sendable, Hashable {
        public var jpeg: [UInt8]
        public var width: Int
        public var height: Int
        /// The format the chip stored.
        public var sourceFormat: ImageInfo.Format
    }

    /// A browser-displayable JPEG of `image` (JPEG or JPEG 2000).
    public static func browserJPEG(_ image: [UInt8], quality: Int = 90) throws(MRTDError) -> Output {
        guard let info = ImageInfo.inspect(image) else {
            throw MRTDError(.malformedData, "the image is neither JPEG nor JPEG 2000, or its header is damaged")
        }
        switch info.format {
        case .jpeg:
            return Output(jpeg: image, width: info.width, height: info.height, sourceFormat: .jpeg)
        case .jpeg2000:
            let (rgb, width, height) = try decodeJPEG2000(image)
            return Output(jpeg: try encodeJPEG(rgb: rgb, width: width, height: height, quality: quality),
                          width: width, height: height, sourceFormat: .jpeg2000)
        default:
            throw MRTDError(.notSupported, "\(info.format.mimeType) images cannot be converted for a browser")
        }
    }

    /// Decodes JPEG 2000 to 8-bit RGB.
    public static func decodeJPEG2000(_ data: [UInt8]) throws(MRTDError) -> (rgb: [UInt8], width: Int, height: Int) {
        var pointer: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = data.withUnsafeBufferPointer {
            CImageCodecs_decode_jpeg2000($0.baseAddress, $0.count, Int32(maxPixels), &pointer, &width, &height, &message, message.count)
        }
        guard rc == 0, let pointer else { throw MRTDError(.malformedData, "JPEG 2000 decoding failed: \(text(message))") }
        defer { CImageCodecs_free(pointer) }
        return (Array(UnsafeBufferPointer(start: pointer, count: Int(width) * Int(height) * 3)), Int(width), Int(height))
    }

    /// Decodes a JPEG to 8-bit RGB.
    public static func decodeJPEG(_ data: [UInt8]) throws(MRTDError) -> (rgb: [UInt8], width: Int, height: Int) {
        var pointer: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = data.withUnsafeBufferPointer {
            CImageCodecs_decode_jpeg($0.baseAddress, $0.count, &pointer, &width, &height, &message, message.count)
        }
        guard rc == 0, let pointer else { throw MRTDError(.malformedData, "JPEG decoding failed: \(text(message))") }
        defer { CImageCodecs_free(pointer) }
        return (Array(UnsafeBufferPointer(start: pointer, count: Int(width) * Int(height) * 3)), Int(width), Int(height))
    }

    /// Encodes 8-bit RGB as JPEG.
    public static func encodeJPEG(rgb: [UInt8], width: Int, height: Int, quality: Int = 90) throws(MRTDError) -> [UInt8] {
        guard width > 0, height > 0, rgb.count == width * height * 3 else {
            throw MRTDError(.malformedData, "RGB buffer does not match \(width)×\(height)")
        }
        var pointer: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = CImageCodecs_encode_jpeg(rgb, Int32(width), Int32(height), Int32(max(1, min(100, quality))), &pointer,
                                          &length, &message, message.count)
        guard rc == 0, let pointer else { throw MRTDError(.malformedData, "JPEG encoding failed: \(text(message))") }
        defer { CImageCodecs_free(pointer) }
        return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
