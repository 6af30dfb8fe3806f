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

    static func arguments(_ limits: ImageCodecs.Limits, quality: Int, reencode: Bool = false) -> [String] {
        ["browser-jpeg", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles", String(limits.maxTiles),
         "--quality", String(quality)] + (reencode ? ["--reencode"] : [])
    }

    /// The child's answer, checked against what it was asked (issue 49): a size within the limits
    /// it was given, a format it was given, and bytes that are a JPEG (SOI … EOI) when it sent any.
    static func browserImage(_ image: [UInt8], _ answer: Answer, limits: ImageCodecs.Limits) throws(Failure) -> BrowserImage {
        let header = try decodeHeader(BrowserHeader.self, answer)
        guard header.width > 0, header.height > 0, header.width <= 65_535, header.height <= 65_535,
              header.width * header.height <= limits.maxPixels else { throw forged("a size past the limits it was given") }
        guard ["jpeg", "jpeg2000"].contains(header.format) else { throw forged("a format it was not given") }
        if header.passThrough {
            guard header.format == "jpeg", answer.payload.isEmpty, image.starts(with: [0xFF, 0xD8]) else { throw forged("a pass-through of what is not a JPEG") }
        } else {
            guard answer.payload.count >= 4, answer.payload.starts(with: [0xFF, 0xD8, 0xFF]), answer.payload.suffix(2) == [0xFF, 0xD9] else {
                throw forged("image bytes that are not a JPEG")
            }
        }
        return BrowserImage(jpeg: header.passThrough ? image : answer.payload, width: header.width, height: header.height,
                            sourceFormat: header.format)
    }

    /// `image` (JPEG or JPEG 2000) as a JPEG every browser shows, decoded in the child within
    /// `limits` and `budget`, waiting on this thread.
    public static func browserJPEG(_ image: [UInt8], limits: ImageCodecs.Limits = .chipImages, quality: Int = 90,
                                   budget: Budget = .chipImage) throws(Failure) -> BrowserImage {
        try browserImage(image, try runBlocking(arguments(limits, quality: quality), input: image, budget: budget), limits: limits)
    }

    /// The same, waiting without holding a thread of the cooperative pool.
    public static func browserJPEG(_ image: [UInt8], limits: ImageCodecs.Limits = .chipImages, quality: Int = 90,
                                   budget: Budget = .chipImage) async throws(Failure) -> BrowserImage {
        try browserImage(image, try await run(arguments(limits, quality: quality), input: image, budget: budget), limits: limits)
    }

    /// `image` decoded in the child and encoded anew as a JPEG, whatever it was (an mdoc portrait:
    /// none of the holder's bytes are passed on).
    public static func reencodedJPEG(_ image: [UInt8], limits: ImageCodecs.Limits = .chipImages, quality: Int = 90,
                                     budget: Budget = .chipImage) async throws(Failure) -> BrowserImage {
        let answer = try await run(arguments(limits, quality: quality, reencode: true), input: image, budget: budget)
        let result = try browserImage(image, answer, limits: limits)
        guard !answer.payload.isEmpty else { throw forged("a pass-through where a new encoding was asked for") }
        return result
    }

    /// What the child found of an image a page is given as it is.
    struct CheckHeader: Decodable {
        var width: Int
        var height: Int
        var format: String
    }

    /// Decodes `image` (JPEG, JPEG 2000 or PNG) in the child within `limits`, for images a page is
    /// handed as they are (DG3/DG4's fingerprints and irises): its size, or why it is not shown.
    public static func check(_ image: [UInt8], limits: ImageCodecs.Limits = .chipImages, budget: Budget = .chipImage) async throws(Failure)
        -> (width: Int, height: Int) {
        let arguments = ["check", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles", String(limits.maxTiles)]
        let header = try decodeHeader(CheckHeader.self, try await run(arguments, input: image, budget: budget))
        guard header.width > 0, header.height > 0, header.width * header.height <= limits.maxPixels else { throw forged("a size past the limits it was given") }
        return (header.width, header.height)
    }

    /// The same, waiting on this thread.
    public static func checkBlocking(_ image: [UInt8], limits: ImageCodecs.Limits = .chipImages, budget: Budget = .chipImage) throws(Failure)
        -> (width: Int, height: Int) {
        let arguments = ["check", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles", String(limits.maxTiles)]
        let header = try decodeHeader(CheckHeader.self, try runBlocking(arguments, input: image, budget: budget))
        guard header.width > 0, header.height > 0, header.width * header.height <= limits.maxPixels else { throw forged("a size past the limits it was given") }
        return (header.width, header.height)
    }

    /// What the child read of a photo's MRZ.
    public struct MRZAnswer: Sendable, Decodable {
        public var found: Bool
        public var refusal: MRZRecognizer.Refusal?
        public var reading: MRZReading?
        public var width: Int
        public var height: Int
        /// Access keys for the chip to confirm, best first (issue 50).
        public var candidates: [MRZKeyCandidate]?
    }

    /// A photo or a scan (PNG or JPEG file bytes) decoded in the child and its MRZ read there,
    /// within `searchBudget` (the MRZ search) and `budget` (the child), waiting on this thread.
    public static func readMRZ(_ file: [UInt8], limits: ImageCodecs.Limits, searchBudget: Duration,
                               budget: Budget = .photo) throws(Failure) -> MRZAnswer {
        let milliseconds = searchBudget.components.seconds * 1000 + searchBudget.components.attoseconds / 1_000_000_000_000_000
        let arguments = ["mrz", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles",
                         String(limits.maxTiles), "--budget-ms", String(milliseconds), "--scale-to-pixels", String(limits.scaleToPixels)]
        let answer = try decodeHeader(MRZAnswer.self, try runBlocking(arguments, input: file, budget: budget))
        try check(answer, limits: limits)
        return answer
    }

    /// An MRZ answer believed only when it is what a reader could have said: a size within the
    /// limits, lines of the MRZ alphabet, fields of printable text (issue 49).
    static func check(_ answer: MRZAnswer, limits: ImageCodecs.Limits) throws(Failure) {
        guard answer.width > 0, answer.height > 0, answer.width * answer.height <= limits.maxPixels else { throw forged("a size past the limits it was given") }
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<".unicodeScalars)
        let candidates = answer.candidates ?? []
        guard candidates.count <= MRZKeyCandidate.maximum, candidates.allSatisfy({ candidate in
            candidate.key.allSatisfy { $0.unicodeScalars.count <= 30 && !$0.isEmpty && $0.unicodeScalars.allSatisfy(alphabet.contains) }
                && candidate.score.isFinite && (0...1).contains(candidate.score)
        }) else { throw forged("key candidates outside the MRZ alphabet") }
        guard let reading = answer.reading else { return }
        guard reading.lines.count <= 3, reading.lines.allSatisfy({ $0.unicodeScalars.count <= 44 && $0.unicodeScalars.allSatisfy(alphabet.contains) }) else {
            throw forged("MRZ lines outside the MRZ alphabet")
        }
        let fields = [reading.documentCode, reading.issuingState, reading.documentNumber, reading.dateOfBirth, reading.dateOfExpiry,
                      reading.nationality, reading.surname, reading.givenNames, reading.sex, reading.optionalData]
        guard fields.allSatisfy({ $0.unicodeScalars.count <= 88 && $0.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) } }),
              reading.confidence.isFinite, (0...1).contains(reading.confidence) else {
            throw forged("fields that are not printable text")
        }
    }
}
