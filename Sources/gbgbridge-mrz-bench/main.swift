// The MRZ reader's benchmark (release build; not a test):
//   swift build -c release --product gbgbridge && swift run -c release gbgbridge-mrz-bench [--count 1000]
//       [--tiers scan,kiosk,hard,real,real-small] [--model glyph-model.bin] [--yardstick 100] [--seed 9303] [--only N] [--list]
// A corpus made here with fixed seeds (TD1, TD2, TD3, MRV-A, MRV-B on synthetic data pages,
// photographed in three tiers), read by gbgbridge's reader; on a sample of the same images,
// PassportEye driving Tesseract 5 with Debian's `eng` model (scripts/mrz-yardstick.py) as the
// yardstick. Figures: access key right, whole MRZ exact, false accepts, no-reads, p50/p95 ms per
// image (one core), and the peak memory of a `gbgbridge mrz` process.
import CGBGBridgeCLI
import Foundation
import ImageCodecs
import MRZ
import MRZSynthesis
import Synchronization

// A line at a time, so a long run shows each tier as it ends (also when written to a file).
CGBGBridgeCLI_line_buffer_stdout()
let arguments = CommandLine.arguments
func option(_ name: String) -> String? { zip(arguments, arguments.dropFirst()).first { $0.0 == name }?.1 }
let count = Int(option("--count") ?? "1000") ?? 1000
let tiers = (option("--tiers") ?? "scan,kiosk,hard,real,real-small").split(separator: ",").map(String.init)
let yardstickSample = Int(option("--yardstick") ?? "100") ?? 100
let seed = UInt64(option("--seed") ?? "9303") ?? 9303
/// `--only N`: image N of each tier alone (to look again at one a run reported).
let only = option("--only").flatMap { Int($0) }
/// `--list`: each image whose MRZ was not claimed valid, and how it was read.
let listing = arguments.contains("--list")
let knownTiers = ["scan", "kiosk", "hard", "small", "tiny", "overprint", "font", "substitution", "interleave", "zeros", "outside", "real", "real-small", "documents", "documents-small", "documents-turned"]
if arguments.contains("--help") || arguments.contains("-h") {
    print("""
        usage: gbgbridge-mrz-bench [--count N] [--tiers T,T,...] [--seed S] [--yardstick N] [--only N] [--list]
                                   [--dump DIR] [--model glyph-model.bin] [--second-model FILE|none] [--key-foreign P] [--valid-foreign P] [--small-glyph H] [--foreign-pair P] [--small-lookalike H] [--no-document-print] [--floor-rival P] [--valid-minimum P] [--valid-uncovered P] [--strict-law] [--doubtful-os N]
          --count N       images a drawn tier (default 1000)
          --tiers         \(knownTiers.joined(separator: ",")) (default scan,kiosk,hard,real,real-small)
          --seed S        the corpus's seed (default 9303; a seed never tuned on for an honest figure)
          --yardstick N   PassportEye + Tesseract on N images a tier (0: none; default 100)
          --only N        image N of each tier alone; --list: each image not claimed valid, and how it was read
          --dump DIR      write each image read as a PNG
        Docs/mrz.md ("Benchmark") says what each tier draws and what the columns count.
        """)
    exit(0)
}
if let unknown = tiers.first(where: { !knownTiers.contains($0) }) {
    FileHandle.standardError.write(Data("gbgbridge-mrz-bench: no tier '\(unknown)' (tiers: \(knownTiers.joined(separator: ", ")))\n".utf8))
    exit(2)
}


