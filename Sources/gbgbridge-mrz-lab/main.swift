// The MRZ reader's workshop (release build; not a test): synthetic frames to look at, and the
// classifier's training. `swift run -c release gbgbridge-mrz-lab samples DIR [--tier kiosk] [--count 8] [--seed 1]`
import Foundation
import ImageCodecs
import GBGBridgeStubs
import MRZ
import MRZSynthesis
import Synchronization

let arguments = CommandLine.arguments
func option(_ name: String) -> String? { zip(arguments, arguments.dropFirst()).first { $0.0 == name }?.1 }


/// The reader, with `--model FILE` a `glyph-model.bin` the trainer wrote instead of the built-in one.
func labRecognizer() -> MRZRecognizer? {
    guard let path = option("--model") else { return MRZRecognizer() }
    do {
        return MRZRecognizer(classifier: try GlyphModelFile.classifier(atPath: path))
    } catch {
        print("\(error)")
        exit(2)
    }
}

/// The command's file arguments: those after the command that are neither an option nor an option's value.
func fileArguments() -> [String] {
    arguments.indices.dropFirst(2).filter { !arguments[$0].hasPrefix("--") && !arguments[$0 - 1].hasPrefix("--") }.map { arguments[$0] }
}

/// `--count` photographs (default 8) of a tier, formats in turn, from `--seed` (default 1).
func forEachShot(tier: String, _ body: (Int, MRZFormat, MRZSample, Photographer.Shot) throws -> Void) throws {
    var generator = SeededGenerator(seed: UInt64(option("--seed") ?? "1") ?? 1)
    let photographer = Photographer(renderer: try PageRenderer())
    for index in 0..<(Int(option("--count") ?? "8") ?? 8) {
        let format = MRZFormat.allCases[index % MRZFormat.allCases.count]
        let sample = MRZSample(format: format, generator: &generator)
        try body(index, format, sample, photographer.shoot(sample, Photographer.Conditions(tier: tier), generator: &generator))
    }
}

/// The frame cropped to the zone: its cells' box, a pitch and a cap height round each centre
/// shrunk to the glyphs' extent (0.45 pitch, 0.58 cap).
func zoneCrop(_ shot: Photographer.Shot) -> ImageCodecs.RGBImage {
    let centres = shot.cellCentres.flatMap { $0 }, line = shot.cellCentres[0]
    let pitch = (line[line.count - 1].x - line[0].x) / Float(line.count - 1)
    let x0 = max(0, Int((centres.map(\.x).min() ?? 0) - 0.45 * pitch)), x1 = min(shot.frame.width, Int((centres.map(\.x).max() ?? 0) + 0.45 * pitch))
    let y0 = max(0, Int((centres.map(\.y).min() ?? 0) - 0.58 * shot.capHeight)), y1 = min(shot.frame.height, Int((centres.map(\.y).max() ?? 0) + 0.58 * shot.capHeight))
    var pixels: [UInt8] = []
    for y in y0..<y1 { pixels += shot.frame.pixels[((y * shot.frame.width + x0) * 3)..<((y * shot.frame.width + x1) * 3)] }
    return ImageCodecs.RGBImage(width: x1 - x0, height: y1 - y0, pixels: pixels)
}

