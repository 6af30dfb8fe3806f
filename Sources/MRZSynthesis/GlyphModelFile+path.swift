import Foundation
import MRZ

extension GlyphModelFile {
    /// A `glyph-model.bin` the trainer wrote, read from `path`: the bench's and the lab's `--model`
    /// (the product only ever reads the one embedded in its build).
    package static func classifier(atPath path: String) throws -> GlyphClassifier {
        guard let data = FileManager.default.contents(atPath: path) else { throw GlyphFont.Failure(description: "\(path): cannot be read") }
        do {
            return try classifier(from: Array(data))
        } catch {
            throw GlyphFont.Failure(description: "\(path): \(error)")
        }
    }
}
