import Foundation
import Synchronization
import ImageCodecs
import MRZ
import MRZSynthesis

/// The glyph classifier's training: cells cut from synthetic photographs (by the recognizer's own
/// locator where it finds the zone, and from the true geometry with jitter everywhere), labelled
/// with the characters the page was drawn with, then a one-hidden-layer network fitted by SGD.
enum Training {
    struct Example: Sendable {
        var features: [Float]
        var label: Int
    }

    /// Cells from `shots` photographs of mixed formats and conditions.
    static func examples(shots: Int, seed: UInt64, capJitter: Float = 0.05) throws -> [Example] {
        let photographers = try GlyphFont.ocrbPaths.map { Photographer(renderer: try PageRenderer(ocrbPath: $0)) }
        let collected = Mutex<(examples: [Example], located: Int)>(([], 0))
        DispatchQueue.concurrentPerform(iterations: shots) { index in
            var generator = SeededGenerator(seed: seed &+ UInt64(index) &* 7919)
            let format = MRZFormat.allCases[index % MRZFormat.allCases.count]
            let conditions: Photographer.Conditions = [.scan, .kiosk, .kiosk, .kiosk, .hard, .hard, .hard, .hard, .hard, .hard][index % 10]
            let sample = MRZSample(format: format, generator: &generator)
            let shot = photographers[index % 7 == 0 ? 1 : 0].shoot(sample, conditions, generator: &generator)
            let gray = GrayImage(shot.frame)
            var examples: [Example] = []
            // Where the locator finds the zone the right way round, its own cells.
            var foundHere = false
            for hypothesis in MRZRecognizer.hypotheses(gray) where hypothesis.geometry.lines.count == sample.lines.count
                && hypothesis.geometry.lines[0].count == format.lineLength && matches(hypothesis.geometry, shot) {
                for (line, cells) in zip(sample.lines, hypothesis.geometry.lines) {
                    for (character, features) in zip(line, CellSampler.sample(gray, cells)) {
                        examples.append(Example(features: features, label: MRZGlyph(character).index))
                    }
                }
                foundHere = true
                break
            }
            // The true geometry, jittered as a locator would get it wrong.
            for _ in 0..<(foundHere ? 1 : 2) {
                for (line, centres) in zip(sample.lines, shot.cellCentres) {
                    let cells = trueCells(centres, capHeight: shot.capHeight, jitter: true, capJitter: capJitter, generator: &generator)
                    for (character, features) in zip(line, CellSampler.sample(gray, cells)) {
                        examples.append(Example(features: features, label: MRZGlyph(character).index))
                    }
                }
            }
            collected.withLock { state in
                state.examples += examples
                if foundHere { state.located += 1 }
            }
        }
        let (all, located) = collected.withLock { ($0.examples, $0.located) }
        print("training cells: \(all.count) from \(shots) photographs (the locator found \(located) of them the right way round)")
        return all
    }

    /// Whether a hypothesis's cells lie on the true ones (each within 0.35 of a pitch).
    static func matches(_ geometry: CellGeometry, _ shot: Photographer.Shot) -> Bool {
        for (cells, centres) in zip(geometry.lines, shot.cellCentres) {
            for (cell, centre) in zip(cells, centres) {
                let dx = cell.x - centre.x, dy = cell.y - centre.y
                if (dx * dx + dy * dy).squareRoot() > 0.35 * cell.pitch { return false }
            }
        }
        return true
    }

    /// The true cells; with `jitter`, moved, turned and scaled as a locator gets them wrong (the cap
    /// height by `capJitter`, a standard deviation: the locator's estimate on the hard tier spreads
    /// from 0.83 to 1.24 of the truth, 5th to 95th percentile).
    static func trueCells(_ centres: [(x: Float, y: Float)], capHeight: Float, jitter: Bool, capJitter: Float = 0.05,
                          generator: inout some RandomNumberGenerator) -> [CellGeometry.Cell] {
        let first = centres[0], last = centres[centres.count - 1]
        let meanPitch = ((last.x - first.x) * (last.x - first.x) + (last.y - first.y) * (last.y - first.y)).squareRoot() / Float(centres.count - 1)
        return centres.indices.map { i in
            let a = centres[max(0, i - 1)], b = centres[min(centres.count - 1, i + 1)]
            let dx = b.x - a.x, dy = b.y - a.y
            let length = (dx * dx + dy * dy).squareRoot()
            let pitch = length / Float(min(centres.count - 1, i + 1) - max(0, i - 1))
            var along = (x: dx / length, y: dy / length)
            var cell = CellGeometry.Cell(x: centres[i].x, y: centres[i].y, along: along, pitch: pitch, capHeight: capHeight * pitch / meanPitch)
            if jitter {
                func gaussian(_ sigma: Float) -> Float {
                    (Float.random(in: -1...1, using: &generator) + Float.random(in: -1...1, using: &generator) + Float.random(in: -1...1, using: &generator)) * sigma
                }
                let angle = gaussian(0.025)
                along = (along.x * cos(angle) - along.y * sin(angle), along.x * sin(angle) + along.y * cos(angle))
                cell.x += gaussian(0.09) * pitch
                cell.y += gaussian(0.09) * pitch
                cell.along = along
                cell.pitch *= 1 + gaussian(0.03)
                cell.capHeight *= 1 + gaussian(capJitter)
            }
            return cell
        }
    }

