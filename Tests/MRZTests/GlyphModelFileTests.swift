import Foundation
import MRTDCrypto
@testable import MRZ
import Testing

/// The glyph classifier's weights are a binary file the trainer wrote (issue 50): the build embeds
/// exactly that file, and a damaged or foreign file is refused with its reason, never half-read.
@Suite struct GlyphModelFileTests {
    static let resources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/MRZ/Resources")

    /// Each embedded model file: the first reader's and the second opinion's.
    static let embedded: [(name: String, bytes: [UInt8])] = [("glyph-model", GlyphClassifier.standardFile),
                                                             ("glyph-model-small", GlyphClassifier.secondOpinionFile)]

    @Test("each embedded model is the file the trainer wrote", arguments: 0..<2)
    func theEmbeddedModelIsTheFileTheTrainerWrote(_ index: Int) throws {
        let (name, bytes) = Self.embedded[index]
        let record = try String(contentsOf: Self.resources.appendingPathComponent("\(name).sha256"), encoding: .utf8)
        let fields = record.split(whereSeparator: \.isWhitespace)
        #expect(fields.count == 2 && fields.last.map(String.init) == "\(name).bin", "\(name).sha256 is not `sha256sum` output for \(name).bin")
        let written = try #require(fields.first).lowercased()
        let embedded = DigestAlgorithm.sha256.hash(bytes).map { String(format: "%02x", $0) }.joined()
        #expect(embedded == written, "the embedded \(name).bin is not the file the trainer recorded (retrain, or restore both files)")
        let onDisk = try Data(contentsOf: Self.resources.appendingPathComponent("\(name).bin"))
        #expect(Array(onDisk) == bytes)
    }

    @Test func theSecondOpinionLoadsAndIsAnotherModel() throws {
        #expect(GlyphClassifier.secondOpinionLoadError == nil)
        let second = try #require(GlyphClassifier.secondOpinion)
        let first = try #require(GlyphClassifier.standard)
        #expect(second.inputs == first.inputs && second.outputs == first.outputs)
        #expect(second.weights != first.weights, "the second opinion is the first model again")
    }

    @Test func theEmbeddedModelLoads() throws {
        #expect(GlyphClassifier.standardLoadError == nil)
        let model = try #require(GlyphClassifier.standard)
        #expect(model.inputs == CellSampler.size)
        #expect(model.outputs == MRZGlyph.count + 1)
        #expect(model.weights.count == GlyphClassifier.parameterCount(inputs: model.inputs, hidden: model.hidden, outputs: model.outputs))
        #expect(model.temperature > 0.2 && model.temperature < 5)
    }

    @Test func aModelSurvivesItsFile() throws {
        let weights = (0..<GlyphClassifier.parameterCount(inputs: CellSampler.size, hidden: 3, outputs: 38)).map { Float($0 % 17) / 16 - 0.5 }
        let model = GlyphClassifier(hidden: 3, outputs: 38, weights: weights, temperature: 0.75)
        let again = try GlyphModelFile.classifier(from: GlyphModelFile.bytes(of: model))
        #expect(again.hidden == 3 && again.outputs == 38 && again.temperature == 0.75 && again.weights == weights)
    }

    @Test func damagedFilesAreRefusedWithTheirReason() throws {
        let model = try #require(GlyphClassifier.standard)
        let good = GlyphModelFile.bytes(of: model)
        #expect(good == GlyphClassifier.standardFile)
        func refusal(_ bytes: [UInt8]) -> GlyphModelFileError? {
            do { _ = try GlyphModelFile.classifier(from: bytes); return nil } catch { return error }
        }
        #expect(refusal([]) == .truncated(0))
        #expect(refusal(Array(good.prefix(27))) == .truncated(27))
        var other = good; other[0] = UInt8(ascii: "X")
        #expect(refusal(other) == .notAModelFile)
        var version = good; version[8] = 2
        #expect(refusal(version) == .unknownVersion(2))
        var inputs = good; inputs[12] = 0x41
        #expect(refusal(inputs) == .wrongInputs(0x41 | Int(good[13]) << 8, expected: CellSampler.size))
        var outputs = good; outputs[20] = 12
        #expect(refusal(outputs) == .wrongOutputs(12))
        var huge = good; huge[16] = 0xFF; huge[17] = 0xFF; huge[18] = 0xFF; huge[19] = 0x7F
        #expect(refusal(huge) == .tooLarge(hidden: 0x7FFF_FFFF))
        var temperature = good; temperature.replaceSubrange(24..<28, with: [0, 0, 0xC0, 0x7F])  // NaN
        #expect(refusal(temperature) == .badTemperature)
        #expect(refusal(Array(good.dropLast(4))) == .wrongLength(good.count - 4, expected: good.count))
        #expect(refusal(good + [0]) == .wrongLength(good.count + 1, expected: good.count))
        var infinite = good; infinite.replaceSubrange(28 + 4 * 5..<28 + 4 * 6, with: [0, 0, 0x80, 0x7F])
        #expect(refusal(infinite) == .notFinite(index: 5))
    }
}
