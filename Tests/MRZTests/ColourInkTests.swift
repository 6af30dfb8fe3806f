import ImageCodecs
import MRZSynthesis
import TestSupport
import Testing
@testable import MRZ

/// A photo's colour inks over the zone (a SPECIMEN stamp, a UV capture's glow) read in the
/// lightest channel: the zone's black ink is dark in every channel, the stamp's red is not.
@Suite("MRZ reader: colour inks over the zone")
struct ColourInkTests {
    @Test("the lightest channel: black stays dark, a red stamp, a blue guilloche and white go pale")
    func lightestChannel() {
        let image = ImageCodecs.RGBImage(width: 4, height: 1, pixels: [10, 12, 8, 200, 30, 40, 180, 200, 240, 255, 255, 255])
        #expect(GrayImage(lightestChannelOf: image).pixels == [12, 200, 240, 255])
        // Luma keeps the stamp's red as dark as the ink's neighbourhood: 98 of 255.
        #expect(GrayImage(image).pixels[1] < 100)
    }

    /// A scanned page with a red stamp's strokes, half seen through, across its key line.
    static func stamped(_ format: MRZFormat, seed: UInt64) throws -> (MRZSample, ImageCodecs.RGBImage) {
        let photographer = try #require(MRZRecognizerTests.photographer, "the OCR-B and DejaVu fonts are needed")
        var generator = SeededGenerator(state: seed)
        let sample = MRZSample(format: format, generator: &generator)
        let shot = photographer.shoot(sample, .scan, generator: &generator)
        var frame = shot.frame
        let line = shot.cellCentres[format == .td1 ? 0 : 1]
        let pitch = (line[line.count - 1].x - line[0].x) / Float(line.count - 1)
        let thickness = max(2, Int(shot.capHeight * 0.28))
        // Capital strokes a stamp's letters are made of: slanted bars two cap heights tall, every
        // three pitches, over the whole line.
        for (index, centre) in line.enumerated() where index % 3 == 1 {
            for step in 0..<Int(shot.capHeight * 2.4) {
                let y = Int(centre.y - shot.capHeight * 1.2) + step
                let x0 = Int(centre.x - pitch) + step / 3
                for x in x0..<(x0 + thickness) where x >= 0 && x < frame.width && y >= 0 && y < frame.height {
                    let at = (y * frame.width + x) * 3
                    for (channel, ink) in [210, 35, 45].enumerated() {
                        frame.pixels[at + channel] = UInt8((Int(frame.pixels[at + channel]) * 35 + ink * 65) / 100)
                    }
                }
            }
        }
        return (sample, frame)
    }

    /// Read in luma, the stamped TD3 and TD2 give no candidate at all (2026-12-04): the strokes
    /// stay ink, blobs among the zone's characters.
    @Test("a red stamp's strokes across the key line: the photo's reading gives the printed key, and nothing wrong",
          arguments: [MRZFormat.td3, .td1, .td2])
    func stampOverTheKeyLine(format: MRZFormat) async throws {
        let recognizer = try #require(MRZRecognizerTests.recognizer)
        let (sample, frame) = try Self.stamped(format, seed: 5_150 + UInt64(format.lineLength))
        let (photo, luma) = try await MRZRecognizerTests.offPool { (recognizer.read(photo: frame), recognizer.read(frame)) }
        let printed = [sample.documentNumber.replacingOccurrences(of: "<", with: ""), sample.dateOfBirth, sample.dateOfExpiry]
        #expect(photo.candidates.first?.key == printed, "photo: \(photo.candidates.map(\.key)) for \(printed); luma: \(luma.candidates.map(\.key))")
        for result in [photo, luma] {
            if let reading = result.reading, reading.accessKeyValid { #expect(reading.key == printed) }
            if let reading = result.reading, reading.valid { #expect(reading.lines == sample.lines) }
        }
    }
}
