import Foundation
import ImageCodecs
@testable import ImageSandbox
@testable import Mdoc
@testable import MdocRead
import TestSupport
import Testing

/// QR engagement (ISO 18013-5 §8.2.2.3, issue 52): the `mdoc:` URI, the QR code found by ZBar in
/// the confined decoder in pictures drawn by another encoder (Debian's `qrencode`, Python's
/// PIL for the photo-like copies), and a read end to end against the independent Python holder
/// engaged by QR, its session over BLE on a stand-in bluetoothd.
@Suite("mdoc QR engagement: the mdoc: URI, ZBar in the confined decoder, a read over BLE")
struct MdocQREngagementTests {
    static let qrencode = "/usr/bin/qrencode"
    static let hasQREncode = FileManager.default.isExecutableFile(atPath: qrencode)
    static let service = "7d2fe1a4-3c55-4c4e-9d2b-6f1e0a8b5c31"

    /// A DeviceEngagement offering BLE in peripheral server mode, made here (no ../shared needed).
    static func engagementBytes() -> [UInt8] {
        // {0: "1.0", 1: [1, 24(<<COSE_Key P-256>>)], 2: [[2, 1, {0: true, 1: false, 10: uuid}]]}
        let x = [UInt8](repeating: 0x11, count: 32), y = [UInt8](repeating: 0x22, count: 32)
        let key: [UInt8] = [0xA4, 0x01, 0x02, 0x20, 0x01, 0x21, 0x58, 0x20] + x + [0x22, 0x58, 0x20] + y
        let keyBytes: [UInt8] = [0xD8, 0x18, 0x58, UInt8(key.count)] + key
        let uuid = [UInt8](repeating: 0xA5, count: 16)
        return [0xA3, 0x00, 0x63] + Array("1.0".utf8) + [0x01, 0x82, 0x01] + keyBytes
            + [0x02, 0x81, 0x83, 0x02, 0x01, 0xA3, 0x00, 0xF5, 0x01, 0xF4, 0x0A, 0x50] + uuid
    }

    static func uri(_ bytes: [UInt8], padded: Bool = false) -> String {
        var text = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        if !padded { while text.hasSuffix("=") { text.removeLast() } }
        return "mdoc:" + text
    }

    @Test("the mdoc: URI: base64url without padding; scheme in any case, a scanner's line end and padding tolerated")
    func uriForms() throws {
        let bytes = Self.engagementBytes()
        let engagement = try DeviceEngagement(qrCode: Array(Self.uri(bytes).utf8))
        #expect(engagement.bytes == bytes)
        #expect(engagement.retrievalMethods.map(\.name) == ["ble"])
        for text in [Self.uri(bytes).replacingOccurrences(of: "mdoc:", with: "MDOC:"), Self.uri(bytes) + "\r\n", Self.uri(bytes, padded: true)] {
            #expect(try DeviceEngagement(qrCode: Array(text.utf8)).bytes == bytes, "\(text.suffix(6))")
        }
        // Base64url against Foundation's base64 on every length's remainder.
        for count in 1...40 {
            let data = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
            let encoded = Self.uri(data).dropFirst(5)
            #expect(DeviceEngagement.base64URLDecoded(Array(encoded.utf8)) == data)
        }
    }

    @Test("what is not an engagement is refused with a typed error, never echoed")
    func refusals() throws {
        let good = Self.uri(Self.engagementBytes())
        let cases: [(String, MdocError.Code)] = [
            ("https://example.org/mdoc", .engagement),            // another scheme
            ("mdoc:", .engagement),                               // nothing after it
            ("mdocx" + good.dropFirst(5), .engagement),
            (good.replacingOccurrences(of: "mdoc:", with: "mdoc: "), .engagement), // a space
            (good + "+", .engagement),                            // base64, not base64url
            ("mdoc:owBjMS4wA", .engagement),                      // a length base64 cannot have (4n + 1)
            ("mdoc:AB", .engagement),                             // bits left over that are not zero
            ("mdoc:oA", .malformed),                              // {} : no version
            (Self.uri([0xA2, 0x00, 0x63] + Array("2.0".utf8) + [0x01, 0x80]), .unsupported),
            ("mdoc:" + String(repeating: "A", count: 4_000), .limitExceeded),
            // What a keyboard-wedge scanner or a page may hand over instead of ASCII: full-width
            // letters and digits, a combining mark, control characters, a NUL, a scheme in full width.
            (String(good.prefix(20)) + "Ａ" + good.dropFirst(21), .engagement),
            (String(good.prefix(20)) + "１" + good.dropFirst(21), .engagement),
            (good + "\u{0301}", .engagement),
            (String(good.prefix(20)) + "\t" + good.dropFirst(20), .engagement),
            (String(good.prefix(20)) + "\u{0}" + good.dropFirst(20), .engagement),
            ("ｍｄｏｃ:" + good.dropFirst(5), .engagement),
            ("\u{1B}[2J" + good, .engagement),
        ]
        for (text, code) in cases {
            do {
                _ = try DeviceEngagement(qrCode: Array(text.utf8))
                Issue.record("taken: \(text.prefix(24))")
            } catch {
                #expect(error.code == code, "\(text.prefix(24)): \(error)")
                let payload = String(text.dropFirst(5))
                #expect(payload.count < 6 || !error.reason.contains(payload.prefix(6)), "echoed: \(error.reason)")
            }
        }
    }

