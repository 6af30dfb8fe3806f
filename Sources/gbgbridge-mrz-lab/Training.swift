import Foundation
import Synchronization
import ImageCodecs
import MRTDCrypto
import MRZ
import MRZSynthesis

/// The glyph classifier's training: cells cut from synthetic photographs (by the recognizer's own
/// locator where it finds the zone, and from the true geometry with jitter everywhere), labelled
/// with the characters the page was drawn with, then a one-hidden-layer network fitted by SGD.
enum Training {
    struct Example: Sendable {
        var features: [Float]
        /// 0–36: an MRZ character (MRZGlyph order); 37: "not OCR-B" (GlyphClassifier.notOCRB).
        var label: Int
    }

    /// The classifier's outputs: the 37 characters and "not OCR-B".
    static let classes = MRZGlyph.count + 1

    /// The photographing conditions of the synthetic shots, in turn: flat scans (one in two
    /// binarised as scanners and the real lines' crops are), kiosk frames, hard ones, pages
    /// 250–600 pixels wide (`small`) and 8–12-pixel capitals (`tiny`).
    static let conditionCycle: [Photographer.Conditions] = {
        var scanBW = Photographer.Conditions.scan
        scanBW.binarised = 1
        var kioskBW = Photographer.Conditions.kiosk
        kioskBW.binarised = 1
        let hard = Photographer.Conditions.hard
        return [.scan, scanBW, .kiosk, .kiosk, .kiosk, kioskBW, hard, hard, hard, hard, hard, hard, hard, hard, hard, hard,
                .small, .small, .tiny, .tiny]
    }()

