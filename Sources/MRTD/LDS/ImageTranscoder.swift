import ImageCodecs

/// Turns chip images into something every browser shows: JPEG 2000 (most EU passports' faces)
/// is decoded with OpenJPEG and re-encoded as JPEG with libjpeg-turbo; JPEG passes through.
public enum ImageTranscoder {
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
            do {
                let decoded = try ImageCodecs.decodeJPEG2000(image)
                return Output(jpeg: try ImageCodecs.encodeJPEG(decoded, quality: quality), width: decoded.width,
                              height: decoded.height, sourceFormat: .jpeg2000)
            } catch {
                throw MRTDError(.malformedData, error.reason)
            }
        default:
            throw MRTDError(.notSupported, "\(info.format.mimeType) images cannot be converted for a browser")
        }
    }
}