/// `--model FILE`: a `glyph-model.bin` the lab wrote, read alone instead of the built-in pair (to
/// compare); `--second-model FILE`: the second opinion asked where the first claims no key
/// (`none`: the first reads alone). Neither: the built-in pair.
func modelFile(_ path: String) -> GlyphClassifier {
    do {
        let classifier = try GlyphModelFile.classifier(atPath: path)
        print("model: \(path) (\(classifier.hidden) hidden units, \(classifier.outputs) outputs, temperature \(classifier.temperature))")
        return classifier
    } catch {
        print("\(error)")
        exit(2)
    }
}
guard let builtIn = GlyphClassifier.standard else {
    print("this build has no trained glyph model")
    exit(1)
}
let firstModel = option("--model").map(modelFile) ?? builtIn
let secondModel: GlyphClassifier? = switch option("--second-model") {
case "none": nil
case let path?: modelFile(path)
case nil: option("--model") == nil ? GlyphClassifier.secondOpinion : nil
}
var recognizer = MRZRecognizer(classifier: firstModel, secondOpinion: secondModel)
print("readers: \(option("--model") ?? "the built-in model")\(secondModel == nil ? " alone" : ", then \(option("--second-model") ?? "the built-in second opinion") where it claims no key")")
// `--key-foreign P --valid-foreign P`: the not-OCR-B share a key (or any other) character may have
// (the lab's way to weigh a threshold; the product's are MRZDecoder.Policy's).
if let key = option("--key-foreign").flatMap(Float.init) { recognizer = recognizer.loosened(keyForeignMaximum: key) }
if let valid = option("--valid-foreign").flatMap(Float.init) { recognizer = recognizer.loosened(validForeignMaximum: valid) }
// `--small-glyph H`: capitals under H pixels read under the stricter key rules (0: never).
if let small = option("--small-glyph").flatMap(Float.init) { recognizer = recognizer.loosened(smallGlyphHeight: small) }
// `--foreign-pair P`: two key cells of a group at P "not OCR-B" each refuse the key (2: never).
if let pair = option("--foreign-pair").flatMap(Float.init) { recognizer = recognizer.loosened(keyForeignPair: pair) }
// `--small-lookalike H`: capitals under H pixels read with the higher look-alike floor (0: never).
if let height = option("--small-lookalike").flatMap(Float.init) { recognizer = recognizer.loosened(smallLookAlikeHeight: height) }
// `--no-document-print`: a number's `0`s at small capitals never vouched for by the document's own (issue 50).
if CommandLine.arguments.contains("--no-document-print") { recognizer = recognizer.loosened(documentPrint: false) }
// `--floor-rival P`: under 8-pixel capitals, the ratio a rival resting on the look-alike floor is
// held to (0.1 by default; 0.05, the classifier's own rivals' twentieth, is the one ratio as before).
if let ratio = option("--floor-rival").flatMap(Float.init) { recognizer = recognizer.loosened(smallFloorRivalRatio: ratio) }
// `--valid-minimum P --valid-uncovered P`: what every character outside the key needs for `valid`, and one no check digit covers.
if let minimum = option("--valid-minimum").flatMap(Float.init) { recognizer = recognizer.loosened(validMinimum: minimum) }
if let uncovered = option("--valid-uncovered").flatMap(Float.init) { recognizer = recognizer.loosened(validUncoveredMinimum: uncovered) }
// `--strict-law`: key candidates follow an issuer's number law only where the best reading keeps it (before 2026-12-01).
if CommandLine.arguments.contains("--strict-law") { recognizer = recognizer.loosened(candidatesFollowLaw: false) }
// `--doubtful-os N`: the most cells of a key group read `O` unsurely where `0` may stand (1 by default; 9: no limit, as before).
if let most = option("--doubtful-os").flatMap(Int.init) { recognizer = recognizer.loosened(doubtfulOsMaximum: most) }
let photographer = Photographer(renderer: try PageRenderer())
let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("gbgbridge-mrz-bench-\(getpid())")
try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: workDirectory) }

struct Tally {
    var keyRight = 0, exact = 0, falseKey = 0, falseValid = 0, noRead = 0
    /// The printed key as the first of the key candidates (what the chip is asked first), and
    /// among them (at most three tries): issue 50's bars for drawn tiers are on the first.
    var firstCandidate = 0, anyCandidate = 0
    /// Images whose printed key can be claimed (its check digits hold, one document's zone).
    var keyable = 0
    var times: [Double] = []
}

func percent(_ n: Int, of total: Int) -> String { String(format: "%6.1f %%", Double(n) / Double(max(1, total)) * 100) }
func milliseconds(_ sorted: [Double], _ quantile: Double) -> String {
    sorted.isEmpty ? "     –" : String(format: "%6.0f", sorted[min(sorted.count - 1, Int(Double(sorted.count) * quantile))])
}