    /// Cells from `shots` photographs of mixed formats and conditions. Every fourth shot has a
    /// fifth of its characters drawn in another font (`ForeignFonts.training`): cells labelled
    /// "not OCR-B", unless that font draws the character as OCR-B does (`ForeignFonts.sameShape`).
    static func examples(shots: Int, seed: UInt64, capJitter: Float = 0.05, foreignEvery: Int = 4) throws -> [Example] {
        let photographers = try GlyphFont.ocrbPaths.map { Photographer(renderer: try PageRenderer(ocrbPath: $0)) }
        let ocrb = try GlyphFont(path: GlyphFont.ocrbPaths[0], pixelSize: 96, characters: PageRenderer.mrzCharacters)
        let otherFonts = ForeignFonts.load(ForeignFonts.training)
        // OCR-B's own glyphs outside the MRZ's alphabet, drawn where an MRZ character stands
        // (six fonts, each its own draw of which glyph for which character): "not OCR-B" to the
        // reader although the font is OCR-B — `~ Ξ $ Λ ↑ ü` in a key field were read as MRZ
        // characters surely. Only on shots whose capitals are 12 pixels or more: smaller, a
        // punctuation mark or a lower-case letter is a blob the reader cannot call anything.
        let outsideFonts: [GlyphFont] = try {
            let full = try GlyphFont(path: GlyphFont.ocrbPaths[0], pixelSize: 96,
                                     characters: PageRenderer.mrzCharacters + GlyphFont.ocrbOutsideMRZ)
            let outside = Array(GlyphFont.ocrbOutsideMRZ)
            var draw = SeededGenerator(seed: seed ^ 0x0CB0)
            return (0..<6).map { _ in
                let shuffled = outside.shuffled(using: &draw)
                return full.drawing(Dictionary(uniqueKeysWithValues: PageRenderer.mrzCharacters.enumerated().map { ($0.element, shuffled[$0.offset % shuffled.count]) }))
            }
        }()
        let foreign = otherFonts + outsideFonts
        // Whether each foreign font's glyph of each character is OCR-B's shape.
        let alike: [[Character: Bool]] = foreign.map { font in
            Dictionary(uniqueKeysWithValues: PageRenderer.mrzCharacters.map { ($0, ForeignFonts.similarity(ocrb, font, $0) >= ForeignFonts.sameShape) })
        }
        // And whether it is at small capitals, by the capitals' height in whole pixels
        // (`ForeignFonts.resemblesAt`): there a glyph OCR-B's at that size is taught as its
        // character, not as "not OCR-B".
        let smallSizes = Array(3..<Int(ForeignFonts.smallCapitals))
        let alikeSmall: [[Int: Set<Character>]] = foreign.map { font in
            Dictionary(uniqueKeysWithValues: smallSizes.map { size in
                (size, Set(PageRenderer.mrzCharacters.filter { ForeignFonts.resemblesAt(size, ocrb: ocrb, font: font, $0) }))
            })
        }
        let smallAlike = smallSizes.map { size in alikeSmall.reduce(0) { $0 + ($1[size]?.count ?? 0) } }
        print("foreign fonts: \(otherFonts.count) of \(ForeignFonts.training.count) installed, and \(outsideFonts.count) of OCR-B's glyphs outside the MRZ; glyphs OCR-B's at "
              + zip(smallSizes, smallAlike).map { "\($0) px: \($1)" }.joined(separator: ", ")
              + " (of \(foreign.count * PageRenderer.mrzCharacters.count); at full size "
              + "\(alike.reduce(0) { $0 + $1.values.filter { $0 }.count }))")
        let collected = Mutex<(examples: [Example], located: Int, foreignCells: Int)>(([], 0, 0))
        DispatchQueue.concurrentPerform(iterations: shots) { index in
            var generator = SeededGenerator(seed: seed &+ UInt64(index) &* 7919)
            let format = MRZFormat.allCases[index % MRZFormat.allCases.count]
            let conditions = conditionCycle[index % conditionCycle.count]
            let sample = MRZSample(format: format, generator: &generator)
            // Foreign glyphs and their labels.
            var fonts: [[GlyphFont?]]?
            var labels = sample.lines.map { $0.map { MRZGlyph($0).index } }
            var foreignCells = 0
            var drawnIn: [(line: Int, position: Int, font: Int)] = []
            if foreignEvery > 0, index % foreignEvery == 1, !otherFonts.isEmpty {
                fonts = sample.lines.map { line in line.map { _ in nil } }
                for (l, line) in sample.lines.enumerated() {
                    for p in 0..<line.count where Float.random(in: 0...1, using: &generator) < 0.2 {
                        let f = Int.random(in: 0..<(conditions.capHeight.lowerBound >= 12 ? foreign.count : otherFonts.count), using: &generator)
                        fonts?[l][p] = foreign[f]
                        drawnIn.append((l, p, f))
                    }
                }
            }
            let shot = photographers[index % 7 == 0 ? 1 : 0].shoot(sample, conditions, foreign: fonts, generator: &generator)
            // The foreign cells' labels, by what the shot's capitals show of them.
            let capPixels = Int(shot.capHeight.rounded())
            for (l, p, f) in drawnIn {
                let character = sample.lines[l][sample.lines[l].index(sample.lines[l].startIndex, offsetBy: p)]
                let same = alike[f][character] == true || alikeSmall[f][capPixels]?.contains(character) == true
                if !same {
                    labels[l][p] = GlyphClassifier.notOCRB
                    foreignCells += 1
                }
            }
            let gray = GrayImage(shot.frame)
            var examples: [Example] = []
            // Where the locator finds the zone the right way round, its own cells.
            var foundHere = false
            for hypothesis in MRZRecognizer.hypotheses(gray) where hypothesis.geometry.lines.count == sample.lines.count
                && hypothesis.geometry.lines[0].count == format.lineLength && matches(hypothesis.geometry, shot) {
                for (line, cells) in zip(labels, hypothesis.geometry.lines) {
                    for (label, features) in zip(line, CellSampler.sample(gray, cells)) {
                        examples.append(Example(features: features, label: label))
                    }
                }
                foundHere = true
                break
            }
            // The true geometry, jittered as a locator would get it wrong.
            for _ in 0..<(foundHere ? 1 : 2) {
                for (line, centres) in zip(labels, shot.cellCentres) {
                    let cells = trueCells(centres, capHeight: shot.capHeight, jitter: true, capJitter: capJitter, generator: &generator)
                    for (label, features) in zip(line, CellSampler.sample(gray, cells)) {
                        examples.append(Example(features: features, label: label))
                    }
                }
            }
            collected.withLock { state in
                state.examples += examples
                if foundHere { state.located += 1 }
                state.foreignCells += foreignCells
            }
        }
        let (all, located, foreignCells) = collected.withLock { ($0.examples, $0.located, $0.foreignCells) }
        print("synthetic cells: \(all.count) from \(shots) photographs (the locator found \(located) of them the right way round; "
              + "\(foreignCells) characters drawn as not OCR-B)")
        return all
    }

