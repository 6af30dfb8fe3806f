import MRTD
import ImageCodecs
import ImageSandbox

/// Turns chip images into something every browser shows, decoded in the confined child
/// (`ImageSandbox`, issue 43): JPEG 2000 (most EU passports' faces) and CMYK/YCCK JPEGs are
/// decoded there and re-encoded as JPEG; any other JPEG is decoded there too — within the same
/// pixel, memory and scan bounds — and then passed on as the chip stored it, so no page (nor the
/// kiosk's Chromium) is handed a decode bomb. Nothing of a chip's image is decoded in this process.
public enum ImageTranscoder {
    public struct Output: Sendable, Hashable {
        public var jpeg: [UInt8]
        public var width: Int
        public var height: Int
        /// The format the chip stored.
        public var sourceFormat: ImageInfo.Format
    }

    /// A browser-displayable JPEG of `image` (JPEG or JPEG 2000), decoded in the child within
    /// `limits` (blocking: a command-line tool's way). A JPEG 2000 image larger than the limits is
    /// decoded at a lower resolution. Failures carry the sandbox's stable code first in their reason
    /// (`IMAGE_INVALID: …`, `IMAGE_TOO_COSTLY: …`, `DECODER_FAILED: …`).
    public static func browserJPEG(_ image: [UInt8], quality: Int = 90, limits: ImageCodecs.Limits = .chipImages) throws(MRTDError) -> Output {
        try check(image)
        do {
            return output(try ImageSandbox.browserJPEG(image, limits: limits, quality: quality))
        } catch {
            throw problem(error)
        }
    }

    /// The same, the child waited for without holding a thread of the cooperative pool. (`queue`
    /// is no longer where decoding happens — the child is — but still bounds how many images are
    /// decoded at once.)
    public static func browserJPEG(_ image: [UInt8], quality: Int = 90, limits: ImageCodecs.Limits = .chipImages,
                                   on queue: DecodeQueue) async throws(MRTDError) -> Output {
        try check(image)
        do {
            return try await queue.run { () throws -> Output in
                output(try ImageSandbox.browserJPEG(image, limits: limits, quality: quality))
            }
        } catch let error as ImageSandbox.Failure {
            throw problem(error)
        } catch {
            throw MRTDError(.malformedData, "\(ImageSandbox.Failure.Code.decoderFailed.rawValue): the image could not be decoded")
        }
    }

    /// Only what looks like a JPEG or JPEG 2000 (by its header) is handed to the decoder.
    static func check(_ image: [UInt8]) throws(MRTDError) {
        guard let info = ImageInfo.inspect(image) else {
            throw MRTDError(.malformedData, "\(ImageSandbox.Failure.Code.imageInvalid.rawValue): the image is neither JPEG nor JPEG 2000, or its header is damaged")
        }
        guard info.format == .jpeg || info.format == .jpeg2000 else {
            throw MRTDError(.notSupported, "\(info.format.mimeType) images cannot be converted for a browser")
        }
    }

    static func output(_ image: ImageSandbox.BrowserImage) -> Output {
        Output(jpeg: image.jpeg, width: image.width, height: image.height, sourceFormat: image.sourceFormat == "jpeg2000" ? .jpeg2000 : .jpeg)
    }

    static func problem(_ error: ImageSandbox.Failure) -> MRTDError {
        MRTDError(.malformedData, "\(error.code.rawValue): \(error.reason)")
    }
}
