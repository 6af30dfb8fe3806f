#if canImport(Glibc)
import Glibc
#endif

/// The 37 MRZ characters from a 16 × 20 cell: a small neural network (one hidden layer of ReLU
/// units, softmax out), trained by `gbgbridge-mrz-lab train` on OCR-B (Debian's fonts-ocr-b)
/// photographed synthetically, its weights in `Resources/glyph-model.bin` (`GlyphModelFile`). Not a general OCR: one font,
/// one pitch, one size once resampled — which is what makes it fast and sure of itself.
package struct GlyphClassifier: Sendable {
    package let inputs: Int
    package let hidden: Int
    /// 37 (the MRZ's characters), or 38: the last output is "not an OCR-B character" (another
    /// font, a smudge, two characters run together — `notOCRB`).
    package let outputs: Int
    /// hidden × inputs, then hidden biases, then outputs × hidden, then the output biases.
    package var weights: [Float]
    /// The logits are divided by this before the softmax: fitted on cells the network was not
    /// trained on, so that its probabilities say how often it is right (Docs/mrz.md, "Calibration").
    package var temperature: Float

    /// The output that says "not OCR-B", when the model has one.
    package static let notOCRB = MRZGlyph.count

    package init(inputs: Int = CellSampler.size, hidden: Int, outputs: Int = MRZGlyph.count + 1, weights: [Float], temperature: Float = 1) {
        self.inputs = inputs
        self.hidden = hidden
        self.outputs = outputs
        self.weights = weights
        self.temperature = temperature
    }

    package static func parameterCount(inputs: Int, hidden: Int, outputs: Int) -> Int { hidden * inputs + hidden + outputs * hidden + outputs }

    /// The trained model: `Resources/glyph-model.bin`, embedded in the build and read once (nil,
    /// with the reason in `standardLoadError`, when the file is not a model this build reads).
    package static var standard: GlyphClassifier? { try? standardFileRead.get() }

    /// Why `standard` is nil, when it is.
    package static var standardLoadError: GlyphModelFileError? {
        if case .failure(let error) = standardFileRead { return error }
        return nil
    }

    /// The embedded file, parsed once.
    private static let standardFileRead = Result { () throws(GlyphModelFileError) in try GlyphModelFile.classifier(from: PackageResources.glyph_model_bin) }

    /// The bytes of the embedded model file (its SHA-256 is checked against what the trainer wrote).
    package static var standardFile: [UInt8] { PackageResources.glyph_model_bin }

    /// The second opinion (`MRZRecognizer.read`): `Resources/glyph-model-small.bin`, taught real
    /// print down to 5–7-pixel pitches; nil when the embedded file is not a model this build reads
    /// (the first reader then reads alone).
    package static var secondOpinion: GlyphClassifier? { try? secondOpinionFileRead.get() }

    /// Why `secondOpinion` is nil, when it is.
    package static var secondOpinionLoadError: GlyphModelFileError? {
        if case .failure(let error) = secondOpinionFileRead { return error }
        return nil
    }

    private static let secondOpinionFileRead = Result { () throws(GlyphModelFileError) in
        try GlyphModelFile.classifier(from: PackageResources.glyph_model_small_bin)
    }

    /// The bytes of the embedded second model file.
    package static var secondOpinionFile: [UInt8] { PackageResources.glyph_model_small_bin }

    /// Probabilities of the 37 characters (MRZGlyph order) for one cell. With a "not OCR-B"
    /// output, its share is left out and the 37 sum to what remains: a glyph of another font is
    /// unsure of every character, and no verdict's minimum is met by it.
    package func probabilities(_ cell: [Float]) -> [Float] {
        Array(allProbabilities(cell).prefix(MRZGlyph.count))
    }

    /// Every output's probability, "not OCR-B" last when there is one.
    package func allProbabilities(_ cell: [Float]) -> [Float] {
        var activations = [Float](repeating: 0, count: hidden)
        var logits = [Float](repeating: 0, count: outputs)
        forward(cell, hidden: &activations, logits: &logits)
        return Self.softmax(temperature == 1 ? logits : logits.map { $0 / temperature })
    }

    /// The forward pass; `hidden` gets the ReLU activations, `logits` the output before softmax.
    package func forward(_ input: [Float], hidden activations: inout [Float], logits: inout [Float]) {
        weights.withUnsafeBufferPointer { w in
            input.withUnsafeBufferPointer { x in
                let biases1 = hidden * inputs
                for h in 0..<hidden {
                    var sum = w[biases1 + h]
                    let row = h * inputs
                    for i in 0..<inputs { sum += w[row + i] * x[i] }
                    activations[h] = max(0, sum)
                }
                let layer2 = biases1 + hidden
                let biases2 = layer2 + outputs * hidden
                for o in 0..<outputs {
                    var sum = w[biases2 + o]
                    let row = layer2 + o * hidden
                    for h in 0..<hidden { sum += w[row + h] * activations[h] }
                    logits[o] = sum
                }
            }
        }
    }

    package static func softmax(_ logits: [Float]) -> [Float] {
        let top = logits.max() ?? 0
        let exps = logits.map { exp($0 - top) }
        let total = exps.reduce(0, +)
        return exps.map { $0 / total }
    }
}