    /// The real lines' cells, apart by size: the trainer weighs the 5–7-pixel pitches on their own
    /// (`--small-copies`): more of them cost the full-size print its weight.
    struct RealCells {
        /// Read at 1, 0.6, 0.4 and 0.28 of the crop's size.
        var asPrinted: [Example] = []
        /// Read at 0.2 and 0.15 of it.
        var small: [Example] = []
        var all: [Example] { asPrinted + small }
    }

    /// Cells of real MRZ lines (`RealLines`, one part of the split), each zone read at four sizes
    /// (as cropped, and 0.6, 0.4, 0.28 of it: 9–20-pixel pitches) where the locator's cells of
    /// the zone's layout agree with the printed text on at least four in five characters (so the
    /// labels sit on their cells); and at 0.2 and 0.15 of it (5–7-pixel pitches, the half-size
    /// documents' print) on the cells read as cropped, scaled with the zone — at that size the
    /// locator's own cells rarely agree with a classifier taught no real print that small. A cell whose label the current classifier contradicts surely
    /// (over 0.97) on a line no check digit vouches for is left out: the collection's text has a
    /// few mistakes (`O` for a printed `0`), and a wrong label would teach the very confusion the
    /// check digits cannot see.
    static func realExamples(_ real: RealLines, part: RealLines.Part, classifier: GlyphClassifier) -> RealCells {
        let cases = real.cases(part)
        let collected = Mutex<(examples: RealCells, zones: Int, skipped: Int)>((RealCells(), 0, 0))
        DispatchQueue.concurrentPerform(iterations: cases.count) { index in
            let item = cases[index]
            var examples = RealCells()
            var zones = 0, skipped = 0
            var asCropped: CellGeometry?
            for scale: Float in [1, 0.6, 0.4, 0.28, 0.2, 0.15] {
                let gray = scale == 1 ? item.image : RealZone.scaled(item.image, by: scale)
                let layout = item.truth.map { $0.map { MRZGlyph($0).index } }
                var best: (cells: [[[Float]]], agreement: Float)?
                var geometries: [CellGeometry] = []
                if scale >= 0.25 {
                    geometries = MRZRecognizer.hypotheses(gray).map(\.geometry)
                } else {
                    // The cells read as cropped, scaled with the image (a pixel's edges scale exactly).
                    guard let asCropped else { break }
                    geometries = [CellGeometry(lines: asCropped.lines.map { line in
                        line.map { CellGeometry.Cell(x: $0.x * scale, y: $0.y * scale, along: $0.along, pitch: $0.pitch * scale,
                                                     capHeight: $0.capHeight * scale) }
                    })]
                }
                var bestGeometry: CellGeometry?
                for geometry in geometries where geometry.lines.count == layout.count && geometry.lines[0].count == layout[0].count {
                    let samples = geometry.lines.map { CellSampler.sample(gray, $0) }
                    var agree = 0, total = 0
                    for (line, cells) in zip(layout, samples) {
                        for (label, features) in zip(line, cells) {
                            let p = classifier.probabilities(features)
                            if p.indices.max(by: { p[$0] < p[$1] }) == label { agree += 1 }
                            total += 1
                        }
                    }
                    let agreement = Float(agree) / Float(max(1, total))
                    if best == nil || agreement > best?.agreement ?? 0 { best = (samples, agreement); bestGeometry = geometry }
                }
                if scale < 0.25, let found = best {
                    // Scaled cells sit where the cropped ones did: no agreement asked of them.
                    best = (found.cells, 1)
                }
                guard let best, best.agreement >= 0.8 else { continue }
                if scale == 1 { asCropped = bestGeometry }
                zones += 1
                let vouched = item.keyHolds
                for (line, cells) in zip(layout, best.cells) {
                    for (label, features) in zip(line, cells) {
                        let p = classifier.probabilities(features)
                        if !vouched, let top = p.indices.max(by: { p[$0] < p[$1] }), top != label, p[top] > 0.97 {
                            skipped += 1
                            continue
                        }
                        if scale < 0.25 {
                            examples.small.append(Example(features: features, label: label))
                        } else {
                            examples.asPrinted.append(Example(features: features, label: label))
                        }
                    }
                }
            }
            collected.withLock { state in
                state.examples.asPrinted += examples.asPrinted
                state.examples.small += examples.small
                state.zones += zones
                state.skipped += skipped
            }
        }
        let (examples, zones, skipped) = collected.withLock { ($0.examples, $0.zones, $0.skipped) }
        print("real cells (\(part.rawValue)): \(examples.asPrinted.count) + \(examples.small.count) at 5–7-pixel pitches from \(zones) zone readings of \(cases.count) zones; \(skipped) cells left out as likely mislabelled")
        return examples
    }

