import Foundation
import ImageCodecs
import MRZSynthesis
import TestSupport
import TestTraits
import Testing
@testable import MRZ

/// The reader on photographs made here (a small, seeded set: the full corpus is the benchmark's),
/// on ICAO's specimens drawn onto a page, and on images that are hostile or hold no MRZ at all.
@Suite("MRZ reader: generated photographs, specimens, hostile images")
struct MRZRecognizerTests {
    static let photographer: Photographer? = try? Photographer(renderer: PageRenderer())
    static let recognizer = MRZRecognizer()

    /// Recognition in a debug build takes seconds an image. It runs on one serial queue of its own,
    /// never on the cooperative pool: on a 2-core CI machine these tests held both of the pool's
    /// threads for over a minute, and the in-process chip reads of other suites, starved, ran into
    /// their 60-second limit.
    static let work = DispatchQueue(label: "MRZRecognizerTests", qos: .utility)

    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            work.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Reads `count` photographs of a tier; returns how many gave the right access key, and fails
    /// on any access key or MRZ claimed valid that is wrong.
    static func run(_ conditions: Photographer.Conditions, count: Int, seed: UInt64) async throws -> Int {
        let photographer = try #require(photographer, "the OCR-B and DejaVu fonts (fonts-ocr-b, fonts-dejavu-core) are needed")
        let recognizer = try #require(recognizer, "no trained glyph model")
        let results = try await offPool { () -> [(MRZSample, MRZReading?)] in
            var generator = SeededGenerator(state: seed)
            return (0..<count).map { index in
                let sample = MRZSample(format: MRZFormat.allCases[index % MRZFormat.allCases.count], generator: &generator)
                let shot = photographer.shoot(sample, conditions, generator: &generator)
                return (sample, recognizer.read(shot.frame).reading)
            }
        }
        var right = 0
        for (index, (sample, reading)) in results.enumerated() {
            guard let reading else { continue }
            if reading.accessKeyValid {
                #expect(reading.documentNumber == sample.documentNumber.replacingOccurrences(of: "<", with: "")
                        && reading.dateOfBirth == sample.dateOfBirth && reading.dateOfExpiry == sample.dateOfExpiry,
                        "a wrong access key claimed valid (seed \(seed), #\(index)): \(reading.lines) for \(sample.lines)")
                right += 1
            }
            if reading.valid {
                #expect(reading.lines == sample.lines, "a wrong MRZ claimed valid (seed \(seed), #\(index)): \(reading.lines) for \(sample.lines)")
            }
        }
        return right
    }

    @Test("kiosk photographs: every access key read, none wrong")
    func kiosk() async throws {
        #expect(try await Self.run(.kiosk, count: 8, seed: 31) == 8)
    }

    @Test("flat scans: every access key read")
    func scans() async throws {
        #expect(try await Self.run(.scan, count: 4, seed: 32) == 4)
    }

    @Test("hard photographs (±15°, glare, 12-pixel characters, upside down): most read, none wrong")
    func hard() async throws {
        #expect(try await Self.run(.hard, count: 8, seed: 33) >= 6)
    }

    /// The false accepts the benchmark found, each made again from its seed (the bench's
    /// `seed + index × 104729 + tier's place << 40`):
    /// - `--tiers hard --only 138`: `301106970` claimed as `3O1104970`, every check digit holding
    ///   (MRZDecoderTests has the same case as probabilities);
    /// - `--seed 4242 --only 591` (hard the third tier): an MRV-B whose second line runs off the
    ///   frame's bottom edge; the `B` cut in half read as `M` with 0.999, a correction turned an
    ///   `I` into a `1` that compensated, and `BMXCGI3JD` came out `MMXCG13JD`, check digit holding
    ///   (MRV-B has no composite). Characters cut by the frame are not read now.
    /// - `--seed 6161 --only 1449` and `--only 350` (the zone in the frame): `TKX273N8O` read
    ///   `T<X273N8O` (a twin at 0.17 of the `K`), and a TD1 whose first line was read one cell late
    ///   with a correction making its check digits hold.
    static let falseAccepts: [(seed: UInt64, index: Int, tier: Int, documentNumber: String, inFrame: Bool)] = [
        (9303, 138, 0, "301106970", false),
        (4242, 591, 2, "BMXCGI3JD", false),
        (6161, 1449, 2, "TKX273N8O", true),
        (6161, 350, 2, "655975832", true),
        // Glare over `FO` of a TD1's number: the F at a quarter of the line's contrast, stretched
        // by a cell-by-cell ink level to look as dark as its neighbours, read `Y`; the O, blurred,
        // `D`, and the two compensated in the check digit (a normalization tried 2026-11-26).
        (8181, 770, 2, "MSDVOYFO8", true),
        // A TD1's nationality `NLD` read `NLR` with confidence by a classifier trained with a wider
        // spread of cap heights (tried 2026-11-26, not kept): no check digit covers it.
        (9303, 145, 0, "Z52LFW7TN", true),
        // A visa's birth date `0610205` read `061<205` (a `0` as a filler: the check digit counts
        // both 0), twin and rival ratios passing: only the 0.3 minimum elsewhere in the key refused
        // it, until a filler inside a part of a date stopped being a date (2026-11-26).
        (7777, 808, 2, "GJ3PRQ1KA", true),
        // False `valid`s on a fresh seed (`--seed 3131 --tiers hard`): a TD2's `ITA` read `ITX`
        // (no state has that code); and two read at a cap height chosen again, which no longer
        // earns `valid` — an MRV-B's optional `W` read `L`, a TD1's `KRISTIAN` read `KRISIIAN`.
        (3131, 801, 0, "F1FFGDRHV", true),
        (3131, 919, 0, "131339129", true),
        (3131, 1385, 0, "800574495", true),
    ]

    @Test("the benchmark's false accepts, photographed again: no wrong key, no wrong MRZ", arguments: falseAccepts.indices)
    func benchmarkFalseAccept(case number: Int) async throws {
        let photographer = try #require(Self.photographer)
        let recognizer = try #require(Self.recognizer)
        let found = Self.falseAccepts[number]
        // As the bench made it then (before 2026-11-26 the zone was not kept in the frame).
        var conditions = Photographer.Conditions.hard
        conditions.mrzInFrame = found.inFrame
        let shot = photographer.benchmarkShot(index: found.index, seed: found.seed, tierPlace: found.tier, conditions: conditions)
        let (sample, frame) = (shot.sample, shot.frame)
        #expect(sample.documentNumber == found.documentNumber, "the bench's image \(found.index) is not the one this test is about")
        let reading = try await Self.offPool { recognizer.read(frame).reading }
        if let reading, reading.accessKeyValid {
            #expect(reading.documentNumber == found.documentNumber && reading.dateOfBirth == sample.dateOfBirth && reading.dateOfExpiry == sample.dateOfExpiry,
                    "a wrong access key claimed valid: \(reading.lines)")
        }
        if let reading, reading.valid { #expect(reading.lines == sample.lines) }
    }

    @Test("a photo cropped tight round the zone (a pixel or two of paper) reads in full, every format", arguments: MRZFormat.allCases)
    func tightCrop(format: MRZFormat) async throws {
        let photographer = try #require(Self.photographer)
        let recognizer = try #require(Self.recognizer)
        var generator = SeededGenerator(state: 404 + UInt64(format.lineLength))
        let sample = MRZSample(format: format, generator: &generator)
        let shot = photographer.shoot(sample, .scan, generator: &generator)
        let centres = shot.cellCentres.flatMap { $0 }
        let pitch = (shot.cellCentres[0][format.lineLength - 1].x - shot.cellCentres[0][0].x) / Float(format.lineLength - 1)
        let x0 = Int((centres.map(\.x).min() ?? 0) - 0.45 * pitch), x1 = Int((centres.map(\.x).max() ?? 0) + 0.45 * pitch)
        let y0 = Int((centres.map(\.y).min() ?? 0) - 0.58 * shot.capHeight), y1 = Int((centres.map(\.y).max() ?? 0) + 0.58 * shot.capHeight)
        let frame = shot.frame
        var pixels: [UInt8] = []
        for y in max(0, y0)..<min(frame.height, y1) {
            let row = (y * frame.width + max(0, x0)) * 3
            pixels += frame.pixels[row..<(row + (min(frame.width, x1) - max(0, x0)) * 3)]
        }
        let crop = ImageCodecs.RGBImage(width: min(frame.width, x1) - max(0, x0), height: min(frame.height, y1) - max(0, y0), pixels: pixels)
        let reading = try #require(try await Self.offPool { recognizer.read(crop).reading }, "nothing read from a \(crop.width)×\(crop.height) crop")
        #expect(reading.lines == sample.lines && reading.accessKeyValid && reading.valid, "read \(reading.lines) for \(sample.lines)")
    }

    @Test("a character cut by the frame's edge is not read: every glyph as likely, and faint")
    func cutByTheEdge() throws {
        let recognizer = try #require(Self.recognizer)
        let gray = GrayImage(width: 100, height: 40, pixels: [UInt8](repeating: 200, count: 4000))
        let inside = CellGeometry.Cell(x: 50, y: 20, along: (1, 0), pitch: 10, capHeight: 14)
        var cut = inside
        cut.y = 38  // half the glyph below the bottom row
        #expect(CellSampler.inside(gray, inside) && !CellSampler.inside(gray, cut))
        let probabilities = recognizer.probabilities(gray, [inside, cut])
        #expect(probabilities[1].allSatisfy { abs($0 - 1 / Float(MRZGlyph.count)) < 1e-6 })
        #expect(CellSampler.faint(gray, [inside, cut]) == [false, true])
    }

    @Test("ICAO 9303's specimens drawn onto a page read exactly, every format", arguments: MRZDecoderTests.specimens.indices)
    func specimens(index: Int) async throws {
        let photographer = try #require(Self.photographer)
        let recognizer = try #require(Self.recognizer)
        let (format, lines) = MRZDecoderTests.specimens[index]
        let key = MRZDecoderTests.keyFields(format, lines)
        let sample = MRZSample(lines: lines, format: format, documentNumber: key.0, dateOfBirth: key.1, dateOfExpiry: key.2)
        var generator = SeededGenerator(state: 9303 + UInt64(index))
        let frame = photographer.shoot(sample, .kiosk, generator: &generator).frame
        let reading = try #require(try await Self.offPool { recognizer.read(frame).reading })
        #expect(reading.format == format && reading.lines == lines && reading.valid)
    }

    /// A real document of `../shared/fixtures/mrz-real-documents` (PNG or JPEG), decoded.
    static func realDocument(_ name: String) throws -> ImageCodecs.RGBImage {
        let bytes = Array(try Data(contentsOf: TestFixtures.sharedURL("mrz-real-documents/\(name)")))
        return name.hasSuffix(".png") ? try ImageCodecs.decodePNG(bytes) : try ImageCodecs.decodeJPEG(bytes)
    }

    @Test("a page on its side (turned a quarter either way) reads as it does upright, every format", arguments: MRZFormat.allCases)
    func onItsSide(format: MRZFormat) async throws {
        let photographer = try #require(Self.photographer)
        let recognizer = try #require(Self.recognizer)
        var generator = SeededGenerator(state: 90 + UInt64(format.lineLength))
        let sample = MRZSample(format: format, generator: &generator)
        let frame = photographer.shoot(sample, .scan, generator: &generator).frame
        for clockwise in [true, false] {
            let reading = try #require(try await Self.offPool { recognizer.read(frame.turnedQuarter(clockwise: clockwise)).reading },
                                       "nothing read turned \(clockwise ? "clockwise" : "anticlockwise")")
            #expect(reading.lines == sample.lines && reading.accessKeyValid, "read \(reading.lines) for \(sample.lines)")
        }
    }

    /// Real documents of `../shared/fixtures/mrz-real-documents` turned a quarter (the measurement
    /// set, looked at for this: Docs/mrz.md says so). Before the search turned pages whose text
    /// runs down them, a quarter of the set's documents turned either way lost their key: an old
    /// German identity card and ICAO's MRV-A specimen read nothing, a Serbian card gave
    /// `555550461` for `955555546` — the stages after the text's direction measured a glyph's
    /// width as its height.
    @Test("real documents on their side give the printed key first", .needsSharedFixtures,
          arguments: [("uscutil-DE-IDD_Personalausweis_alt_Vorderseite.jpeg", ["122001085", "640812", "111007"]),
                      ("arg0s1080-visas-MRVA_ICAO_Example.png", ["L8988901C", "400907", "961210"]),
                      ("arg0s1080-id_cards-Serbia.png", ["955555546", "680229", "130724"])])
    func realDocumentsOnTheirSide(name: String, key: [String]) async throws {
        let recognizer = try #require(Self.recognizer)
        let image = try Self.realDocument(name)
        for clockwise in [true, false] {
            let result = try await Self.offPool { recognizer.read(image.turnedQuarter(clockwise: clockwise)) }
            #expect(result.candidates.first?.key == key, "\(name) turned \(clockwise ? "clockwise" : "anticlockwise"): \(result.candidates.map(\.key))")
        }
    }

    /// A page printed with an offset press's halftone and scanned (round dots on a screen at 45°,
    /// two pixels a period: 150 lines an inch at 300 dpi), stored turned as the set stores German
    /// passports. Its dots are blobs too, ten for each character; when each blob's vote for the
    /// text's direction counted alike, at the enlarged photo's scale the dots' rows outvoted the
    /// zone's column and the page was not turned: no zone found (`scripts/mrz-documents-variants.py`,
    /// `halftone`: three German passports). A vote now weighs as much as the blob is tall.
    @Test("a halftoned scan of a page stored on its side is turned upright and read: the dots do not outvote the text", .needsSharedFixtures)
    func halftonedPageOnItsSide() async throws {
        let recognizer = try #require(Self.recognizer)
        let image = Self.halftoned(try Self.realDocument("uscutil-DE-POD_Dienstpass.jpg"))
        let result = try await Self.offPool { recognizer.read(photo: image) }
        #expect(result.candidates.first?.key == ["C01Y00T47", "640812", "270228"], "\(result.found) \(result.candidates.map(\.key))")
    }

    /// `image` printed with round halftone dots on a screen at 45°, `period` pixels a period, and
    /// scanned back (as `scripts/mrz-documents-variants.py`'s `halftone`): the dots drawn at four
    /// times the size, each scanned pixel their average, the scanner's optics a blur of half a
    /// pixel; paper 230, ink 25.
    static func halftoned(_ image: ImageCodecs.RGBImage, period: Float = 2) -> ImageCodecs.RGBImage {
        let gray = GrayImage(image), factor = 4
        let (width, height) = (image.width, image.height)
        let (c, s) = (Float(2).squareRoot() / 2, Float(2).squareRoot() / 2)
        let cycle = period * Float(factor)
        var scanned = [Float](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                var ink = 0
                for dy in 0..<factor {
                    for dx in 0..<factor {
                        let (fx, fy) = (Float(x * factor + dx) + 0.5, Float(y * factor + dy) + 0.5)
                        let level = gray.sample(fx / Float(factor), fy / Float(factor)) / 255
                        let (u, v) = (fx * c + fy * s, -fx * s + fy * c)
                        if level <= 0.5 + 0.25 * (cos(2 * .pi * u / cycle) + cos(2 * .pi * v / cycle)) { ink += 1 }
                    }
                }
                scanned[y * width + x] = 1 - Float(ink) / Float(factor * factor)
            }
        }
        // A Gaussian of σ 0.5 pixel, as three taps each way.
        let taps: [Float] = [0.1065, 0.787, 0.1065]
        func blurred(_ values: [Float], dx: Int, dy: Int) -> [Float] {
            var out = values
            for y in 0..<height {
                for x in 0..<width {
                    var sum: Float = 0
                    for (k, tap) in taps.enumerated() {
                        let xx = min(max(x + (k - 1) * dx, 0), width - 1), yy = min(max(y + (k - 1) * dy, 0), height - 1)
                        sum += tap * values[yy * width + xx]
                    }
                    out[y * width + x] = sum
                }
            }
            return out
        }
        let soft = blurred(blurred(scanned, dx: 1, dy: 0), dx: 0, dy: 1)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for index in soft.indices {
            let value = UInt8(max(0, min(255, (25 + 205 * soft[index]).rounded())))
            for channel in 0..<3 { pixels[index * 3 + channel] = value }
        }
        return ImageCodecs.RGBImage(width: width, height: height, pixels: pixels)
    }

    /// Lines of 30 blobs at a pitch of 20 with 20-pixel capitals, at `rows`' heights.
    static func lines(_ rows: [Float]) -> [TextLine] {
        rows.map { y in TextLine(points: (0..<30).map { (x: 100 + Float($0) * 20, y: y, width: 12, height: 20) }, direction: (1, 0)) }
    }

    @Test("a line beside a zone makes it two documents' when printed like it, not when as faint as a pattern")
    func fainterLineBesideTheZone() {
        let sorted = Self.lines([100, 145, 190])
        // The zone's two lines and a third beside them, as dark: ambiguous (A1 B1 A2, or a TD3 with a line inside).
        #expect(MRZBlock.block([0, 1], of: sorted, ink: [180, 175, 170]).ambiguous)
        // A guilloche's row at the zone's pitch, a fifth as dark: one document.
        #expect(!MRZBlock.block([0, 1], of: sorted, ink: [180, 175, 40]).ambiguous)
        // Half as dark as the zone's faintest line still counts as print.
        #expect(MRZBlock.block([1, 2], of: sorted, ink: [88, 175, 170]).ambiguous)
        // Without the image's ink the old rule holds.
        #expect(MRZBlock.block([0, 1], of: sorted).ambiguous)
    }

    /// `image` turned by `degrees` about its centre (bilinear), on a dark ground.
    static func tilted(_ image: ImageCodecs.RGBImage, degrees: Float) -> ImageCodecs.RGBImage {
        let angle = degrees * .pi / 180, c = cos(angle), s = sin(angle)
        let width = Int((Float(image.width) * abs(c) + Float(image.height) * abs(s)).rounded(.up))
        let height = Int((Float(image.width) * abs(s) + Float(image.height) * abs(c)).rounded(.up))
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                // The source point: the target's offset from its centre turned back.
                let dx = Float(x) + 0.5 - Float(width) / 2, dy = Float(y) + 0.5 - Float(height) / 2
                let sx = c * dx - s * dy + Float(image.width) / 2 - 0.5, sy = s * dx + c * dy + Float(image.height) / 2 - 0.5
                let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
                let ax = sx - Float(x0), ay = sy - Float(y0)
                for channel in 0..<3 {
                    func at(_ px: Int, _ py: Int) -> Float {
                        guard px >= 0, py >= 0, px < image.width, py < image.height else { return [90, 80, 70][channel] }
                        return Float(image.pixels[(py * image.width + px) * 3 + channel])
                    }
                    let value = (at(x0, y0) * (1 - ax) + at(x0 + 1, y0) * ax) * (1 - ay) + (at(x0, y0 + 1) * (1 - ax) + at(x0 + 1, y0 + 1) * ax) * ay
                    pixels[(y * width + x) * 3 + channel] = UInt8(min(255, max(0, value.rounded())))
                }
            }
        }
        return ImageCodecs.RGBImage(width: width, height: height, pixels: pixels)
    }

    /// A real Serbian card (front and back side by side, `../shared`'s measurement set, looked at
    /// for this) tilted 8° (of 3–10° either way, the one angle that showed it here; the script that
    /// found it turned the other way, bicubic): the guilloche under its MRZ made a faint row of
    /// blobs at the zone's pitch, and the card was refused as `AMBIGUOUS_ZONE`.
    @Test("a real card tilted 8° over a guilloche is one document: its printed key first", .needsSharedFixtures)
    func realCardTilted() async throws {
        let recognizer = try #require(Self.recognizer)
        let image = try Self.realDocument("arg0s1080-id_cards-Serbia.png")
        let result = try await Self.offPool { recognizer.read(Self.tilted(image, degrees: -8)) }
        #expect(result.refusal == nil && result.candidates.first?.key == ["955555546", "680229", "130724"],
                "\(result.refusal.map(\.rawValue) ?? "") \(result.candidates.map(\.key))")
    }

    @Test("no MRZ: noise, a blank page, a single pixel, a page of text without one — nothing found, nothing claimed")
    func nothingThere() async throws {
        let recognizer = try #require(Self.recognizer)
        var generator = SeededGenerator(state: 7)
        let noise = ImageCodecs.RGBImage(width: 1280, height: 720, pixels: (0..<(1280 * 720 * 3)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let blank = ImageCodecs.RGBImage(width: 640, height: 480, pixels: [UInt8](repeating: 240, count: 640 * 480 * 3))
        let pixel = ImageCodecs.RGBImage(width: 1, height: 1, pixels: [0, 0, 0])
        // Dots at the MRZ's pitch in long rows: shaped like a zone, holding nothing.
        var dots = [UInt8](repeating: 255, count: 1280 * 720 * 3)
        for row in [500, 540] {
            for column in stride(from: 100, to: 1100, by: 22) {
                for y in row..<(row + 16) { for x in column..<(column + 12) { for c in 0..<3 { dots[(y * 1280 + x) * 3 + c] = 20 } } }
            }
        }
        let images = [noise, blank, pixel, ImageCodecs.RGBImage(width: 1280, height: 720, pixels: dots)]
        let readings = try await Self.offPool { images.map { recognizer.read($0).reading } }
        for reading in readings {
            #expect(reading?.accessKeyValid != true && reading?.valid != true)
        }
    }
}

extension MRZDecoderTests {
    /// The document number, date of birth and date of expiry a specimen holds.
    static func keyFields(_ format: MRZFormat, _ lines: [String]) -> (String, String, String) {
        func slice(_ line: String, _ range: Range<Int>) -> String {
            String(Array(line)[range]).replacingOccurrences(of: "<", with: "")
        }
        if format == .td1 { return (slice(lines[0], 5..<14), slice(lines[1], 0..<6), slice(lines[1], 8..<14)) }
        return (slice(lines[1], 0..<9), slice(lines[1], 13..<19), slice(lines[1], 21..<27))
    }
}
