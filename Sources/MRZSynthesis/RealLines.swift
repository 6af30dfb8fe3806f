import Foundation
import ImageCodecs
import MRZ

/// MRZ lines cropped from photographs and scans of real documents (`../shared/fixtures/mrz-real-lines`:
/// one binarised PNG a line, its text and its source image in `lines.tsv`), split by *document*
/// into a part the classifier may be trained on and a part kept for measuring only — never a
/// document on both sides. Real print, real photographs: what no generator of ours draws.
public struct RealLines: Sendable {
    public struct Line: Sendable {
        /// The PNG's path.
        public var path: String
        /// The characters on the crop (some crops are partial: shorter than a full line).
        public var text: String
        /// The source image the line was cut from, and the line's place in it (`…-0`, `…-1`).
        public var document: String
        public var place: Int
        /// Rendered by tesseractMRZ's font generator (`font_generate_*`) rather than photographed:
        /// another hand's synthetic lines, reported apart from the photographed ones.
        public var generated: Bool { document.hasPrefix("font_generate") }
        /// Kept for measuring only (`RealLines.isHeldOut`).
        public var heldOut: Bool { RealLines.isHeldOut(document: document) }
    }

    public let directory: String
    public let lines: [Line]

    /// `../shared/fixtures/mrz-real-lines` next to the checkout this file was built from.
    public static let defaultDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/fixtures/mrz-real-lines").path

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(directory: String = RealLines.defaultDirectory) throws {
        self.directory = directory
        let index = directory + "/lines.tsv"
        guard let data = FileManager.default.contents(atPath: index) else {
            throw Failure(description: "\(index) is not there (the real MRZ lines are in ../shared/fixtures, outside this repository)")
        }
        var lines: [Line] = []
        for row in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = row.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 3 else { continue }
            // "photo.jpg-1": the document and the line's place in it.
            let source = fields[2]
            var document = source, place = 0
            if let dash = source.lastIndex(of: "-"), let number = Int(source[source.index(after: dash)...]) {
                document = String(source[..<dash])
                place = number
            }
            lines.append(Line(path: directory + "/" + fields[0], text: fields[1], document: document, place: place))
        }
        self.lines = lines
    }

    /// Whether a document's lines are kept for measuring: 40 % of the documents, chosen by a hash of
    /// the document's name (FNV-1a), so the split is the same on every machine and never depends on
    /// which other documents are there.
    public static func isHeldOut(document: String) -> Bool {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in document.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash % 10 < 4
    }

    /// A line's crop as a grey image.
    public static func image(_ line: Line) throws -> GrayImage {
        guard let data = FileManager.default.contents(atPath: line.path) else { throw Failure(description: "cannot read \(line.path)") }
        return GrayImage(try ImageCodecs.decodePNG(Array(data)))
    }

    /// The full lines of a document, in order, when they make up a whole MRZ (two lines of 44 or
    /// 36, three of 30), keyed by document.
    public func wholeZones(heldOut: Bool) -> [[Line]] {
        let byDocument = Dictionary(grouping: lines.filter { $0.heldOut == heldOut }, by: \.document)
        return byDocument.keys.sorted().compactMap { document in
            let zone = (byDocument[document] ?? []).sorted { $0.place < $1.place }
            let lengths = zone.map(\.text.count)
            guard lengths == [44, 44] || lengths == [36, 36] || lengths == [30, 30, 30] else { return nil }
            return zone
        }
    }
}

/// Zones made of real lines: a real line under (or over) lines drawn in OCR-B at its pitch and
/// cap height, or a document's own real lines stacked — on white, as a scan of the zone.
public enum RealZone {
    /// The ink's box in a crop (darker than half-way between its darkest and brightest).
    static func inkBox(_ image: GrayImage) -> (x0: Int, y0: Int, x1: Int, y1: Int)? {
        guard let low = image.pixels.min(), let high = image.pixels.max(), high > low &+ 40 else { return nil }
        let threshold = (Int(low) + Int(high)) / 2
        var x0 = image.width, y0 = image.height, x1 = -1, y1 = -1
        for y in 0..<image.height {
            for x in 0..<image.width where Int(image.pixels[y * image.width + x]) < threshold {
                x0 = min(x0, x); x1 = max(x1, x); y0 = min(y0, y); y1 = max(y1, y)
            }
        }
        return x1 >= x0 ? (x0, y0, x1, y1) : nil
    }

