import ChildProcesses
import Foundation
import ImageCodecs
import Testing
@testable import Cameras

/// MJPEG frames as USB (UVC) cameras send them: baseline JPEG, 4:2:2, and no Huffman tables (the
/// decoder must use the standard ones, ITU-T T.81 Annex K), made here with libjpeg-turbo's own
/// cjpeg (Debian's libjpeg-turbo-progs) and the DHT segments taken out; then cut short, as a
/// camera unplugged mid-frame sends them.
@Suite("MJPEG camera frames through libjpeg-turbo")
struct MJPEGTests {
    /// The 75 % bars as a binary PPM, 8 bars of `barWidth`.
    static func barsPPM(barWidth: Int = 32, height: Int = 48) -> [UInt8] {
        let bars = FrameConversionTests.barsRGB
        var pixels: [UInt8] = []
        for _ in 0..<height {
            for bar in bars { for _ in 0..<barWidth { pixels += [UInt8(bar.0), UInt8(bar.1), UInt8(bar.2)] } }
        }
        return Array("P6\n\(bars.count * barWidth) \(height)\n255\n".utf8) + pixels
    }

    /// A baseline JPEG from cjpeg (standard Huffman tables: no -optimize), 4:2:2 like UVC cameras.
    static func cjpeg(_ ppm: [UInt8]) async throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mjpeg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("bars.ppm"), output = directory.appendingPathComponent("bars.jpg")
        try Data(ppm).write(to: input)
        let cjpeg = ["/usr/bin/cjpeg", "/bin/cjpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(cjpeg, "cjpeg is not installed (Debian's libjpeg-turbo-progs; scripts/install-deps.sh installs it)")
        let outcome = try await ChildProcess.run(path, arguments: ["-quality", "90", "-sample", "2x1", "-baseline", "-outfile", output.path, input.path],
                                                 timeLimit: .seconds(30))
        try #require(outcome.status == 0, "cjpeg failed: \(String(decoding: outcome.error, as: UTF8.self))")
        return [UInt8](try Data(contentsOf: output))
    }

    /// The JPEG without its DHT segments: what a UVC camera's MJPEG stream carries.
    static func withoutHuffmanTables(_ jpeg: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        var index = 2
        while index + 4 <= jpeg.count, jpeg[index] == 0xFF {
            let marker = jpeg[index + 1]
            if marker == 0xDA { out += jpeg[index...]; return out }  // the scan and everything after
            let length = Int(jpeg[index + 2]) << 8 | Int(jpeg[index + 3])
            if marker != 0xC4 { out += jpeg[index..<(index + 2 + length)] }
            index += 2 + length
        }
        return out
    }

    @Test("a camera's MJPEG frame without Huffman tables decodes with the standard ones, bars intact")
    func uvcFrameDecodes() async throws {
        let jpeg = try await Self.cjpeg(Self.barsPPM())
        let frame = Self.withoutHuffmanTables(jpeg)
        // 0xFF is always stuffed with 0x00 inside the scan, so FF C4 can only be a DHT marker.
        #expect(jpeg.contains(subsequence: [0xFF, 0xC4]), "cjpeg wrote Huffman tables")
        #expect(!frame.contains(subsequence: [0xFF, 0xC4]), "the DHT segments were taken out")
        let image = try FrameConversion.rgb(frame, format: .mjpeg, width: 256, height: 48, bytesPerLine: 0)
        #expect(image.width == 256 && image.height == 48)
        FrameConversionTests.assertBars(image, FrameConversionTests.barsRGB, barWidth: 32, tolerance: 12, "MJPEG")
    }

    @Test("a frame cut short (the camera pulled mid-frame) or garbage is a corrupt frame, never a crash")
    func truncatedFrames() async throws {
        let frame = Self.withoutHuffmanTables(try await Self.cjpeg(Self.barsPPM()))
        for cut in [0, 2, 20, frame.count / 3, frame.count / 2, frame.count - 40, frame.count - 2] {
            #expect(throws: FrameConversion.Problem.self, "cut at \(cut) of \(frame.count)") {
                _ = try FrameConversion.rgb(Array(frame.prefix(cut)), format: .mjpeg, width: 256, height: 48, bytesPerLine: 0)
            }
        }
        let garbage = [UInt8](repeating: 0x5A, count: 8_192)
        #expect(throws: FrameConversion.Problem.self) { _ = try FrameConversion.rgb(garbage, format: .mjpeg, width: 256, height: 48, bytesPerLine: 0) }
        do {
            _ = try FrameConversion.rgb(Array(frame.prefix(frame.count / 2)), format: .mjpeg, width: 256, height: 48, bytesPerLine: 0)
        } catch {
            #expect(error.description.contains("corrupt MJPEG frame"))
        }
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<($0 + subsequence.count)]) == subsequence }
    }
}
