import ChipRead
import Foundation
import GBGBridgeNFC
import ImageCodecs
import Synchronization
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// Decompression bombs in DG2: a few hundred bytes of JPEG 2000 that declare thousands of pixels a
/// side, thousands of tiles or too many components. The header is read first; what would pass the
/// pixel or memory budget is decoded at a lower resolution level or refused, never allocated.
@Suite("Image decoding within budgets")
struct ImageBombTests {
    @Test("a small image decodes at full size")
    func smallImage() throws {
        let j2k = SyntheticJPEG2000.codestream(width: 420, height: 525, levels: 3)
        let image = try ImageCodecs.decodeJPEG2000(j2k)
        #expect(image.width == 420 && image.height == 525 && image.pixels.count == 420 * 525 * 3)
        let size = try #require(ImageCodecs.jpeg2000Size(j2k))
        #expect(size.width == 420 && size.height == 525 && size.tiles == 1 && size.components == 3)
    }

    @Test("a 1 KB codestream declaring 4000×4000 is decoded at a resolution that fits the budget")
    func bombIsReduced() throws {
        let bomb = SyntheticJPEG2000.codestream(width: 4000, height: 4000, levels: 5)
        #expect(bomb.count < 1_024)
        let image = try ImageCodecs.decodeJPEG2000(bomb)
        #expect(image.width * image.height <= ImageCodecs.Limits.chipImages.maxPixels)
        #expect(image.width == 1000 && image.height == 1000, "\(image.width)×\(image.height)")
        let face = try ImageTranscoder.browserJPEG(bomb)
        #expect(face.width == 1000 && face.sourceFormat == .jpeg2000)
    }

    @Test("refused before decoding: too few resolution levels to fit, too many tiles, too many components", arguments: [
        (SyntheticJPEG2000.codestream(width: 4000, height: 4000, levels: 0), "too large"),
        (SyntheticJPEG2000.codestream(width: 20_000, height: 20_000, levels: 2), "too large"),
        (SyntheticJPEG2000.codestream(width: 4096, height: 4096, levels: 1, tileSize: 32), "too many tiles"),
        (SyntheticJPEG2000.codestream(width: 64, height: 64, components: 5, levels: 1), "number of components"),
    ])
    func refused(bomb: [UInt8], reason: String) {
        #expect {
            _ = try ImageCodecs.decodeJPEG2000(bomb)
        } throws: { error in
            (error as? ImageCodecs.Failure)?.reason.contains(reason) == true
        }
        #expect(throws: MRTDError.self) { _ = try ImageTranscoder.browserJPEG(bomb) }
    }

    @Test("a tighter budget reduces further; a JPEG past the budget is refused from its header")
    func customLimits() throws {
        let j2k = SyntheticJPEG2000.codestream(width: 1600, height: 1600, levels: 4)
        let small = try ImageCodecs.decodeJPEG2000(j2k, limits: .init(maxPixels: 200 * 200, maxBytes: 8 << 20))
        #expect(small.width == 200 && small.height == 200)
        let jpeg = try ImageCodecs.encodeJPEG(.init(width: 640, height: 480, pixels: Array(repeating: 128, count: 640 * 480 * 3)))
        #expect(throws: ImageCodecs.Failure.self) { _ = try ImageCodecs.decodeJPEG(jpeg, limits: .init(maxPixels: 100_000, maxBytes: 64 << 20)) }
        #expect(try ImageCodecs.decodeJPEG(jpeg).width == 640)
    }

    @Test("decodes run on the queue at most its width at once, the rest wait")
    func queueBoundsConcurrency() async throws {
        let queue = DecodeQueue(width: 2)
        let bomb = SyntheticJPEG2000.codestream(width: 4000, height: 4000, levels: 5)
        final class Gauge: Sendable {
            let state = Mutex((running: 0, peak: 0))
            func enter() { state.withLock { $0.running += 1; $0.peak = max($0.peak, $0.running) } }
            func leave() { state.withLock { $0.running -= 1 } }
        }
        let gauge = Gauge()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    try await queue.run {
                        gauge.enter()
                        defer { gauge.leave() }
                        return try ImageCodecs.decodeJPEG2000(bomb).width
                    }
                }
            }
            for try await width in group { #expect(width == 1000) }
        }
        #expect(gauge.state.withLock { $0.peak } <= 2)
        #expect(queue.load.running == 0 && queue.load.waiting == 0)
    }
}