print("MRZ reading benchmark — \(count) images a tier, seed \(seed), release build, one core timing")
print("tier    reader        key right   exact MRZ   false key   false valid   no read    p50 ms   p95 ms   1st cand   any cand")
var totalFalse = 0
for tier in tiers {
    // Real lines (held out from training): `real` as cropped, `real-small` at 0.4 of their size
    // (a 12-pixel pitch, a 600-pixel-wide scan of a passport page).
    if tier.hasPrefix("real") {
        totalFalse += RealTier.run(recognizer: recognizer, scale: tier == "real-small" ? 0.4 : 1, listing: listing, dump: option("--dump"))
        continue
    }
    // Real specimen documents (held out: never trained or tuned on), whole, at half their size and on their side.
    if tier.hasPrefix("documents") {
        totalFalse += DocumentsTier.run(recognizer: recognizer, listing: listing, scale: tier == "documents-small" ? 0.5 : 1,
                                        turned: tier == "documents-turned")
        continue
    }
    var ours = Tally()
    var sampleFiles: [(path: String, truth: BenchImage)] = []
    let batch = 16
    let tierPlace = tiers.firstIndex(of: tier) ?? 0
    for start in stride(from: 0, to: count, by: batch) {
        let indices = only.map { start == 0 ? [$0] : [] } ?? Array(start..<min(count, start + batch))
        let images = Mutex<[Int: BenchImage]>([:])
        DispatchQueue.concurrentPerform(iterations: indices.count) { k in
            let index = indices[k]
            let image: BenchImage
            if AttackTiers.names.contains(tier) {
                image = AttackTiers.image(tier: tier, index: index, seed: seed, tierPlace: tierPlace, photographer: photographer)
            } else {
                let shot = photographer.benchmarkShot(index: index, seed: seed, tierPlace: tierPlace, conditions: Photographer.Conditions(tier: tier))
                image = AttackTiers.truth(shot.frame, shot.sample.lines)
            }
            images.withLock { $0[index] = image }
        }
        for index in indices {
            guard let truth = images.withLock({ $0[index] }) else { continue }
            if let dump = option("--dump"), let png = try? ImageCodecs.encodePNG(truth.frame) {
                try? Data(png).write(to: URL(fileURLWithPath: "\(dump)/\(tier)-\(index).png"))
            }
            let started = ContinuousClock.now
            let result = recognizer.read(truth.frame)
            let reading = result.reading
            let elapsed = ContinuousClock.now - started
            ours.times.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
            if truth.keyHolds && !truth.noDocument {
                ours.keyable += 1
                let printed = [truth.documentNumber, truth.dateOfBirth, truth.dateOfExpiry]
                let keys = result.candidates.map(\.key)
                if keys.first == printed { ours.firstCandidate += 1 }
                if keys.contains(printed) { ours.anyCandidate += 1 }
            }
            if let reading, reading.accessKeyValid {
                let right = truth.keyHolds && !truth.noDocument && reading.documentNumber == truth.documentNumber
                    && reading.dateOfBirth == truth.dateOfBirth && reading.dateOfExpiry == truth.dateOfExpiry
                if right { ours.keyRight += 1 } else { ours.falseKey += 1; print("  false key (\(tier) #\(index)): \(reading.lines) for \(truth.lines)") }
            } else if truth.keyHolds && !truth.noDocument {
                ours.noRead += 1
            }
            if let reading, reading.valid {
                if reading.lines == truth.lines && truth.keyHolds && !truth.noDocument { ours.exact += 1 } else {
                    ours.falseValid += 1
                    print("  false valid (\(tier) #\(index)): \(reading.lines) for \(truth.lines)")
                }
            } else if let reading, listing {
                print("  not valid (\(tier) #\(index)): \(reading.lines == truth.lines ? "read right" : "\(reading.lines) for \(truth.lines)"), least sure \(reading.confidence)")
            }
            if sampleFiles.count < yardstickSample, !AttackTiers.names.contains(tier) {
                let path = workDirectory.appendingPathComponent("\(tier)-\(index).png").path
                if let png = try? ImageCodecs.encodePNG(truth.frame), (try? Data(png).write(to: URL(fileURLWithPath: path))) != nil {
                    sampleFiles.append((path, truth))
                }
            }
        }
    }
    ours.times.sort()
    totalFalse += ours.falseKey + ours.falseValid
    let keyable = max(1, ours.keyable)
    print(tier.padding(toLength: 8, withPad: " ", startingAt: 0) + "gbgbridge    " + percent(ours.keyRight, of: keyable) + "    " + percent(ours.exact, of: keyable)
          + "   " + String(format: "%9d", ours.falseKey) + "   " + String(format: "%11d", ours.falseValid) + "   " + percent(ours.noRead, of: keyable)
          + "  " + milliseconds(ours.times, 0.5) + "   " + milliseconds(ours.times, 0.95)
          + "   " + percent(ours.firstCandidate, of: keyable) + "   " + percent(ours.anyCandidate, of: keyable)
          + (ours.keyable < ours.times.count ? "   (\(ours.keyable) of \(ours.times.count) with a key to claim)" : ""))
    // The yardstick on the sample.
    guard !sampleFiles.isEmpty else { continue }
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/mrz-yardstick.py").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script] + sampleFiles.map(\.path)
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { print("  yardstick: cannot run python3 (\(error))"); continue }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    var theirs = Tally()
    var yardstickError: String?
    let truths = Dictionary(uniqueKeysWithValues: sampleFiles.map { ($0.path, $0.truth) })
    for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
        if let error = object["error"] as? String, object["file"] == nil { yardstickError = error; break }
        guard let file = object["file"] as? String, let truth = truths[file] else { continue }
        theirs.times.append(object["ms"] as? Double ?? Double(object["ms"] as? Int ?? 0))
        let checks = object["checks"] as? [String: Bool] ?? [:]
        let keyClaimed = checks["documentNumber"] == true && checks["dateOfBirth"] == true && checks["dateOfExpiry"] == true
        guard keyClaimed else { theirs.noRead += 1; continue }
        let right = (object["documentNumber"] as? String) == truth.documentNumber
            && (object["dateOfBirth"] as? String) == truth.dateOfBirth && (object["dateOfExpiry"] as? String) == truth.dateOfExpiry
        if right { theirs.keyRight += 1 } else { theirs.falseKey += 1 }
        if object["valid"] as? Bool == true {
            if right { theirs.exact += 1 } else { theirs.falseValid += 1 }
        }
    }
    theirs.times.sort()
    if let yardstickError {
        print("        PassportEye   skipped: \(yardstickError)")
    } else {
        let n = sampleFiles.count
        print("        PassportEye   " + percent(theirs.keyRight, of: n) + "    " + percent(theirs.exact, of: n) + "   " + String(format: "%9d", theirs.falseKey)
              + "   " + String(format: "%11d", theirs.falseValid) + "   " + percent(theirs.noRead, of: n) + "  " + milliseconds(theirs.times, 0.5)
              + "   " + milliseconds(theirs.times, 0.95) + "   (\(n) of the same images; its exact column: all check digits, not compared)")
    }
}
print("false accepts over all tiers: \(totalFalse)")

// Peak memory of the command a kiosk runs: gbgbridge mrz on kiosk frames.
let gbgbridge = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("gbgbridge").path
if FileManager.default.isExecutableFile(atPath: gbgbridge) {
    var generator = SeededGenerator(seed: seed ^ 0xFEED)
    var files: [String] = []
    for index in 0..<10 {
        let shot = photographer.shoot(MRZSample(format: MRZFormat.allCases[index % 5], generator: &generator), .kiosk, generator: &generator)
        let path = workDirectory.appendingPathComponent("memory-\(index).png").path
        if let png = try? ImageCodecs.encodePNG(shot.frame) { try? Data(png).write(to: URL(fileURLWithPath: path)); files.append(path) }
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: gbgbridge)
    process.arguments = ["mrz"] + files
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    var peak = 0
    while process.isRunning {
        if let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") {
            peak = max(peak, kib)
        }
        usleep(2_000)
    }
    print(String(format: "peak memory of gbgbridge mrz reading 10 kiosk frames (1280×720 PNG): %.1f MiB", Double(peak) / 1024))
} else {
    print("peak memory: skipped (build gbgbridge first: swift build -c release --product gbgbridge)")
}