    /// A line's pitch and cap height, from its ink's box and its length (OCR-B's glyphs are about
    /// 0.7 of the pitch wide; the box's height is a capital's, or a little more with a `Q` or `J`).
    public static func metrics(_ image: GrayImage, length: Int) -> (pitch: Float, capHeight: Float, left: Float, baseline: Float)? {
        guard length > 1, let box = inkBox(image) else { return nil }
        let pitch = Float(box.x1 - box.x0 + 1) / (Float(length) - 0.3)
        let capHeight = Float(box.y1 - box.y0 + 1) * 0.96
        return (pitch, capHeight, Float(box.x0) - 0.15 * pitch, Float(box.y1 + 1))
    }

    /// One row of the zone: a real crop, or text to draw at the real lines' pitch.
    public enum Row {
        case real(GrayImage)
        case drawn(String)
    }

    /// The rows stacked on white, one line pitch (1.65 character pitches, as ICAO 9303 spaces
    /// them) apart, a margin of two cap heights round them; drawn rows binarised like the crops.
    /// Nil when no real row gives the pitch.
    public static func compose(_ rows: [Row], length: Int) -> GrayImage? {
        var reference: (pitch: Float, capHeight: Float, left: Float, baseline: Float)?
        for case .real(let image) in rows { reference = reference ?? metrics(image, length: length) }
        guard let reference else { return nil }
        let linePitch = 1.65 * reference.pitch
        let margin = Int(2 * reference.capHeight)
        let realWidths = rows.compactMap { row -> Int? in if case .real(let image) = row { return image.width } else { return nil } }
        let width = max(realWidths.max() ?? 0, Int(reference.left + Float(length) * reference.pitch) + 4) + 2 * margin
        let height = Int(Float(rows.count - 1) * linePitch + 2 * reference.capHeight) + 2 * margin
        var pixels = [UInt8](repeating: 255, count: width * height)
        for (index, row) in rows.enumerated() {
            let baseline = Float(margin) + reference.capHeight * 1.2 + Float(index) * linePitch
            switch row {
            case .real(let image):
                guard let own = metrics(image, length: length) else { continue }
                let dx = margin + Int(reference.left - own.left), dy = Int(baseline - own.baseline)
                for y in 0..<image.height where y + dy >= 0 && y + dy < height {
                    for x in 0..<image.width where x + dx >= 0 && x + dx < width {
                        pixels[(y + dy) * width + x + dx] = min(pixels[(y + dy) * width + x + dx], image.pixels[y * image.width + x])
                    }
                }
            case .drawn(let text):
                OCRBGlyphs.draw(text, x: Float(margin) + reference.left, baseline: baseline, capHeight: reference.capHeight,
                                pitch: reference.pitch) { x, y, coverage in
                    guard x >= 0, y >= 0, x < width, y < height, coverage > 0.5 else { return }
                    pixels[y * width + x] = 0
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: pixels)
    }

    /// The image `factor` times as large (bilinear), for the smaller real-tier variant.
    public static func scaled(_ image: GrayImage, by factor: Float) -> GrayImage {
        let width = max(1, Int(Float(image.width) * factor)), height = max(1, Int(Float(image.height) * factor))
        var pixels = [UInt8](repeating: 0, count: width * height)
        // Area-averaged when shrinking, so thin strokes fade rather than vanish.
        let taps = max(1, Int((1 / factor).rounded(.up)))
        for y in 0..<height {
            for x in 0..<width {
                var sum: Float = 0
                for ty in 0..<taps {
                    for tx in 0..<taps {
                        let sx = (Float(x) + (Float(tx) + 0.5) / Float(taps)) / factor, sy = (Float(y) + (Float(ty) + 0.5) / Float(taps)) / factor
                        sum += image.sample(sx, sy)
                    }
                }
                pixels[y * width + x] = UInt8(max(0, min(255, sum / Float(taps * taps))))
            }
        }
        return GrayImage(width: width, height: height, pixels: pixels)
    }
}

extension RealLines {
    /// A zone to read and what reading it should give.
    public struct Case: Sendable {
        public enum Kind: String, Sendable, CaseIterable {
            /// A document's own lines, stacked.
            case document
            /// A photographed line 2 (with the key, or a TD1's dates) under drawn lines.
            case photographedLine = "photographed line"
            /// A line of tesseractMRZ's font generator under drawn lines.
            case generatedLine = "generated line"
        }
        public var kind: Kind
        public var image: GrayImage
        /// The zone's text, lines in order; the real line's place in it.
        public var truth: [String]
        public var realLine: Int?
        /// The real lines it was made from (their files).
        public var files: [String]
        /// Whether the printed key's check digits hold: a specimen with wrong ones must get no key.
        public var keyHolds: Bool
        public var truthReading: MRZReading
    }

    /// Drawn lines to go with a real one: a TD3/MRV-A or TD2/MRV-B first line, a TD1's first and
    /// third.
    static let drawnTD3 = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<"
    static let drawnMRVA = "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<"
    static let drawnTD2 = "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<"
    static let drawnMRVB = "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<"
    static let drawnTD1First = "I<UTOD231458907<<<<<<<<<<<<<<<"
    static let drawnTD1Third = "ERIKSSON<<ANNA<MARIA<<<<<<<<<<"

    /// Whether `text` is the line that holds a two-line format's key (TD3/TD2/visa line 2), or a
    /// TD1's second line (dates, sex, nationality).
    static func isKeyLine(_ text: String) -> Bool {
        let c = Array(text)
        func dateLike(_ range: Range<Int>) -> Bool { range.allSatisfy { c[$0].isNumber || c[$0] == "<" } }
        switch c.count {
        case 44, 36: return dateLike(13..<19) && dateLike(21..<27) && "MFX<".contains(c[20])
        case 30: return dateLike(0..<6) && dateLike(8..<14) && "MFX<".contains(c[7])
        default: return false
        }
    }

    /// The zones of the real tier: every whole document kept for measuring, and every full key
    /// line kept for measuring under drawn lines (photographed and generated apart).
    public func cases(heldOut: Bool = true) -> [Case] {
        var cases: [Case] = []
        for zone in wholeZones(heldOut: heldOut) {
            guard let images = try? zone.map(RealLines.image), let truth = MRZReading(text: zone.map(\.text)),
                  let image = RealZone.compose(images.map { .real($0) }, length: zone[0].text.count) else { continue }
            cases.append(Case(kind: .document, image: image, truth: zone.map(\.text), realLine: nil, files: zone.map(\.path),
                              keyHolds: truth.accessKeyValid, truthReading: truth))
        }
        for line in lines where line.heldOut == heldOut && Self.isKeyLine(line.text) {
            guard let real = try? RealLines.image(line) else { continue }
            let options: [(rows: [String?], place: Int)]
            switch line.text.count {
            case 44: options = [([Self.drawnTD3, nil], 1), ([Self.drawnMRVA, nil], 1)]
            case 36: options = [([Self.drawnTD2, nil], 1), ([Self.drawnMRVB, nil], 1)]
            default: options = [([Self.drawnTD1First, nil, Self.drawnTD1Third], 1)]
            }
            // The drawn first line whose format the real line's check digits fit best (a visa's
            // line 2 has no composite).
            let readings = options.compactMap { option -> (rows: [String?], place: Int, truth: [String], reading: MRZReading)? in
                let truth = option.rows.map { $0 ?? line.text }
                return MRZReading(text: truth).map { (option.rows, option.place, truth, $0) }
            }
            guard let best = readings.max(by: { a, b in
                (a.reading.accessKeyValid ? 1 : 0, a.reading.checkDigits.values.filter { $0 }.count)
                    < (b.reading.accessKeyValid ? 1 : 0, b.reading.checkDigits.values.filter { $0 }.count)
            }), let image = RealZone.compose(best.rows.map { $0.map(RealZone.Row.drawn) ?? .real(real) }, length: line.text.count) else { continue }
            cases.append(Case(kind: line.generated ? .generatedLine : .photographedLine, image: image, truth: best.truth, realLine: best.place,
                              files: [line.path], keyHolds: best.reading.accessKeyValid, truthReading: best.reading))
        }
        return cases
    }
}

extension GrayImage {
    /// The grey image as RGB (to write it as a PNG, or read it as a photo).
    public var rgb: ImageCodecs.RGBImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for index in 0..<(width * height) {
            let value = self.pixels[index]
            pixels[index * 3] = value; pixels[index * 3 + 1] = value; pixels[index * 3 + 2] = value
        }
        return ImageCodecs.RGBImage(width: width, height: height, pixels: pixels)
    }
}