    @Test("the one engagement among a picture's codes: none, another kind, a broken one, two holders")
    func choosingAmongCodes() throws {
        let good = Array(Self.uri(Self.engagementBytes()).utf8)
        #expect(try MdocQREngagement.engagement(codes: [Array("WIFI:S:x;;".utf8), good, good]).bytes == Self.engagementBytes())
        func code(_ codes: [[UInt8]]) -> MdocError.Code? {
            do { _ = try MdocQREngagement.engagement(codes: codes); return nil } catch { return error.code }
        }
        #expect(code([]) == .noDocument)
        #expect(code([Array("https://example.org".utf8)]) == .noDocument)
        #expect(code([Array("https://example.org".utf8), Array("mdoc:oA".utf8)]) == .malformed)
        var other = Self.engagementBytes()
        other[other.count - 1] ^= 1
        #expect(code([good, Array(Self.uri(other).utf8)]) == .engagement)
    }

    /// A PNG of `text` drawn by Debian's qrencode.
    static func qrPicture(_ text: String, in directory: URL, name: String = "qr.png", module: Int = 4) async throws -> URL {
        let url = directory.appendingPathComponent(name)
        let made = try await runCommand(qrencode, ["-o", url.path, "-s", String(module), "-m", "4", "-l", "M", text])
        try #require(made.status == 0, "qrencode: \(made.standardError)")
        return url
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mdoc-qr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("ZBar in the confined decoder reads qrencode's code, and a photo-like copy (turned, JPEG, grey, small modules)",
          .enabled(if: hasQREncode, "needs qrencode (scripts/install-deps.sh)"),
          .enabled(if: ImageSandbox.helperPath != nil, "needs gbgbridge-decode (swift build)"))
    func decoderReadsPictures() async throws {
        let work = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let text = Self.uri(Self.engagementBytes())
        let png = try await Self.qrPicture(text, in: work)
        let codes = try await ImageSandbox.qrCodes(Array(try Data(contentsOf: png)))
        #expect(codes == [Array(text.utf8)])
        #expect(try await MdocQREngagement.engagement(picture: Array(try Data(contentsOf: png))).bytes == Self.engagementBytes())

        // A phone's screen photographed: turned 13°, on a grey ground, 2 px a module, JPEG quality 50.
        if debianPythonImports("from PIL import Image") {
            let small = try await Self.qrPicture(text, in: work, name: "small.png", module: 2)
            let jpeg = work.appendingPathComponent("photo.jpg").path
            let script = """
                import sys
                from PIL import Image, ImageFilter
                im = Image.open(sys.argv[1]).convert("L").point(lambda v: 40 + v * 0.7)
                im = im.resize((im.width * 3 // 2, im.height * 3 // 2)).rotate(13, expand=True, fillcolor=120)
                canvas = Image.new("L", (im.width + 300, im.height + 200), 90)
                canvas.paste(im, (170, 60))
                canvas.filter(ImageFilter.GaussianBlur(0.6)).convert("RGB").save(sys.argv[2], quality=50)
                """
            let made = try await runCommand("/usr/bin/python3", ["-c", script, small.path, jpeg])
            try #require(made.status == 0, "\(made.standardError)")
            #expect(try await ImageSandbox.qrCodes(Array(try Data(contentsOf: URL(fileURLWithPath: jpeg)))) == [Array(text.utf8)])
        }

        // Two codes side by side (two phones): both found, and the engagement refused as ambiguous.
        var other = Self.engagementBytes()
        other[other.count - 1] ^= 1
        let second = try await Self.qrPicture(Self.uri(other), in: work, name: "second.png")
        if debianPythonImports("from PIL import Image") {
            let both = work.appendingPathComponent("both.png").path
            let script = """
                import sys
                from PIL import Image
                a, b = Image.open(sys.argv[1]).convert("L"), Image.open(sys.argv[2]).convert("L")
                canvas = Image.new("L", (a.width + b.width + 40, max(a.height, b.height)), 255)
                canvas.paste(a, (0, 0)); canvas.paste(b, (a.width + 40, 0)); canvas.save(sys.argv[3])
                """
            let made = try await runCommand("/usr/bin/python3", ["-c", script, png.path, second.path, both])
            try #require(made.status == 0, "\(made.standardError)")
            let picture = Array(try Data(contentsOf: URL(fileURLWithPath: both)))
            #expect(Set(try await ImageSandbox.qrCodes(picture)) == [Array(text.utf8), Array(Self.uri(other).utf8)])
            await #expect(throws: MdocError.self) { _ = try await MdocQREngagement.engagement(picture: picture) }
        }
    }

    @Test("pictures with no code, or that are no picture, end typed",
          .enabled(if: ImageSandbox.helperPath != nil, "needs gbgbridge-decode (swift build)"))
    func noCode() async throws {
        // A plain grey JPEG made here: no code.
        let png = try ImageCodecs.encodeJPEG(ImageCodecs.RGBImage(width: 64, height: 64, pixels: [UInt8](repeating: 128, count: 64 * 64 * 3)), quality: 90)
        #expect(try await ImageSandbox.qrCodes(png).isEmpty)
        do {
            _ = try await MdocQREngagement.engagement(picture: png)
            Issue.record("a picture without a code was taken")
        } catch {
            #expect(error.code == .noDocument)
        }
        do {
            _ = try await MdocQREngagement.engagement(picture: Array("mdoc:not a picture".utf8))
            Issue.record("text was taken for a picture")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        // A truncated JPEG: the decoder's refusal, typed.
        do {
            _ = try await MdocQREngagement.engagement(picture: Array(png.prefix(40)))
            Issue.record("a truncated JPEG was taken")
        } catch {
            #expect(error.code == .invalidRequest && error.reason.contains("could not be decoded"), "\(error)")
        }
        // A child's answer is believed only when a scanner could have said it.
        func answer(_ header: String, _ payload: [UInt8]) -> ImageSandbox.Answer { ImageSandbox.Answer(header: Array(header.utf8), payload: payload) }
        #expect(try ImageSandbox.qrCodes(answer(#"{"ok":true,"width":9,"height":9,"lengths":[2,1]}"#, [1, 2, 3]), limits: ImageSandbox.qrPictureLimits) == [[1, 2], [3]])
        for (header, payload) in [(#"{"ok":true,"width":9,"height":9,"lengths":[2,2]}"#, [UInt8](repeating: 1, count: 3)),
                                  (#"{"ok":true,"width":9,"height":9,"lengths":[0]}"#, []),
                                  (#"{"ok":true,"width":9,"height":9,"lengths":[2954]}"#, [UInt8](repeating: 1, count: 2_954)),
                                  (#"{"ok":true,"width":9,"height":9,"lengths":[1,1,1,1,1,1,1,1,1]}"#, [UInt8](repeating: 1, count: 9))] {
            #expect(throws: ImageSandbox.Failure.self, "\(header)") { try ImageSandbox.qrCodes(answer(header, payload), limits: ImageSandbox.qrPictureLimits) }
        }
    }

    /// The independent holder engaged by QR (mdoc_holder.py qr:FILE: its code's text in FILE, the
    /// session over BLE on a stand-in bluetoothd on a private D-Bus, given to the CLI as its system
    /// bus), read by `gbgbridge mdoc read` with `arguments(codeText, picture)`.
    static func readQREngaged(_ arguments: @escaping @Sendable (String, String) -> [String]) async throws -> CommandOutcome {
        let work = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let iaca = work.appendingPathComponent("iaca.pem").path, code = work.appendingPathComponent("code.txt").path
        return try await PrivateDBus.with(script: "Tests/MdocTests/Independent/mdoc_holder.py",
                                          arguments: ["0", iaca, "qr:" + code, "signature", "ble", service, "session"]) { address in
            let text = try String(contentsOfFile: code, encoding: .utf8)
            let picture = try await qrPicture(text, in: work, name: "holder.png", module: 3)
            return try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--timeout", "20", "--json", "--trust", iaca] + arguments(text, picture.path),
                                        timeout: .seconds(90), environment: ["DBUS_SYSTEM_BUS_ADDRESS": address])
        }.0
    }

    @Test("an independent holder engaged by QR is read over BLE from a picture of its code, and from the code's text; both verify",
          .enabled(if: hasQREncode, "needs qrencode (scripts/install-deps.sh)"),
          .enabled(if: PrivateDBus.available, "needs dbus-daemon and python3-dbus, python3-gi"),
          .enabled(if: IndependentPython.available, "needs /usr/bin/python3 with cbor2 and cryptography"),
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary"),
          arguments: ["picture", "text"])
    func independentHolderEngagedByQR(way: String) async throws {
        let outcome = try await Self.readQREngaged { text, picture in way == "picture" ? ["--qr-from-image", picture] : ["--qr", text] }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any], "\(outcome.standardOutput)")
        #expect(report["issuer"] as? String == "valid" && report["device"] as? String == "valid", "\(report)")
        let transport = try #require(report["transport"] as? [String: Any])
        #expect(transport["carrier"] as? String == "ble")
        #expect(transport["handover"] as? String == "qr")
        let timings = try #require(transport["timings"] as? [String: Double])
        #expect(Set(timings.keys) == ["engagement", "scan", "connect", "transfer"], "\(timings)")
        let elements = try #require((report["elements"] as? [String: Any])?["org.iso.18013.5.1"] as? [String: Any])
        #expect(elements["family_name"] as? String == "Independent")
    }

    @Test("a QR engagement with --transport nfc or --reader is a usage error; without Bluetooth the read says why",
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary"))
    func qrUsage() async throws {
        let text = Self.uri(Self.engagementBytes())
        for extra in [["--transport", "nfc"], ["--reader", "Virtual PCD 00 00"], ["--handover", "static"], ["--qr-from-image", "/nonexistent.png"],
                      ["--qr-from-camera"], ["--camera", "/dev/video0"]] {
            let outcome = try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--qr", text] + extra)
            #expect(outcome.status == 2, "\(extra): \(outcome.standardError)")
        }
        let notMdoc = try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--qr", "WIFI:S:kiosk;;", "--json"])
        #expect(notMdoc.status == 2 && notMdoc.standardError.contains("not an mdoc engagement"), "\(notMdoc.standardError)")
        let noBluetooth = try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--qr", text, "--timeout", "5"],
                                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/gbg-bus"])
        #expect(noBluetooth.status == 6 && noBluetooth.standardError.contains("BLE needs a powered Bluetooth adapter"), "\(noBluetooth.standardError)")
        // A camera that is not there: exit 7 and MDOC_CAMERA, as read --mrz-from-camera's 7.
        let noCamera = try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--qr-from-camera", "--camera", "/nonexistent/video9", "--timeout", "3", "--json"])
        #expect(noCamera.status == 7 && noCamera.standardOutput.contains("MDOC_CAMERA"), "\(noCamera.status): \(noCamera.standardError)")
        let missing = try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--qr-from-image", "/nonexistent/holder.png"])
        #expect(missing.status == 2, "\(missing.standardError)")
        // Text where a picture belongs; a grey picture without a code (exit 5: no holder shown).
        let work = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let textFile = work.appendingPathComponent("code.png")
        try Data(text.utf8).write(to: textFile)
        let notPicture = try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--qr-from-image", textFile.path])
        #expect(notPicture.status == 2 && notPicture.standardError.contains("not a PNG or JPEG"), "\(notPicture.standardError)")
        let grey = work.appendingPathComponent("grey.jpg")
        try Data(try ImageCodecs.encodeJPEG(ImageCodecs.RGBImage(width: 320, height: 240, pixels: [UInt8](repeating: 128, count: 320 * 240 * 3)), quality: 90)).write(to: grey)
        let noCode = try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--qr-from-image", grey.path, "--json"])
        #expect(noCode.status == 5 && noCode.standardOutput.contains("MDOC_NO_DOCUMENT"), "\(noCode.standardError)")
    }
}
