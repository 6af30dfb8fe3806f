import Foundation
import ImageCodecs
import MRZ

/// The `documents` tier (issue 50): photos and scans of real specimen documents, their MRZ
/// transcribed by eye (`../shared/fixtures/mrz-real-documents/truth.json`) — never trained or
/// tuned on. Each image decoded as `gbgbridge mrz` decodes it (at most 60 megapixels, JPEGs
/// scaled to 16) and read within the image budget. Reported: the printed key among the key
/// candidates as the first and as any, the printed key claimed as `accessKeyValid`, false
/// `accessKeyValid` (another key, or a key claimed where the printed check digits fail or there
/// is no MRZ) and false `valid`.
enum DocumentsTier {
    struct Entry: Decodable {
        var file: String
        var format: String
        var lines: [String]
        var legible: Bool?
        var checks: [String: Bool]?
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/mrz-real-documents")

    static let limits = ImageCodecs.Limits(maxPixels: 60 << 20, maxBytes: 768 << 20, scaleToPixels: 16 << 20)

    static func decode(_ bytes: [UInt8]) throws -> ImageCodecs.RGBImage {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return try ImageCodecs.decodePNG(bytes, limits: limits) }
        return try ImageCodecs.decodeJPEG(bytes, limits: limits)
    }

    /// `image` shrunk to `factor` of its size (a box average): a smaller scan of the same page.
    static func shrunk(_ image: ImageCodecs.RGBImage, by factor: Float) -> ImageCodecs.RGBImage {
        let width = max(1, Int(Float(image.width) * factor)), height = max(1, Int(Float(image.height) * factor))
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let y0 = y * image.height / height, y1 = max(y0 + 1, (y + 1) * image.height / height)
            for x in 0..<width {
                let x0 = x * image.width / width, x1 = max(x0 + 1, (x + 1) * image.width / width)
                for channel in 0..<3 {
                    var sum = 0
                    for yy in y0..<y1 { for xx in x0..<x1 { sum += Int(image.pixels[(yy * image.width + xx) * 3 + channel]) } }
                    pixels[(y * width + x) * 3 + channel] = UInt8(sum / ((y1 - y0) * (x1 - x0)))
                }
            }
        }
        return ImageCodecs.RGBImage(width: width, height: height, pixels: pixels)
    }

    /// Runs the tier; returns the false claims (false `accessKeyValid` + false `valid`). `turned`:
    /// each document read turned a quarter clockwise and again anticlockwise (twice the entries).
    static func run(recognizer: MRZRecognizer, listing: Bool, scale: Float = 1, turned turning: Bool = false) -> Int {
        let truthFile = directory.appendingPathComponent("truth.json")
        guard let data = try? Data(contentsOf: truthFile), let entries = try? JSONDecoder().decode([Entry].self, from: data) else {
            print("documents skipped: no \(truthFile.path)")
            return 0
        }
        var eligible = 0, first = 0, any = 0, keyValid = 0, falseKey = 0, falseValid = 0, misprinted = 0, misprintedClaimed = 0
        var times: [Double] = []
        let turns: [Bool?] = turning ? [true, false] : [nil]
        for entry in entries {
            guard let bytes = try? [UInt8](Data(contentsOf: directory.appendingPathComponent(entry.file))),
                  var original = try? decode(bytes) else {
                print("  unreadable: \(entry.file)")
                continue
            }
            if scale != 1 { original = shrunk(original, by: scale) }
            for turn in turns {
                let image = turn.map { original.turnedQuarter(clockwise: $0) } ?? original
                let started = ContinuousClock.now
                let result = recognizer.read(photo: image)
                let elapsed = ContinuousClock.now - started
                times.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                let hasMRZ = entry.format != "none" && !entry.lines.isEmpty
                let checks = entry.checks ?? [:]
                let keyHolds = hasMRZ && checks["number"] == true && checks["birth"] == true && checks["expiry"] == true
                let truth = hasMRZ ? MRZReading(text: entry.lines) : nil
                let truthKey = truth?.key
                let keys = result.candidates.map(\.key)
                let reading = result.reading
                let claimed = reading.flatMap { $0.accessKeyValid ? $0.key : nil }
                if keyHolds {
                    eligible += 1
                    if keys.first == truthKey { first += 1 }
                    if let truthKey, keys.contains(truthKey) { any += 1 }
                    if let claimed, claimed == truthKey { keyValid += 1 }
                    let name = entry.file + (turn.map { $0 ? " turned clockwise" : " turned anticlockwise" } ?? "")
                    if listing, keys.first != truthKey {
                        print("  \(name): first candidate \(keys.first ?? []) of \(keys.count), printed \(truthKey ?? []); read \(reading?.lines ?? [])")
                    } else if listing, claimed == nil {
                        print("  \(name): the printed key first, no accessKeyValid")
                    }
                } else {
                    misprinted += 1
                    if claimed != nil { misprintedClaimed += 1 }
                }
                if let claimed, !(keyHolds && claimed == truthKey) {
                    falseKey += 1
                    print("  false accessKeyValid: \(entry.file): \(claimed) (printed \(truthKey ?? []), its key's check digits \(keyHolds ? "hold" : "fail"))")
                }
                if let reading, reading.valid, !(keyHolds && reading.lines == entry.lines) {
                    falseValid += 1
                    print("  false valid: \(entry.file): \(reading.lines) for \(entry.lines)")
                }
            }
        }
        times.sort()
        func p(_ q: Double) -> String { times.isEmpty ? "-" : String(format: "%.0f", times[min(times.count - 1, Int(Double(times.count) * q))]) }
        print("documents tier\(scale == 1 ? "" : " at \(scale)")\(turning ? ", each turned a quarter both ways" : ""): \(entries.count * turns.count) images, \(eligible) whose printed key holds, \(misprinted) misprinted or without an MRZ")
        print("  key as first candidate " + percent(first, of: eligible) + ", among the candidates " + percent(any, of: eligible)
              + ", claimed accessKeyValid " + percent(keyValid, of: eligible)
              + "; false accessKeyValid \(falseKey), false valid \(falseValid), misprinted ones given a key \(misprintedClaimed); p50 \(p(0.5)) ms, p95 \(p(0.95)) ms")
        return falseKey + falseValid
    }
}
