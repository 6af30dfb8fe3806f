/// The glyph classifier's weights as a file (`Resources/glyph-model.bin`, written by
/// `gbgbridge-mrz-lab train`, embedded in the build by SwiftPM and read once at start):
///
///     "GBGGLYPH"                      8 bytes
///     format version                  UInt32 LE, 1
///     inputs, hidden, outputs         UInt32 LE each
///     temperature                     Float32 LE
///     weights                         Float32 LE, parameterCount(inputs, hidden, outputs) of them
///
/// Nothing else: a file of another shape, a version this build does not know, a count that does
/// not fit or a weight that is not finite is refused with the reason (`GlyphModelFileError`).
package enum GlyphModelFile {
    static let magic = Array("GBGGLYPH".utf8)
    static let version: UInt32 = 1
    static let headerSize = 8 + 4 * 4 + 4
    /// Far above any model this reader would use (the shipped one has 46k weights): a file that
    /// claims more is not one of ours.
    static let maximumParameters = 8_000_000

    /// The classifier a model file holds.
    package static func classifier(from bytes: [UInt8]) throws(GlyphModelFileError) -> GlyphClassifier {
        guard bytes.count >= headerSize else { throw .truncated(bytes.count) }
        guard Array(bytes[0..<8]) == magic else { throw .notAModelFile }
        func word(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        guard word(8) == version else { throw .unknownVersion(word(8)) }
        let inputs = Int(word(12)), hidden = Int(word(16)), outputs = Int(word(20))
        guard inputs == CellSampler.size else { throw .wrongInputs(inputs, expected: CellSampler.size) }
        guard outputs == MRZGlyph.count || outputs == MRZGlyph.count + 1 else { throw .wrongOutputs(outputs) }
        guard (1...65_536).contains(hidden),
              GlyphClassifier.parameterCount(inputs: inputs, hidden: hidden, outputs: outputs) <= maximumParameters else {
            throw .tooLarge(hidden: hidden)
        }
        let temperature = Float(bitPattern: word(24))
        guard temperature.isFinite, temperature > 0 else { throw .badTemperature }
        let count = GlyphClassifier.parameterCount(inputs: inputs, hidden: hidden, outputs: outputs)
        guard bytes.count == headerSize + 4 * count else { throw .wrongLength(bytes.count, expected: headerSize + 4 * count) }
        var weights = [Float](repeating: 0, count: count)
        for index in 0..<count {
            let weight = Float(bitPattern: word(headerSize + 4 * index))
            guard weight.isFinite else { throw .notFinite(index: index) }
            weights[index] = weight
        }
        return GlyphClassifier(inputs: inputs, hidden: hidden, outputs: outputs, weights: weights, temperature: temperature)
    }

    /// The file for a classifier (what the lab writes).
    package static func bytes(of model: GlyphClassifier) -> [UInt8] {
        var bytes = magic
        bytes.reserveCapacity(headerSize + 4 * model.weights.count)
        func append(_ value: UInt32) { bytes += [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)] }
        append(version)
        append(UInt32(model.inputs))
        append(UInt32(model.hidden))
        append(UInt32(model.outputs))
        append(model.temperature.bitPattern)
        for weight in model.weights { append(weight.bitPattern) }
        return bytes
    }
}

/// Why a glyph model file was refused.
package enum GlyphModelFileError: Error, Equatable, CustomStringConvertible {
    case truncated(Int)
    case notAModelFile
    case unknownVersion(UInt32)
    case wrongInputs(Int, expected: Int)
    case wrongOutputs(Int)
    case tooLarge(hidden: Int)
    case badTemperature
    case wrongLength(Int, expected: Int)
    case notFinite(index: Int)

    package var description: String {
        switch self {
        case .truncated(let count): return "a glyph model file is at least \(GlyphModelFile.headerSize) bytes; this one is \(count)"
        case .notAModelFile: return "not a glyph model file (it does not start with GBGGLYPH)"
        case .unknownVersion(let version): return "glyph model format \(version); this build reads format \(GlyphModelFile.version)"
        case .wrongInputs(let inputs, let expected): return "the model takes \(inputs) inputs; this reader's cells have \(expected)"
        case .wrongOutputs(let outputs): return "the model has \(outputs) outputs; the MRZ reader needs \(MRZGlyph.count) or \(MRZGlyph.count + 1)"
        case .tooLarge(let hidden): return "the model's \(hidden) hidden units are out of bounds"
        case .badTemperature: return "the model's temperature is not a positive number"
        case .wrongLength(let count, let expected): return "the model file is \(count) bytes; its header says \(expected)"
        case .notFinite(let index): return "weight \(index) of the model is not a finite number"
        }
    }
}
