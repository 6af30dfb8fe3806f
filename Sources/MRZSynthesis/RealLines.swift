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
        /// Which part of the split the line's document is in (`RealLines.part`).
        public var part: Part { RealLines.part(document: document) }
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
            lines.append(Line(path: directory + "/" + fields[0], text: Self.corrections[fields[0]] ?? fields[1], document: document, place: place))
        }
        self.lines = lines
    }

    /// Texts of the collection that are not what the crop shows, found when the benchmark reported
    /// a "false key" whose check digits held where the text's did not, and looked at: the printed
    /// characters are the ones the check digits accept.
    static let corrections = [
        // A Hungarian passport: `BA00050149`, every character of the number a zero-shaped 0 (the
        // text had the letter O at the 7th, and its check digit 9 fails with it).
        "00105.png": "BA00050149HUN7802225F1609204<<<<<<<<<<<<<<08",
        // A French passport: `60RF16629` (a worn 0 the text read as D) and the expiry `220216` (a 0
        // the text read as D in a date).
        "03353.png": "60RF166290FRA7703230M2202163<<<<<<<<<<<<<<06",
        // Canada's specimen: MARTIN SARAH, passport AB504963 (the text had `RARIIN`, and `AB304963`
        // with the letter O as its check digit; the crop shows 5 and 0, and the digit 0 holds).
        "00154.png": "P<CANMARTIN<<SARAH<<<<<<<<<<<<<<<<<<<<<<<<<<",
        "00155.png": "AB504963<0CAN8501019F1502110<<<<<<<<<<<<<<04",
    ]

    /// The three parts of the split, by document: never a document in two of them.
    public enum Part: String, Sendable, CaseIterable {
        /// 60 %: the classifier is trained on these.
        case training
        /// 10 %: its temperature is fitted on these (one number, `GlyphModel.temperature`).
        case calibration
        /// 30 %: measured only — the benchmark's `real` tier; nothing is trained or tuned on them.
        case measurement
    }

    /// A document's part, by a hash of its name (FNV-1a), so the split is the same on every
    /// machine and never depends on which other documents are there.
    public static func part(document: String) -> Part {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in document.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        switch hash % 10 {
        case 0..<3: return .measurement
        case 3: return .calibration
        default: return .training
        }
    }

    /// A line's crop as a grey image.
    public static func image(_ line: Line) throws -> GrayImage {
        guard let data = FileManager.default.contents(atPath: line.path) else { throw Failure(description: "cannot read \(line.path)") }
        return GrayImage(try ImageCodecs.decodePNG(Array(data)))
    }

    /// The full lines of a document, in order, when they make up a whole MRZ (two lines of 44 or
    /// 36, three of 30), keyed by document.
    public func wholeZones(_ part: Part) -> [[Line]] {
        let byDocument = Dictionary(grouping: lines.filter { $0.part == part }, by: \.document)
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
    /// A line's pitch, cap height, where its first cell starts and its baseline, measured on its
    /// blobs (`MRZRecognizer.lineMetrics`).
    public static func metrics(_ image: GrayImage, length: Int) -> (pitch: Float, capHeight: Float, left: Float, baseline: Float)? {
        guard let m = MRZRecognizer.lineMetrics(image) else { return nil }
        return (m.pitch, m.capHeight, m.firstCentre - m.pitch / 2, m.baseline)
    }

    /// One row of the zone: a real crop, or text to draw at the real lines' pitch.
    public enum Row {
        case real(GrayImage)
        case drawn(String)
    }

    /// The rows stacked on white, one line pitch (1.65 character pitches, as ICAO 9303 spaces
    /// them) apart, a margin of two cap heights round them; drawn rows binarised like the crops.
    /// Nil when no real row gives the pitch.
    /// With no real row, `drawnPitch` and `capHeight` give the size.
    public static func compose(_ rows: [Row], length: Int, drawnPitch: Float? = nil, capHeight: Float? = nil) -> GrayImage? {
        // Each real row at the first one's pitch (the crops were each scaled to about the same
        // height, so one document's lines come at different pitches).
        var reference: (pitch: Float, capHeight: Float, left: Float, baseline: Float)?
        var scaledRows: [Row] = []
        for row in rows {
            guard case .real(let image) = row, let own = metrics(image, length: length) else { scaledRows.append(row); continue }
            guard let first = reference else {
                reference = own
                scaledRows.append(row)
                continue
            }
            let factor = first.pitch / own.pitch
            scaledRows.append(.real(abs(factor - 1) < 0.01 ? image : scaled(image, by: factor)))
        }
        if reference == nil, let drawnPitch, let capHeight { reference = (drawnPitch, capHeight, 0, 0) }
        guard let reference else { return nil }
        let linePitch = 1.65 * reference.pitch
        let margin = Int(2 * reference.capHeight)
        let realWidths = scaledRows.compactMap { row -> Int? in if case .real(let image) = row { return image.width } else { return nil } }
        let width = max(realWidths.max() ?? 0, Int(Float(length + 1) * reference.pitch)) + 2 * margin
        let height = Int(Float(rows.count - 1) * linePitch + 2 * reference.capHeight) + 2 * margin
        var pixels = [UInt8](repeating: 255, count: width * height)
        for (index, row) in scaledRows.enumerated() {
            let baseline = Float(margin) + reference.capHeight * 1.2 + Float(index) * linePitch
            switch row {
            case .real(let image):
                guard let own = metrics(image, length: length) else { continue }
                let dx = margin - Int(own.left.rounded()), dy = Int((baseline - own.baseline).rounded())
                for y in 0..<image.height where y + dy >= 0 && y + dy < height {
                    for x in 0..<image.width where x + dx >= 0 && x + dx < width {
                        pixels[(y + dy) * width + x + dx] = min(pixels[(y + dy) * width + x + dx], image.pixels[y * image.width + x])
                    }
                }
            case .drawn(let text):
                OCRBGlyphs.draw(text, x: Float(margin), baseline: baseline, capHeight: reference.capHeight, pitch: reference.pitch) { x, y, coverage in
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

    /// The zones of one part: every whole document, and every full key line under drawn lines
    /// (photographed and generated apart). The benchmark's `real` tier is the measurement part.
    public func cases(_ part: Part = .measurement) -> [Case] {
        var cases: [Case] = []
        for zone in wholeZones(part) {
            guard let images = try? zone.map(RealLines.image), let truth = MRZReading(text: zone.map(\.text)),
                  let image = RealZone.compose(images.map { .real($0) }, length: zone[0].text.count) else { continue }
            cases.append(Case(kind: .document, image: image, truth: zone.map(\.text), realLine: nil, files: zone.map(\.path),
                              keyHolds: truth.accessKeyValid, truthReading: truth))
        }
        for line in lines where line.part == part && Self.isKeyLine(line.text) {
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