    /// SGD with momentum on cross-entropy; returns the trained classifier.
    static func train(_ examples: [Example], hidden: Int, epochs: Int, seed: UInt64) -> GlyphClassifier {
        var generator = SeededGenerator(seed: seed)
        let inputs = CellSampler.size, outputs = MRZGlyph.count
        var weights = [Float](repeating: 0, count: GlyphClassifier.parameterCount(inputs: inputs, hidden: hidden))
        let scale1 = (2 / Float(inputs)).squareRoot(), scale2 = (2 / Float(hidden)).squareRoot()
        for i in 0..<(hidden * inputs) { weights[i] = Float.random(in: -1...1, using: &generator) * scale1 }
        let layer2 = hidden * inputs + hidden
        for i in 0..<(outputs * hidden) { weights[layer2 + i] = Float.random(in: -1...1, using: &generator) * scale2 }
        var velocity = [Float](repeating: 0, count: weights.count)
        var order = Array(examples.indices)
        let batch = 64
        let steps = epochs * (examples.count / batch)
        var step = 0
        // Each batch's gradient in two halves, one a core.
        var halves = [[Float]](repeating: [Float](repeating: 0, count: weights.count), count: 2)
        for epoch in 0..<epochs {
            order.shuffle(using: &generator)
            var loss: Float = 0, correct = 0
            for start in stride(from: 0, to: order.count - batch + 1, by: batch) {
                let model = GlyphClassifier(hidden: hidden, weights: weights)
                let results = Mutex<[(Float, Int)]>([])
                let slices = [order[start..<(start + batch / 2)], order[(start + batch / 2)..<(start + batch)]]
                halves.withUnsafeMutableBufferPointer { buffers in
                    // Each half writes its own buffer only.
                    guard let address = buffers.baseAddress else { return }
                    nonisolated(unsafe) let base = address
                    DispatchQueue.concurrentPerform(iterations: 2) { half in
                        let result = accumulate(slices[half].map { examples[$0] }, model: model, into: &base[half])
                        results.withLock { $0.append(result) }
                    }
                }
                for (l, c) in results.withLock({ $0 }) { loss += l; correct += c }
                var gradient = halves[0]
                for i in gradient.indices { gradient[i] += halves[1][i] }
                // Cosine-decayed rate, momentum 0.9, a little weight decay.
                let rate = 0.04 * 0.5 * (1 + cos(Float.pi * Float(step) / Float(max(1, steps)))) + 0.0005
                step += 1
                for i in weights.indices {
                    velocity[i] = 0.9 * velocity[i] - rate * (gradient[i] / Float(batch) + 1e-5 * weights[i])
                    weights[i] += velocity[i]
                }
            }
            print("epoch \(epoch + 1)/\(epochs): loss \(loss / Float(order.count)), training accuracy \(Float(correct) / Float(order.count))")
        }
        return GlyphClassifier(hidden: hidden, weights: weights)
    }

    /// One half-batch's gradient of the cross-entropy, into `gradient` (zeroed first); its loss and
    /// how many it got right.
    static func accumulate(_ batch: [Example], model: GlyphClassifier, into gradient: inout [Float]) -> (Float, Int) {
        let inputs = model.inputs, hidden = model.hidden, outputs = MRZGlyph.count
        let layer2 = hidden * inputs + hidden
        let weights = model.weights
        for i in gradient.indices { gradient[i] = 0 }
        var loss: Float = 0, correct = 0
        var activations = [Float](repeating: 0, count: hidden), logits = [Float](repeating: 0, count: outputs)
        for example in batch {
            model.forward(example.features, hidden: &activations, logits: &logits)
            let p = GlyphClassifier.softmax(logits)
            loss -= log(max(p[example.label], 1e-7))
            if p.indices.max(by: { p[$0] < p[$1] }) == example.label { correct += 1 }
            // Output layer.
            var delta = p
            delta[example.label] -= 1
            var hiddenDelta = [Float](repeating: 0, count: hidden)
            for o in 0..<outputs {
                let row = layer2 + o * hidden
                for h in 0..<hidden {
                    gradient[row + h] += delta[o] * activations[h]
                    hiddenDelta[h] += delta[o] * weights[row + h]
                }
                gradient[layer2 + outputs * hidden + o] += delta[o]
            }
            // Hidden layer (ReLU).
            example.features.withUnsafeBufferPointer { x in
                gradient.withUnsafeMutableBufferPointer { g in
                    for h in 0..<hidden where activations[h] > 0 {
                        let d = hiddenDelta[h], row = h * inputs
                        for i in 0..<inputs { g[row + i] += d * x[i] }
                        g[hidden * inputs + h] += d
                    }
                }
            }
        }
        return (loss, correct)
    }

    /// The weights as the Swift source `GlyphModel.swift` holds them (base64 of little-endian Float32).
    static func source(_ model: GlyphClassifier, note: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(model.weights.count * 4)
        for weight in model.weights {
            let bits = weight.bitPattern
            bytes += [UInt8(bits & 0xFF), UInt8((bits >> 8) & 0xFF), UInt8((bits >> 16) & 0xFF), UInt8(bits >> 24)]
        }
        let encoded = Data(bytes).base64EncodedString()
        let lines = stride(from: 0, to: encoded.count, by: 100).map { start -> String in
            let from = encoded.index(encoded.startIndex, offsetBy: start)
            let to = encoded.index(from, offsetBy: min(100, encoded.count - start))
            return "        " + encoded[from..<to]
        }
        return """
            // The glyph classifier's weights. Written by `swift run -c release gbgbridge-mrz-lab train`
            // (Docs/mrz.md, "Training"): \(note). Do not edit by hand.
            enum GlyphModel {
                static let hidden = \(model.hidden)
                static let weights: [Float] = Base64Floats.decode(encoded)
                static let encoded = \"\"\"
            \(lines.joined(separator: "\n"))
                    \"\"\"
            }

            """
    }
}
