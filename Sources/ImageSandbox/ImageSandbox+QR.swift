#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ImageCodecs

extension ImageSandbox {
    /// What the child found of a picture's QR codes: their lengths (their bytes are the payload).
    struct QRHeader: Decodable {
        var width: Int
        var height: Int
        var lengths: [Int]
    }

    /// A picture of QR codes: the most it may be (a phone's photo of another phone's screen is
    /// a few megapixels; decoded at up to 16 megapixels, which leaves a version-40 code's modules
    /// several pixels wide).
    public static let qrPictureLimits = ImageCodecs.Limits(maxPixels: 60 << 20, maxBytes: 768 << 20, scaleToPixels: 16 << 20)

    /// The QR codes in a picture (PNG or JPEG file bytes), found by ZBar in the confined child:
    /// each code's bytes, at most 8 of at most 2,953 bytes (a QR code holds no more), in the order
    /// ZBar found them; empty when the picture holds none. Waits without holding a thread of the
    /// cooperative pool.
    public static func qrCodes(_ file: [UInt8], limits: ImageCodecs.Limits = qrPictureLimits, budget: Budget = .photo) async throws(Failure) -> [[UInt8]] {
        let arguments = ["qr", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles", String(limits.maxTiles),
                         "--scale-to-pixels", String(limits.scaleToPixels)]
        return try qrCodes(try await run(arguments, input: file, budget: budget), limits: limits)
    }

    /// The QR codes in a camera frame's grey levels (`width` × `height` bytes, rows without
    /// padding), found by ZBar in the confined child, as `qrCodes(_:)` answers them.
    public static func qrCodes(gray: [UInt8], width: Int, height: Int, budget: Budget = .photo) async throws(Failure) -> [[UInt8]] {
        let limits = qrPictureLimits
        guard width > 0, height > 0, width * height <= limits.maxPixels, gray.count == width * height else {
            throw Failure(.imageInvalid, "grey levels of \(gray.count) bytes are not a \(width) × \(height) frame")
        }
        let arguments = ["qr", "--max-pixels", String(limits.maxPixels), "--max-bytes", String(limits.maxBytes), "--max-tiles", String(limits.maxTiles),
                         "--gray-width", String(width), "--gray-height", String(height)]
        return try qrCodes(try await run(arguments, input: gray, budget: budget), limits: limits)
    }

    /// The child's answer, believed only when a scanner could have said it (issue 49): a size
    /// within the limits, at most 8 codes of 1 to 2,953 bytes, lengths that add up to the payload.
    static func qrCodes(_ answer: Answer, limits: ImageCodecs.Limits) throws(Failure) -> [[UInt8]] {
        let header = try decodeHeader(QRHeader.self, answer)
        guard header.width > 0, header.height > 0, header.width * header.height <= limits.maxPixels else { throw forged("a size past the limits it was given") }
        guard header.lengths.count <= 8, header.lengths.allSatisfy({ (1...2_953).contains($0) }),
              header.lengths.reduce(0, +) == answer.payload.count else { throw forged("QR codes that are not 1 to 8 of 1 to 2,953 bytes") }
        var codes: [[UInt8]] = []
        var start = 0
        for length in header.lengths {
            codes.append(Array(answer.payload[start..<start + length]))
            start += length
        }
        return codes
    }
}