switch arguments.dropFirst().first {
case "diagnose":
    // What the locator sees in image files: `diagnose FILE…`.
    for path in fileArguments() {
        let image = try ImageCodecs.decodePNG(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        print("\(path): " + MRZRecognizer.diagnose(GrayImage(image)))
    }
case "cells":
    // Each cell of each hypothesis in image files, its three likeliest characters: `cells FILE…`.
    guard let recognizer = labRecognizer() else { print("no trained model"); exit(1) }
    for path in fileArguments() {
        let gray = GrayImage(try ImageCodecs.decodePNG(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        let limit = Int(option("--hypotheses") ?? "1") ?? 1
        for (number, hypothesis) in MRZRecognizer.hypotheses(gray).prefix(limit).enumerated() {
            print("\(path) hypothesis \(number): \(hypothesis.geometry.lines.count) × \(hypothesis.geometry.lines[0].count), cap \(hypothesis.geometry.lines.map { $0[0].capHeight }), pitch \(hypothesis.geometry.lines.map { $0[0].pitch })")
            for line in hypothesis.geometry.lines {
                let probabilities = recognizer.cellReadings(gray, line).probabilities
                print(probabilities.map { p in
                    let top = p.indices.sorted { p[$0] > p[$1] }.prefix(3)
                    return top.map { "\(MRZGlyph(index: $0).character)\(String(format: "%.2f", p[$0]))" }.joined(separator: "/")
                }.joined(separator: " "))
            }
        }
    }
case "why":
    // Why image files' best readings whose key checks hold were (not) claimed: `why FILE…`.
    guard let recognizer = labRecognizer() else { print("no trained model"); exit(1) }
    for path in fileArguments() {
        // PNG or JPEG, within the limits `gbgbridge mrz` decodes with.
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let limits = ImageCodecs.Limits(maxPixels: 60 << 20, maxBytes: 768 << 20, scaleToPixels: 16 << 20)
        let gray = GrayImage(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) ? try ImageCodecs.decodePNG(bytes, limits: limits)
                                                                      : try ImageCodecs.decodeJPEG(bytes, limits: limits))
        let result = recognizer.read(gray)
        print("\(path): \(result.reading.map { "\($0.format.rawValue) key \($0.accessKeyValid) valid \($0.valid) \($0.lines)" } ?? "nothing") \(result.refusal.map(\.rawValue) ?? "")")
        if let (reading, evidence) = recognizer.bestEvidence(gray) {
            print(String(format: "  best evidence: %@ %@ — least key p %.3f, twin %.3f, rival %.3f, posteriors %@", reading.format.rawValue,
                         reading.lines.description, evidence.minimumProbability, evidence.twinRatio, evidence.rival,
                         evidence.posteriors.map { String(format: "%.3f", $0) }.joined(separator: "/")))
            print("  key cells (character, probability, not OCR-B): " + evidence.keyCells.map { "\($0.character) \(String(format: "%.2f %.2f", $0.probability, $0.foreign))" }.joined(separator: " | "))
        }
    }
case "stub-frame":
    // The stub camera's data page as vivid's HDMI loop shows it (VividScenario.loopFrame: fitted
    // into 1280 × 720, nearest neighbour, on a grey ground), or the page itself with --page:
    // `stub-frame OUT.png [--page]`. The ICAO specimen every camera test reads: a model that
    // reads it less surely makes the capture's search run on (in a VM, past the frame budget).
    guard let out = fileArguments().first else { print("usage: gbgbridge-mrz-lab stub-frame OUT.png [--page]"); exit(2) }
    let page = StubDocumentCamera.drawPage()
    var image = page
    if !CommandLine.arguments.contains("--page") {
        let (width, height) = (1280, 720)
        let scale = min(Double(width - 40) / Double(page.width), Double(height - 40) / Double(page.height))
        let pageWidth = Int(Double(page.width) * scale), pageHeight = Int(Double(page.height) * scale)
        let left = (width - pageWidth) / 2, top = (height - pageHeight) / 2
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let (px, py) = (x - left, y - top)
                let o = (y * width + x) * 3
                guard px >= 0, py >= 0, px < pageWidth, py < pageHeight else { pixels[o] = 70; pixels[o + 1] = 80; pixels[o + 2] = 90; continue }
                let sx = min(page.width - 1, Int(Double(px) / scale)), sy = min(page.height - 1, Int(Double(py) / scale))
                let i = (sy * page.width + sx) * 3
                pixels[o] = page.pixels[i]; pixels[o + 1] = page.pixels[i + 1]; pixels[o + 2] = page.pixels[i + 2]
            }
        }
        image = ImageCodecs.RGBImage(width: width, height: height, pixels: pixels)
    }
    try Data(try ImageCodecs.encodePNG(image)).write(to: URL(fileURLWithPath: out))
    print("\(out): \(image.width) × \(image.height)")
case "fonts":
    // How alike each other font draws each MRZ character to OCR-B (ForeignFonts.similarity).
    let ocrb = try GlyphFont(path: GlyphFont.ocrbPaths[0], pixelSize: 96, characters: PageRenderer.mrzCharacters)
    let sharp = try GlyphFont(path: GlyphFont.ocrbPaths[1], pixelSize: 96, characters: PageRenderer.mrzCharacters)
    for font in [sharp] + ForeignFonts.load(ForeignFonts.training + ForeignFonts.heldOut) {
        let scores = PageRenderer.mrzCharacters.map { ($0, ForeignFonts.similarity(ocrb, font, $0)) }
        let same = scores.filter { $0.1 >= ForeignFonts.sameShape }
        print("\((font.path as NSString).lastPathComponent): \(same.count) alike (\(String(same.map(\.0)))); "
              + scores.map { "\($0.0)\(String(format: "%.2f", $0.1))" }.joined(separator: " "))
        // And what it draws as OCR-B's at small capitals (ForeignFonts.resemblesAt: taught as its character there).
        let small = [5, 7, 9, 11].map { size in
            "\(size) px: " + String(PageRenderer.mrzCharacters.filter { ForeignFonts.resemblesAt(size, ocrb: ocrb, font: font, $0) })
        }
        print("    OCR-B's at " + small.joined(separator: "; "))
    }
case "samples":
    guard arguments.count > 2 else { print("usage: samples DIR"); exit(2) }
    let directory = arguments[2]
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let tier = option("--tier") ?? "kiosk"
    try forEachShot(tier: tier) { index, format, sample, shot in
        // `--crop`: only the zone, a pixel or two of paper round it (what a photo of the MRZ lines is).
        let png = try ImageCodecs.encodePNG(arguments.contains("--crop") ? zoneCrop(shot) : shot.frame)
        try Data(png).write(to: URL(fileURLWithPath: "\(directory)/\(tier)-\(index).png"))
        print("\(tier)-\(index).png \(format.rawValue) cap \(shot.capHeight)\n\(sample.text)")
    }
case "locate":
    // Why the locator misses: per photograph, the blobs, the angle, the long lines, the blocks.
    try forEachShot(tier: option("--tier") ?? "kiosk") { index, format, sample, shot in
        let gray = GrayImage(shot.frame)
        let c = shot.cellCentres[0]
        let trueAngle = atan2(c[c.count - 1].y - c[0].y, c[c.count - 1].x - c[0].x) * 180 / .pi
        print("#\(index) \(format.rawValue) cap \(shot.capHeight) true angle \(trueAngle): " + MRZRecognizer.diagnose(gray))
        let hypotheses = MRZRecognizer.hypotheses(gray)
        let hit = hypotheses.contains { $0.geometry.lines.count == sample.lines.count && $0.geometry.lines[0].count == format.lineLength && Training.matches($0.geometry, shot) }
        print("   \(hypotheses.count) hypotheses, right one among them: \(hit)")
        if !hit {
            for hypothesis in hypotheses where hypothesis.geometry.lines.count == sample.lines.count && hypothesis.geometry.lines[0].count == format.lineLength {
                let errors = zip(hypothesis.geometry.lines, shot.cellCentres).map { cells, centres in
                    zip(cells, centres).map { cell, centre in ((cell.x - centre.x) * (cell.x - centre.x) + (cell.y - centre.y) * (cell.y - centre.y)).squareRoot() / cell.pitch }
                }
                print("   errors (pitches): " + errors.map { line in line.map { String(format: "%.1f", $0) }.joined(separator: " ") }.joined(separator: " | "))
            }
        }
        if let dir = option("--dump") { try Data(try ImageCodecs.encodePNG(shot.frame)).write(to: URL(fileURLWithPath: "\(dir)/locate-\(index).png")) }
    }
case "glyphs":
    // The OCR-B glyphs the product draws its placeholder page's MRZ with (Sources/MRZ/OCRBGlyphs.swift).
    let font = try GlyphFont(path: GlyphFont.ocrbPaths[0], pixelSize: 64, characters: PageRenderer.mrzCharacters)
    var entries: [String] = []
    for character in PageRenderer.mrzCharacters {
        guard let glyph = font.glyph(character) else { continue }
        entries.append("        \"\(character)\": (\(glyph.width), \(glyph.height), \(glyph.left), \(glyph.top), \(glyph.advance), \"\(Data(glyph.coverage).base64EncodedString())\"),")
    }
    let source = """
        // OCR-B (Debian's fonts-ocr-b, OCRB.otf) rendered by FreeType at 64 pixels an em: the glyphs the
        // placeholder document page draws its MRZ with. Written by `swift run -c release gbgbridge-mrz-lab
        // glyphs`; do not edit by hand.
        package enum OCRBGlyphs {
            /// Cap height (the top of H) in the glyphs' pixels.
            package static let capHeight: Float = \(font.capHeight)
            /// width, height, left bearing, top above the baseline, advance; coverage 0–255, base64.
            static let table: [Character: (Int, Int, Int, Int, Double, String)] = [
        \(entries.joined(separator: "\n"))
            ]
        }

        """
    try source.write(toFile: option("--out") ?? "Sources/MRZ/OCRBGlyphs.swift", atomically: true, encoding: .utf8)
case "evaluate":
    // A quick measure on freshly made photographs (the benchmark, gbgbridge-mrz-bench, is the full one).
    guard let recognizer = labRecognizer() else { print("no trained model"); exit(1) }
    let tier = option("--tier") ?? "kiosk", count = Int(option("--count") ?? "100") ?? 100
    var generator = SeededGenerator(seed: UInt64(option("--seed") ?? "77") ?? 77)
    let photographer = Photographer(renderer: try PageRenderer())
    var keyRight = 0, exact = 0, falseKey = 0, falseValid = 0, noRead = 0, notFound = 0, valid = 0
    var times: [Double] = []
    for index in 0..<count {
        let format = MRZFormat.allCases[index % MRZFormat.allCases.count]
        let sample = MRZSample(format: format, generator: &generator)
        let shot = photographer.shoot(sample, Photographer.Conditions(tier: tier), generator: &generator)
        let started = Date()
        let result = recognizer.read(shot.frame)
        times.append(Date().timeIntervalSince(started) * 1000)
        guard let reading = result.reading else { notFound += 1; noRead += 1; continue }
        let keyMatches = reading.documentNumber.replacingOccurrences(of: "<", with: "") == sample.documentNumber.replacingOccurrences(of: "<", with: "")
            && reading.dateOfBirth == sample.dateOfBirth && reading.dateOfExpiry == sample.dateOfExpiry
        if reading.accessKeyValid {
            if keyMatches { keyRight += 1 } else {
                falseKey += 1
                print("FALSE KEY #\(index): read \(reading.lines) for \(sample.lines)")
            }
        } else {
            noRead += 1
            if arguments.contains("--verbose") { print("no read #\(index) \(format.rawValue): \(reading.lines) for \(sample.lines) checks \(reading.checkDigits) conf \(reading.confidence)") }
        }
        if !reading.valid, reading.accessKeyValid, arguments.contains("--verbose") { print("key but not valid #\(index): \(reading.lines) for \(sample.lines) conf \(reading.confidence)") }
        if reading.valid {
            valid += 1
            if reading.lines == sample.lines { exact += 1 } else {
                falseValid += 1
                print("FALSE VALID #\(index): read \(reading.lines) for \(sample.lines)")
            }
        }
    }
    times.sort()
    func pct(_ n: Int) -> String { String(format: "%.1f%%", Double(n) / Double(count) * 100) }
    print("\(tier) \(count): access key right \(pct(keyRight)), exact valid \(pct(exact)), valid \(pct(valid)), no read \(pct(noRead)) (zone not found \(notFound)), false keys \(falseKey), false valid \(falseValid), p50 \(Int(times[times.count / 2])) ms, p95 \(Int(times[times.count * 95 / 100])) ms")
case "vouch":
    // How far the number's cells lie from a drawn document's own 0s (`MRZDocumentPrint`), by what
    // they truly are: numbers of 0, O and a few others, small and tiny photographs, true cells.
    // `vouch [--count 400] [--seed 5]`.
    guard let recognizer = labRecognizer() else { print("no trained model"); exit(1) }
    let count = Int(option("--count") ?? "400") ?? 400, seed = UInt64(option("--seed") ?? "5") ?? 5
    let photographer = Photographer(renderer: try PageRenderer())
    var byTruth: [Character: [(spreads: Float, fromO: Float?)]] = [:]
    for index in 0..<count {
        var generator = SeededGenerator(seed: seed &* 1_000_003 &+ UInt64(index))
        let format = MRZFormat.allCases[index % MRZFormat.allCases.count]
        let sample = MRZSample(format: format, generator: &generator, numberAlphabet: "000OOO0O0DQ8B")
        let shot = photographer.shoot(sample, index % 2 == 0 ? .small : .tiny, generator: &generator)
        let gray = GrayImage(shot.frame)
        var generator2 = SeededGenerator(seed: 1)
        let truth = CellGeometry(lines: shot.cellCentres.map { Training.trueCells($0, capHeight: shot.capHeight, jitter: false, generator: &generator2) })
        let cells = truth.lines.map { recognizer.cellReadings(gray, $0) }
        guard let print = MRZDocumentPrint(format: format, scores: cells.map(\.probabilities), samples: cells.map(\.samples)) else { continue }
        let classes = MRZLayout.classes(format)
        for line in classes.indices {
            for position in classes[line].indices where classes[line][position] == .any {
                let p = cells[line].probabilities[position]
                guard p.indices.max(by: { p[$0] < p[$1] }) == MRZGlyph(Character("0")).index else { continue }
                byTruth[Array(sample.lines[line])[position], default: []].append(print.measure(cells[line].samples[position]))
            }
        }
    }
    for (character, measures) in byTruth.sorted(by: { $0.key < $1.key }) {
        let spreads = measures.map(\.spreads).sorted(), fromO = measures.compactMap(\.fromO).sorted()
        func q(_ values: [Float], _ f: Double) -> String { values.isEmpty ? "-" : String(format: "%.2f", values[min(values.count - 1, Int(Double(values.count) * f))]) }
        Swift.print("truth \(character), read 0: \(measures.count); spreads p5/p50/p95/max \(q(spreads, 0.05))/\(q(spreads, 0.5))/\(q(spreads, 0.95))/\(q(spreads, 1)); "
                    + "vouched at 1.0: \(spreads.filter { $0 <= 1 }.count); with an O: \(fromO.count), O/0 p5/p50 \(q(fromO, 0.05))/\(q(fromO, 0.5)), "
                    + "vouched with an O (spreads ≤ 1, O/0 ≥ 1.25): \(measures.filter { $0.spreads <= 1 && ($0.fromO ?? 0) >= 1.25 }.count); "
                    + "without an O, vouched at spreads ≤ 0.6/0.75/0.9/1: " + [0.6, 0.75, 0.9, 1].map { limit in
                        String(measures.filter { $0.fromO == nil && $0.spreads <= Float(limit) }.count) }.joined(separator: "/")
                    + " of \(measures.filter { $0.fromO == nil }.count)")
    }
case "analyze":
    // Why the benchmark's images are not read: its own seeds (`--tier-index` is the tier's place in
    // the bench's --tiers, 2 for hard in the default run), each failure put in one bin.
    guard let recognizer = labRecognizer() else { print("no trained model"); exit(1) }
    let tier = option("--tier") ?? "hard", count = Int(option("--count") ?? "200") ?? 200
    let seed = UInt64(option("--seed") ?? "9303") ?? 9303, tierIndex = Int(option("--tier-index") ?? "2") ?? 2
    let photographer = Photographer(renderer: try PageRenderer())
    var bins: [String: [Int]] = [:]
    var trueGeometryWouldRead = 0, trueCapWouldRead = 0
    for index in 0..<count {
        let shot = photographer.benchmarkShot(index: index, seed: seed, tierPlace: tierIndex, conditions: Photographer.Conditions(tier: tier))
        let (sample, format, gray) = (shot.sample, shot.sample.format, GrayImage(shot.frame))
        func keyRight(_ r: MRZReading) -> Bool {
            r.documentNumber == sample.documentNumber.replacingOccurrences(of: "<", with: "") && r.dateOfBirth == sample.dateOfBirth && r.dateOfExpiry == sample.dateOfExpiry
        }
        func differences(_ r: MRZReading) -> String {
            zip(r.lines, sample.lines).map { a, b in String(zip(a, b).map { $0 == $1 ? "." : $0 }) }.joined(separator: "|")
        }
        if arguments.contains("--caps") {
            // The located block's cap height against the truth's, blob and measured.
            if let h = MRZRecognizer.hypotheses(gray).first(where: { Training.matches($0.geometry, shot) }) {
                print(String(format: "caps %@ true %.2f measured/true %.3f", tier, shot.capHeight, h.geometry.lines[0][0].capHeight / shot.capHeight))
            }
            continue
        }
        if let reading = recognizer.read(gray).reading, reading.accessKeyValid, keyRight(reading) { continue }
        var generator2 = SeededGenerator(seed: 1)
        let truth = CellGeometry(lines: zip(shot.cellCentres, sample.lines).map { centres, _ in
            Training.trueCells(centres, capHeight: shot.capHeight, jitter: false, generator: &generator2)
        })
        let ideal = recognizer.readings(gray, truth).first { $0.format == format }
        if let ideal, ideal.accessKeyValid, keyRight(ideal) { trueGeometryWouldRead += 1 }
        let idealNote = ideal.map { "ideal key \($0.accessKeyValid) " + differences($0) } ?? "ideal none"
        let hypotheses = MRZRecognizer.hypotheses(gray).filter { $0.geometry.lines.count == format.lineCount && $0.geometry.lines[0].count == format.lineLength }
        let bin: String
        var note = ""
        if hypotheses.isEmpty {
            bin = "no zone"
        } else if let right = hypotheses.first(where: { Training.matches($0.geometry, shot) }) {
            let reading = recognizer.readings(gray, right.geometry).first { $0.format == format }
            // How far the located cells are from the true ones: along and across the line (pitches),
            // and the pitch and cap height against the truth's.
            var along: [Float] = [], acrossErrors: [Float] = [], pitchRatio: [Float] = [], capRatio: [Float] = []
            for (cells, ideal) in zip(right.geometry.lines, truth.lines) {
                for (cell, exact) in zip(cells, ideal) {
                    let dx = cell.x - exact.x, dy = cell.y - exact.y
                    along.append((dx * exact.along.x + dy * exact.along.y) / exact.pitch)
                    acrossErrors.append((-dx * exact.along.y + dy * exact.along.x) / exact.pitch)
                    pitchRatio.append(cell.pitch / exact.pitch)
                    capRatio.append(cell.capHeight / exact.capHeight)
                }
            }
            func summary(_ v: [Float]) -> String {
                let mean = v.reduce(0, +) / Float(max(1, v.count)), worst = v.map(abs).max() ?? 0
                return String(format: "%.2f/%.2f", mean, worst)
            }
            note += "cells along \(summary(along)) across \(summary(acrossErrors)) pitch \(summary(pitchRatio)) cap \(summary(capRatio)) "
            // The located cells with the true cap height: what a perfect cap measure would give.
            var trueCap = right.geometry
            for line in trueCap.lines.indices { for cell in trueCap.lines[line].indices { trueCap.lines[line][cell].capHeight = shot.capHeight } }
            if let r = recognizer.readings(gray, trueCap).first(where: { $0.format == format }), r.accessKeyValid, keyRight(r) {
                trueCapWouldRead += 1
                note += "[true cap reads] "
            }
            if let reading {
                let keyText = keyRight(reading)
                bin = keyText ? "refused (key read right)" : "misread"
                if keyText {
                    let byMinimum = recognizer.loosened(keyMinimum: 0).readings(gray, right.geometry).first { $0.format == format }?.accessKeyValid == true
                    let byRatio = recognizer.loosened(keyUndetectableRatio: 1).readings(gray, right.geometry).first { $0.format == format }?.accessKeyValid == true
                    let byBoth = recognizer.loosened(keyMinimum: 0, keyUndetectableRatio: 1).readings(gray, right.geometry).first { $0.format == format }?.accessKeyValid == true
                    note += "[minimum alone \(byMinimum), ratio alone \(byRatio), both \(byBoth)] "
                }
                note += "checks \(reading.checkDigits.filter { !$0.value }.keys.sorted()) conf \(String(format: "%.2f", reading.confidence)) " + differences(reading)
            } else { bin = "no decode" }
        } else {
            bin = "geometry"
            let errors = hypotheses.map { h in zip(h.geometry.lines, shot.cellCentres).map { cells, centres in
                zip(cells, centres).filter { cell, centre in ((cell.x - centre.x) * (cell.x - centre.x) + (cell.y - centre.y) * (cell.y - centre.y)).squareRoot() > 0.35 * cell.pitch }.count
            } }
            note = "cells off per line: \(errors.prefix(2))"
        }
        bins[bin, default: []].append(index)
        print("#\(index) \(format.rawValue) cap \(String(format: "%.1f", shot.capHeight)) [\(bin)] \(note)\n      \(idealNote)")
    }
    for (bin, indices) in bins.sorted(by: { $0.value.count > $1.value.count }) { print("\(bin): \(indices.count)") }
    print("of the failures, read right from the true cell positions: \(trueGeometryWouldRead); from the located cells with the true cap height: \(trueCapWouldRead)")
case "evidence":
    // Every reading whose key checks hold, with no threshold: right or wrong, and its evidence
    // (one line each, for sorting): what a verdict rule would let through.
    guard let recognizer = labRecognizer() else { print("no trained model"); exit(1) }
    let tier = option("--tier") ?? "hard", count = Int(option("--count") ?? "200") ?? 200
    let seed = UInt64(option("--seed") ?? "9303") ?? 9303, tierIndex = Int(option("--tier-index") ?? "2") ?? 2
    let photographer = Photographer(renderer: try PageRenderer())
    let lines = Mutex<[String]>([])
    let only = option("--only").flatMap { Int($0) }
    DispatchQueue.concurrentPerform(iterations: only == nil ? count : 1) { k in
        let index = only ?? k
        var conditions = Photographer.Conditions(tier: tier)
        conditions.mrzInFrame = !arguments.contains("--cut")
        let shot = photographer.benchmarkShot(index: index, seed: seed, tierPlace: tierIndex, conditions: conditions)
        let (sample, gray) = (shot.sample, GrayImage(shot.frame))
        if let path = option("--dump"), only != nil, let png = try? ImageCodecs.encodePNG(shot.frame) { try? Data(png).write(to: URL(fileURLWithPath: path)) }
        // One frame: each cell's character and its contrast over the line's median.
        if only != nil, let h = MRZRecognizer.hypotheses(gray).first(where: { Training.matches($0.geometry, shot) }) {
            for (line, cells) in zip(sample.lines, h.geometry.lines) {
                print(zip(line, CellSampler.contrastRatios(gray, cells)).map { "\($0)\(String(format: "%.2f", $1))" }.joined(separator: " "))
            }
        }
        guard let (r, e) = recognizer.bestEvidence(gray) else { return }
        let right = r.documentNumber == sample.documentNumber.replacingOccurrences(of: "<", with: "") && r.dateOfBirth == sample.dateOfBirth && r.dateOfExpiry == sample.dateOfExpiry
        let figures = [e.minimumProbability, e.twinRatio, e.rival] + e.posteriors + [e.dimmestContrast, e.dimMinimumProbability, e.secondLeastInGroup, e.secondForeignInGroup]
        let detail = right ? "" : " read \(r.lines) for \(sample.lines) corrections \(r.corrections) normal read: \(recognizer.read(gray).reading.map { "\($0.lines) key \($0.accessKeyValid)" } ?? "none")"
        lines.withLock { $0.append("\(right ? "right" : "WRONG") #\(index) \(r.accessKeyValid ? "accepted" : "refused") " + figures.map { String(format: "%.4f", $0) }.joined(separator: " ") + detail) }
    }
    print("right/wrong #index verdict minP twinRatio rival posterior@" + MRZKeyEvidence.temperatures.map { "\($0)" }.joined(separator: ",")
          + " dimmestContrast dimMinP secondLeastInGroup secondForeignInGroup")
    for line in lines.withLock({ $0 }).sorted() { print(line) }
case "train":
    // swift run -c release gbgbridge-mrz-lab train [--shots 3000] [--hidden 128] [--epochs 16] [--seed 2027] [--cap-jitter 0.05]
    //     [--real-copies 2] [--small-copies N (default: --real-copies)] [--foreign-every 4] [--out Sources/MRZ/Resources]
    let shots = Int(option("--shots") ?? "3000") ?? 3000, hidden = Int(option("--hidden") ?? "128") ?? 128
    let epochs = Int(option("--epochs") ?? "16") ?? 16, seed = UInt64(option("--seed") ?? "2027") ?? 2027
    let realCopies = Int(option("--real-copies") ?? "2") ?? 2
    let smallCopies = Int(option("--small-copies") ?? "\(realCopies)") ?? realCopies
    let started = Date()
    let capJitter = Float(option("--cap-jitter") ?? "0.05") ?? 0.05
    let foreignEvery = Int(option("--foreign-every") ?? "4") ?? 4
    var synthetic = try Training.examples(shots: shots, seed: seed, capJitter: capJitter, foreignEvery: foreignEvery)
    // A tenth of the synthetic cells held out: half to say how well it generalizes, half (with the
    // real lines' calibration part) to fit the temperature on.
    var generator = SeededGenerator(seed: seed ^ 0xA5A5)
    synthetic.shuffle(using: &generator)
    let held = synthetic.count / 10
    let heldSynthetic = Array(synthetic.prefix(held))
    var training = Array(synthetic.dropFirst(held))
    // Real lines: the training part taught (twice over: they are fewer), the calibration part
    // fitted on, the measurement part only reported (the benchmark's real tier reads it).
    var realCalibration: [Training.Example] = [], realMeasurement: [Training.Example] = []
    if let real = try? RealLines(), let current = GlyphClassifier.standard {
        let realTraining = Training.realExamples(real, part: .training, classifier: current)
        for _ in 0..<realCopies { training += realTraining.asPrinted }
        for _ in 0..<smallCopies { training += realTraining.small }
        realCalibration = Training.realExamples(real, part: .calibration, classifier: current).all
        realMeasurement = Training.realExamples(real, part: .measurement, classifier: current).all
    } else {
        print("real lines: not there (../shared/fixtures/mrz-real-lines); trained on synthetic cells alone")
    }
    training.shuffle(using: &generator)
    var model = Training.train(training, hidden: hidden, epochs: epochs, seed: seed)
    let half = heldSynthetic.count / 2
    let accuracy = Training.calibration(model, Array(heldSynthetic.prefix(half)), temperature: 1).accuracy
    print("held-out synthetic accuracy \(accuracy) on \(half) cells; \(Int(Date().timeIntervalSince(started))) s")
    let calibrationSet = Array(heldSynthetic.dropFirst(half)) + realCalibration
    let temperature = Training.fitTemperature(model, calibrationSet)
    var figures: [String] = []
    for (name, set) in [("synthetic held out", Array(heldSynthetic.prefix(half))), ("real, calibration part", realCalibration),
                        ("real, measurement part", realMeasurement)] where !set.isEmpty {
        let before = Training.calibration(model, set, temperature: 1), after = Training.calibration(model, set, temperature: temperature)
        let line = "\(name) (\(set.count) cells): accuracy \(String(format: "%.4f", before.accuracy)), calibration error "
            + "\(String(format: "%.4f", before.ece)) → \(String(format: "%.4f", after.ece))"
        print(line)
        figures.append(line)
    }
    print("temperature \(temperature)")
    model.temperature = temperature
    let note = "\(shots) photographs (seed \(seed)), every \(foreignEvery)th with other fonts' glyphs, \(training.count) training cells (real lines' training part \(realCopies)×, at 5–7-pixel pitches \(smallCopies)×), "
        + "cap-height jitter \(capJitter), \(hidden) hidden units, \(Training.classes) outputs, \(epochs) epochs, "
        + "held-out synthetic accuracy \(String(format: "%.4f", accuracy)); temperature \(String(format: "%.3f", temperature)); "
        + figures.joined(separator: "; ")
    try Training.write(model, note: note, to: option("--out") ?? "Sources/MRZ/Resources")
default:
    print("usage: gbgbridge-mrz-lab samples DIR [--tier scan|kiosk|hard] [--count N] [--seed S]")
    print("       gbgbridge-mrz-lab train [--shots N] [--hidden H] [--epochs E] [--seed S] [--cap-jitter SD] [--out DIR]")
    exit(2)
}
