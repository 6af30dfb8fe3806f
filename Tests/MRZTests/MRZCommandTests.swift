import Foundation
import ImageCodecs
import MRZSynthesis
import TestSupport
import Testing
@testable import MRZ

/// `gbgbridge mrz` as a user runs it: a photographed page and its JSON, the exit statuses, and
/// files that are not what they say (truncated, garbage, a decompression bomb, too large, missing,
/// a directory), each a typed error with a stable code, never a crash.
@Suite("gbgbridge mrz: the command, its JSON, its exit statuses, hostile files",
       .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
struct MRZCommandTests {
    static func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mrz-command-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A kiosk photograph of ICAO's TD3 specimen, as a PNG and as a JPEG.
    static func specimenFiles(in directory: URL) throws -> (png: String, jpeg: String) {
        let photographer = try #require(try? Photographer(renderer: PageRenderer()), "fonts-ocr-b and fonts-dejavu-core are needed")
        let (format, lines) = MRZDecoderTests.specimens[0]
        let key = MRZDecoderTests.keyFields(format, lines)
        var generator = SeededGenerator(state: 4242)
        let frame = photographer.shoot(MRZSample(lines: lines, format: format, documentNumber: key.0, dateOfBirth: key.1, dateOfExpiry: key.2),
                                       .kiosk, generator: &generator).frame
        let png = directory.appendingPathComponent("page.png"), jpeg = directory.appendingPathComponent("page.jpg")
        try Data(try ImageCodecs.encodePNG(frame)).write(to: png)
        try Data(try ImageCodecs.encodeJPEG(frame, quality: 85)).write(to: jpeg)
        return (png.path, jpeg.path)
    }

    static func objects(_ output: String) throws -> [[String: Any]] {
        let value = try JSONSerialization.jsonObject(with: Data(output.utf8))
        if let list = value as? [[String: Any]] { return list }
        return [try #require(value as? [String: Any], "not JSON objects: \(output)")]
    }

    @Test("a photographed TD3 page (PNG and JPEG): every field, valid, exit 0")
    func readsAPage() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.specimenFiles(in: directory)
        let outcome = try await runCommand(GBGBridgeBinary.path, ["mrz", "--json", files.png, files.jpeg])
        #expect(outcome.status == 0, "\(outcome.standardOutput) \(outcome.standardError)")
        let readings = try Self.objects(outcome.standardOutput)
        #expect(readings.count == 2)
        for reading in readings {
            #expect(reading["found"] as? Bool == true && reading["valid"] as? Bool == true && reading["accessKeyValid"] as? Bool == true)
            #expect(reading["format"] as? String == "TD3")
            #expect(reading["lines"] as? [String] == MRZDecoderTests.specimens[0].1)
            #expect(reading["documentNumber"] as? String == "L898902C3")
            #expect(reading["dateOfBirth"] as? String == "740812" && reading["dateOfExpiry"] as? String == "120415")
            #expect(reading["issuingState"] as? String == "UTO" && reading["nationality"] as? String == "UTO")
            #expect(reading["surname"] as? String == "ERIKSSON" && reading["givenNames"] as? String == "ANNA MARIA")
            #expect(reading["sex"] as? String == "F")
            let checks = try #require(reading["checkDigits"] as? [String: Bool])
            #expect(checks["documentNumber"] == true && checks["dateOfBirth"] == true && checks["dateOfExpiry"] == true && checks["composite"] == true)
            #expect(reading["durationMs"] is Int && reading["confidence"] is Double)
        }
        // Without --json: the lines and a summary, nothing else to parse.
        let plain = try await runCommand(GBGBridgeBinary.path, ["mrz", files.png])
        #expect(plain.status == 0 && plain.standardOutput.contains("P<UTOERIKSSON<<ANNA<MARIA"))
    }

    @Test("a CMYK JPEG (as document scanners write them, here by Pillow): decoded, the MRZ read")
    func cmykJPEG() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.specimenFiles(in: directory)
        let cmyk = directory.appendingPathComponent("cmyk.jpg").path
        // Pillow (Debian's python3-pil) writes Adobe CMYK JPEGs (APP14, inverted inks) — an encoder
        // that is not ours.
        let script = """
            import sys
            from PIL import Image
            page = Image.open(sys.argv[1]).convert("CMYK")
            page.save(sys.argv[2], "JPEG", quality=92)
            """
        let made = try await runCommand("/usr/bin/python3", ["-c", script, files.png, cmyk], timeout: .seconds(60))
        try #require(made.status == 0, "python3-pil is needed (scripts/install-deps.sh): \(made.standardError)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: cmyk))
        #expect(bytes.range(of: Data("Adobe".utf8)) != nil, "Pillow writes an Adobe APP14 marker")
        let outcome = try await runCommand(GBGBridgeBinary.path, ["mrz", "--json", cmyk])
        #expect(outcome.status == 0, "\(outcome.standardOutput) \(outcome.standardError)")
        for reading in try Self.objects(outcome.standardOutput) {
            #expect(reading["errorCode"] == nil, "\(reading)")
            #expect(reading["accessKeyValid"] as? Bool == true && reading["documentNumber"] as? String == "L898902C3", "\(reading)")
        }
        // Decoded as colours, not as inverted ones: the page's paper is light.
        let decoded = try ImageCodecs.decodeJPEG(Array(bytes))
        let mean = decoded.pixels.reduce(0) { $0 + Int($1) } / decoded.pixels.count
        let original = try ImageCodecs.decodePNG(Array(try Data(contentsOf: URL(fileURLWithPath: files.png))))
        let originalMean = original.pixels.reduce(0) { $0 + Int($1) } / original.pixels.count
        #expect(abs(mean - originalMean) < 20, "CMYK decoded to a mean of \(mean) against \(originalMean)")
    }

    @Test("hostile and missing files: typed errors with stable codes, exit 1, the rest still read")
    func hostileFiles() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.specimenFiles(in: directory)
        func write(_ name: String, _ bytes: [UInt8]) throws -> String {
            let url = directory.appendingPathComponent(name)
            try Data(bytes).write(to: url)
            return url.path
        }
        let png = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files.png)))
        let jpeg = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files.jpeg)))
        // A 60000 × 60000 RGB PNG header with a valid CRC: 10.8 GB if decoded.
        var bomb: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        let ihdr: [UInt8] = Array("IHDR".utf8) + [0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60, 8, 2, 0, 0, 0]
        bomb += ihdr + Self.crc32(ihdr).bigEndianBytes
        let huge = directory.appendingPathComponent("huge.png")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: Data(png.prefix(64))))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: 49 << 20)  // sparse: 49 MiB over the 48 MiB ceiling
        try handle.close()
        let cases: [(String, String)] = [
            (try write("truncated.png", Array(png.prefix(png.count / 3))), "IMAGE_INVALID"),
            (try write("truncated.jpg", Array(jpeg.prefix(jpeg.count / 2))), "IMAGE_INVALID"),
            (try write("garbage.png", (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }), "NOT_AN_IMAGE"),
            (try write("empty.png", []), "NOT_AN_IMAGE"),
            (try write("bomb.png", bomb), "IMAGE_INVALID"),
            (huge.path, "FILE_TOO_LARGE"),
            (directory.appendingPathComponent("missing.png").path, "FILE_NOT_FOUND"),
            (directory.path, "FILE_UNREADABLE"),
        ]
        let outcome = try await runCommand(GBGBridgeBinary.path, ["mrz", "--json"] + cases.map(\.0) + [files.png])
        #expect(outcome.status == 1, "\(outcome.standardError)")
        #expect(!outcome.standardError.contains("Fatal error") && !outcome.standardError.contains("NSError"))
        let results = try Self.objects(outcome.standardOutput)
        try #require(results.count == cases.count + 1)
        for (result, (path, code)) in zip(results, cases) {
            #expect(result["file"] as? String == path)
            #expect(result["errorCode"] as? String == code, "\(path): \(result)")
            #expect((result["error"] as? String)?.isEmpty == false)
            #expect(result["found"] as? Bool == false && result["valid"] as? Bool == false && result["accessKeyValid"] as? Bool == false)
        }
        #expect(results.last?["valid"] as? Bool == true, "the good image after the bad ones is still read")
    }

    @Test("no image: a usage error, exit 2; a page without an MRZ: not found, exit 1")
    func usageAndNothing() async throws {
        let usage = try await runCommand(GBGBridgeBinary.path, ["mrz"])
        #expect(usage.status == 2)
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let blank = directory.appendingPathComponent("blank.png")
        try Data(try ImageCodecs.encodePNG(ImageCodecs.RGBImage(width: 320, height: 240, pixels: [UInt8](repeating: 230, count: 320 * 240 * 3))))
            .write(to: blank)
        let outcome = try await runCommand(GBGBridgeBinary.path, ["mrz", "--json", blank.path])
        #expect(outcome.status == 1)
        let result = try #require(try Self.objects(outcome.standardOutput).first)
        #expect(result["found"] as? Bool == false && result["errorCode"] == nil)
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}

private extension UInt32 {
    var bigEndianBytes: [UInt8] { [UInt8(self >> 24), UInt8(truncatingIfNeeded: self >> 16), UInt8(truncatingIfNeeded: self >> 8), UInt8(truncatingIfNeeded: self)] }
}
