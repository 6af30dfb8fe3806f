import MRTD
import ImageCodecs

/// Turns chip images into something every browser shows: JPEG 2000 (most EU passports' faces)
/// is decoded with OpenJPEG and re-encoded as JPEG with libjpeg-turbo, so is a CMYK or YCCK JPEG;
/// other JPEGs pass through.
public enum ImageTranscoder {
    public struct Output: Sendable, Hashable {
        public var jpeg: [UInt8]
        public var width: Int
        public var height: Int
        /// The format the chip stored.
        public var sourceFormat: ImageInfo.Format
    }

    /// A browser-displayable JPEG of `image` (JPEG or JPEG 2000), decoded here within `limits`
    /// (blocking). A JPEG 2000 image larger than the limits is decoded at a lower resolution.
    public static func browserJPEG(_ image: [UInt8], quality: Int = 90, limits: ImageCodecs.Limits = .chipImages) throws(MRTDError) -> Output {
        guard let info = ImageInfo.inspect(image) else {
            throw MRTDError(.malformedData, "the image is neither JPEG nor JPEG 2000, or its header is damaged")
        }
        switch info.format {
        case .jpeg where ImageCodecs.jpegComponents(image) == 4:
            // CMYK or YCCK (a scanner's): browsers disagree on showing them; decoded to RGB here.
            do {
                let decoded = try ImageCodecs.decodeJPEG(image, limits: limits)
                return Output(jpeg: try ImageCodecs.encodeJPEG(decoded, quality: quality), width: decoded.width,
                              height: decoded.height, sourceFormat: .jpeg)
            } catch {
                throw MRTDError(.malformedData, error.reason)
            }
        case .jpeg:
            return Output(jpeg: image, width: info.width, height: info.height, sourceFormat: .jpeg)
        case .jpeg2000:
            do {
                let decoded = try ImageCodecs.decodeJPEG2000(image, limits: limits)
                return Output(jpeg: try ImageCodecs.encodeJPEG(decoded, quality: quality), width: decoded.width,
                              height: decoded.height, sourceFormat: .jpeg2000)
            } catch {
                throw MRTDError(.malformedData, error.reason)
            }
        default:
            throw MRTDError(.notSupported, "\(info.format.mimeType) images cannot be converted for a browser")
        }
    }

    /// The same, with JPEG 2000 decoding run on `queue` (JPEG passes through without decoding).
    public static func browserJPEG(_ image: [UInt8], quality: Int = 90, limits: ImageCodecs.Limits = .chipImages,
                                   on queue: DecodeQueue) async throws(MRTDError) -> Output {
        guard ImageInfo.inspect(image)?.format == .jpeg2000 || ImageCodecs.jpegComponents(image) == 4 else {
            return try browserJPEG(image, quality: quality, limits: limits)
        }
        do {
            return try await queue.run { try browserJPEG(image, quality: quality, limits: limits) }
        } catch let error as MRTDError {
            throw error
        } catch {
            throw MRTDError(.malformedData, "the image could not be decoded")
        }
    }
}
