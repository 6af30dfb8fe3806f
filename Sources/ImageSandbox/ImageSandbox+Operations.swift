#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ImageCodecs
import MRZ

extension ImageSandbox {
    /// A chip image made fit for a browser, decoded in the child: `jpeg` the bytes to show (the
    /// chip's own JPEG when it decoded cleanly, else the child's re-encoding of a JPEG 2000 or CMYK
    /// image), its size, and what the chip stored.
    public struct BrowserImage: Sendable {
        public var jpeg: [UInt8]
        public var width: Int
        public var height: Int
        /// `jpeg` or `jpeg2000`: what the chip stored.
        public var sourceFormat: String
    }

    struct BrowserHeader: Decodable {
        var width: Int
        var height: Int
        var format: String
        var passThrough: Bool
    }

    static func arguments(_ limits: ImageCodecs.Limits, quality: Int) -> [String] {
        ["browser-jpeg", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles", String(limits.maxTiles),
         "--quality", String(quality)]
    }

    static func browserImage(_ image: [UInt8], _ answer: Answer) throws(Failure) -> BrowserImage {
        let header = try decodeHeader(BrowserHeader.self, answer)
        guard header.width > 0, header.height > 0, header.passThrough || !answer.payload.isEmpty else {
            throw Failure(.decoderFailed, "the image decoder's answer is not in its form: nothing of it is used")
        }
        return BrowserImage(jpeg: header.passThrough ? image : answer.payload, width: header.width, height: header.height,
                            sourceFormat: header.format)
    }

    /// `image` (JPEG or JPEG 2000) as a JPEG every browser shows, decoded in the child within
    /// `limits` and `budget`, waiting on this thread.
    public static func browserJPEG(_ image: [UInt8], limits: ImageCodecs.Limits = .chipImages, quality: Int = 90,
                                   budget: Budget = .chipImage) throws(Failure) -> BrowserImage {
        try browserImage(image, try runBlocking(arguments(limits, quality: quality), input: image, budget: budget))
    }

    /// The same, waiting without holding a thread of the cooperative pool.
    public static func browserJPEG(_ image: [UInt8], limits: ImageCodecs.Limits = .chipImages, quality: Int = 90,
                                   budget: Budget = .chipImage) async throws(Failure) -> BrowserImage {
        try browserImage(image, try await run(arguments(limits, quality: quality), input: image, budget: budget))
    }

    /// What the child read of a photo's MRZ.
    public struct MRZAnswer: Sendable, Decodable {
        public var found: Bool
        public var refusal: MRZRecognizer.Refusal?
        public var reading: MRZReading?
        public var width: Int
        public var height: Int
    }

    /// A photo or a scan (PNG or JPEG file bytes) decoded in the child and its MRZ read there,
    /// within `searchBudget` (the MRZ search) and `budget` (the child), waiting on this thread.
    public static func readMRZ(_ file: [UInt8], limits: ImageCodecs.Limits, searchBudget: Duration,
                               budget: Budget = .photo) throws(Failure) -> MRZAnswer {
        let milliseconds = searchBudget.components.seconds * 1000 + searchBudget.components.attoseconds / 1_000_000_000_000_000
        let arguments = ["mrz", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles",
                         String(limits.maxTiles), "--budget-ms", String(milliseconds)]
        return try decodeHeader(MRZAnswer.self, try runBlocking(arguments, input: file, budget: budget))
    }
}