    /// The temperature that makes `model`'s probabilities fit `examples` best (least negative
    /// log-likelihood; golden-section search over 0.5–6).
    static func fitTemperature(_ model: GlyphClassifier, _ examples: [Example]) -> Float {
        let logits = examples.map { logitsOf(model, $0.features) }
        func loss(_ t: Float) -> Double {
            var total = 0.0
            for (l, example) in zip(logits, examples) {
                let p = GlyphClassifier.softmax(l.map { $0 / t })
                total -= log(Double(max(p[example.label], 1e-9)))
            }
            return total
        }
        var (a, b): (Float, Float) = (0.5, 6)
        let ratio: Float = 0.618_034
        for _ in 0..<40 {
            let c = b - ratio * (b - a), d = a + ratio * (b - a)
            if loss(c) < loss(d) { b = d } else { a = c }
        }
        return (a + b) / 2
    }

    static func logitsOf(_ model: GlyphClassifier, _ features: [Float]) -> [Float] {
        var hidden = [Float](repeating: 0, count: model.hidden), logits = [Float](repeating: 0, count: model.outputs)
        model.forward(features, hidden: &hidden, logits: &logits)
        return logits
    }

    /// Expected calibration error (ten bins of the top probability) and accuracy of `model` at
    /// temperature `t` on `examples`.
    static func calibration(_ model: GlyphClassifier, _ examples: [Example], temperature t: Float) -> (ece: Double, accuracy: Double) {
        var bins = [(count: Int, correct: Int, confidence: Double)](repeating: (0, 0, 0), count: 10)
        var correct = 0
        for example in examples {
            let p = GlyphClassifier.softmax(logitsOf(model, example.features).map { $0 / t })
            guard let top = p.indices.max(by: { p[$0] < p[$1] }) else { continue }
            let bin = min(9, Int(p[top] * 10))
            bins[bin].count += 1
            bins[bin].confidence += Double(p[top])
            if top == example.label { bins[bin].correct += 1; correct += 1 }
        }
        let total = Double(max(1, examples.count))
        let ece = bins.reduce(0.0) { sum, bin in
            bin.count == 0 ? sum : sum + abs(Double(bin.correct) / Double(bin.count) - bin.confidence / Double(bin.count)) * Double(bin.count) / total
        }
        return (ece, Double(correct) / total)
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
        let inputs = CellSampler.size, outputs = classes
        var weights = [Float](repeating: 0, count: GlyphClassifier.parameterCount(inputs: inputs, hidden: hidden, outputs: outputs))
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
                let model = GlyphClassifier(hidden: hidden, outputs: outputs, weights: weights)
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
        return GlyphClassifier(hidden: hidden, outputs: outputs, weights: weights)
    }

    /// One half-batch's gradient of the cross-entropy, into `gradient` (zeroed first); its loss and
    /// how many it got right.
    static func accumulate(_ batch: [Example], model: GlyphClassifier, into gradient: inout [Float]) -> (Float, Int) {
        let inputs = model.inputs, hidden = model.hidden, outputs = model.outputs
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

    /// Writes the model where the build embeds it (`DIR/glyph-model.bin`), its SHA-256 in
    /// `sha256sum`'s format (`glyph-model.sha256`: a test checks the embedded file against it) and
    /// how it was made (`glyph-model.about`).
    static func write(_ model: GlyphClassifier, note: String, to directory: String) throws {
        let bytes = GlyphModelFile.bytes(of: model)
        let digest = DigestAlgorithm.sha256.hash(bytes).map { String(format: "%02x", $0) }.joined()
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/glyph-model.bin"), options: .atomic)
        try "\(digest)  glyph-model.bin\n".write(toFile: directory + "/glyph-model.sha256", atomically: true, encoding: .utf8)
        let about = """
            The glyph classifier's weights (glyph-model.bin, format in Sources/MRZ/GlyphModelFile.swift), written by
            `swift run -c release gbgbridge-mrz-lab train` (Docs/mrz.md, "Training"), with glyph-model.sha256 beside it.
            Do not edit by hand. How it was made:

            \(note)

            """
        try about.write(toFile: directory + "/glyph-model.about", atomically: true, encoding: .utf8)
    }
}
