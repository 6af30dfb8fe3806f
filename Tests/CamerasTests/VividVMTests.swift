import ChildProcesses
import Foundation
import ImageCodecs
import TestSupport
import Testing
@testable import Cameras

/// The camera against a real kernel: Debian's kernel package booted in qemu (software emulation)
/// with its vivid V4L2 test driver, this package's release `gbgbridge` inside (static Swift
/// runtime). One boot runs `VividScenario`: the command-line tool in every vivid format we
/// convert (each frame compared with the one v4l2-ctl takes from the same device, and with the 75 %
/// colour bars vivid draws), a by-id link, busy, permission denied, vivid's error injection and a
/// camera pulled away mid-capture; then `gbgbridge serve`, driven from here as a page would.
///
/// Skipped, saying why, where qemu, the kernel package or the static binary is missing — unless
/// GBGBRIDGE_REQUIRE_VM=1 (scripts/test.sh sets it), where that is a failure.
@Suite("vivid: the cameras against a real kernel's V4L2 test driver in a VM", .serialized)
struct VividVMTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let script = root.appendingPathComponent("scripts/vivid-vm.sh").path
    static var binary: String {
        ProcessInfo.processInfo.environment["GBGBRIDGE_VM_BINARY"] ?? root.appendingPathComponent(".build/release/gbgbridge").path
    }
    static let required = ProcessInfo.processInfo.environment["GBGBRIDGE_REQUIRE_VM"] == "1"

    /// Why the VM cannot run here, or nil.
    static func unavailable() async -> String? {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            return "no static release build at \(binary): swift build -c release --static-swift-stdlib --product gbgbridge (scripts/test.sh builds it)"
        }
        guard let check = try? await ChildProcess.run("/bin/bash", arguments: [script, "check"], timeLimit: .seconds(60)) else {
            return "cannot run \(script)"
        }
        return check.status == 0 ? nil : String(decoding: check.output + check.error, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("list, capture in every format, by-id, busy, denied, injected errors, unplugged; serve from a page")
    func vivid() async throws {
        if let reason = await Self.unavailable() {
            if Self.required { Issue.record("the vivid VM must run here (GBGBRIDGE_REQUIRE_VM=1) but: \(reason)") }
            print("◇ vivid VM tests skipped: \(reason)")
            return
        }
        let share = FileManager.default.temporaryDirectory.appendingPathComponent("vivid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: share, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: share) }
        try VividScenario.script.write(to: share.appendingPathComponent("scenario.sh"), atomically: true, encoding: .utf8)
        try Data(VividScenario.loopFrame()).write(to: share.appendingPathComponent("page.yuyv"))
        let port = try freePort()
        let log = open(share.appendingPathComponent("vm.log").path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(log) }
        let vm = try ChildProcess(executable: "/bin/bash", arguments: [Self.script, "run", "--binary", Self.binary, "--share", share.path,
                                                                       "--forward", String(port), "--timeout", "420"],
                                  inheriting: [1: log, 2: log])
        let guest = Guest(share: share, port: port, vm: vm)
        defer { if vm.isRunning { vm.terminateBlocking() } }

        // serve, from the page's side.
        if try await guest.waitFor("serve-ready", seconds: 360) {
            try await ServePage(guest: guest).check()
        } else {
            Issue.record("serve did not come up in the VM: \(guest.text("serve.log").suffix(600)) / \(guest.text("scenario.log").suffix(600))")
        }
        while vm.isRunning { try await Task.sleep(for: .milliseconds(200)) }
        #expect(guest.text("status").trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                "the scenario: \(guest.text("scenario.log").suffix(800)); console: \(guest.text("console.log").suffix(800)); vm: \(guest.text("vm.log").suffix(800))")
        try CommandLineChecks(guest: guest).check()
    }

    func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The guest's shared directory, and commands to it.
struct Guest: Sendable {
    let share: URL
    let port: Int
    let vm: ChildProcess

    func text(_ name: String) -> String { (try? String(contentsOf: share.appendingPathComponent(name), encoding: .utf8)) ?? "" }
    func status(_ name: String) -> Int? { Int(text("\(name).status").trimmingCharacters(in: .whitespacesAndNewlines)) }
    func bytes(_ name: String) -> [UInt8] { (try? [UInt8](Data(contentsOf: share.appendingPathComponent(name)))) ?? [] }

    /// Waits for a file the guest writes; false when the VM ended or time ran out.
    func waitFor(_ name: String, seconds: Int) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if FileManager.default.fileExists(atPath: share.appendingPathComponent(name).path) { return true }
            guard vm.isRunning else { return false }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    private static let counter = Counter()
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int { lock.lock(); defer { lock.unlock() }; value += 1; return value }
    }

    /// Has the guest run `command` (grant, stream-start, stream-stop, disconnect, reload, finish).
    func command(_ command: String) async throws {
        let n = Self.counter.next()
        try command.write(to: share.appendingPathComponent("cmd-\(n)"), atomically: true, encoding: .utf8)
        let done = try await waitFor("done-\(n)", seconds: 90)
        try #require(done, "the guest did not run \(command)")
    }
}

/// What the command-line steps of the scenario left in the share.
struct CommandLineChecks {
    let guest: Guest

    func check() throws {
        // list: the camera, its formats, the by-id link; and as a user without access, the reason.
        let list = try #require(try JSONSerialization.jsonObject(with: Data(guest.text("list.out").utf8)) as? [[String: Any]],
                                "camera list --json: \(guest.text("list.out").prefix(300)) \(guest.text("list.err"))")
        let camera = try #require(list.first { $0["device"] as? String == "/dev/video0" })
        #expect(camera["name"] as? String == "vivid" && camera["accessible"] as? Bool == true)
        #expect((camera["links"] as? [String])?.contains(VividScenario.byID) == true, "\(camera["links"] ?? "none")")
        let formats = (camera["formats"] as? [[String: Any]]) ?? []
        #expect(formats.contains { $0["format"] as? String == "YUYV" && ($0["sizes"] as? [String])?.contains("1920x1080") == true })
        let denied = try #require(try JSONSerialization.jsonObject(with: Data(guest.text("denied-list.out").utf8)) as? [[String: Any]])
        #expect(denied.first?["accessible"] as? Bool == false && (denied.first?["error"] as? String)?.contains("may not open") == true)

        for format in VividScenario.formats { try checkFormat(format) }

        #expect(guest.status("byid") == 0, "by-id: \(guest.text("byid.err"))")
        let jpeg = try ImageCodecs.decodeJPEG(guest.bytes("byid.jpg"))
        #expect(jpeg.width == 640 && jpeg.height == 360)
        FrameConversionTests.assertBars(jpeg, FrameConversionTests.barsRGB, barWidth: 80, tolerance: 14, "by-id JPEG")

        #expect(guest.status("busy") == 4 && guest.text("busy.err").contains("in use by another program"), "busy: \(guest.text("busy.err"))")
        #expect(guest.status("denied") == 5 && guest.text("denied.err").contains("may not open"), "denied: \(guest.text("denied.err"))")
        #expect(guest.status("bufflag") == 0 && guest.text("bufflag.out").contains("1 broken frame skipped"),
                "flagged frame: \(guest.text("bufflag.out")) \(guest.text("bufflag.err"))")
        for (step, stage) in [("inject_vidioc_reqbufs_error", "VIDIOC_REQBUFS"), ("inject_vidioc_qbuf_error", "VIDIOC_QBUF"),
                              ("inject_vidioc_streamon_error", "VIDIOC_STREAMON")] {
            #expect(guest.status(step) == 6 && guest.text("\(step).err").contains(stage), "\(step): \(guest.status(step) ?? -1) \(guest.text("\(step).err"))")
        }
        #expect(guest.status("fatal") == 6, "fatal streaming error: \(guest.status("fatal") ?? -1) \(guest.text("fatal.err"))")
        #expect(guest.status("gone") == 3 && guest.text("gone.err").contains("gone"), "disconnect: \(guest.status("gone") ?? -1) \(guest.text("gone.err"))")
    }

    /// Our PNG of one format: the 75 % bars where vivid draws them, and v4l2-ctl's raw frame of the same
    /// format decoded here from the V4L2 layout (exactly for RGB and grey, within rounding for Y'CbCr).
    func checkFormat(_ format: String) throws {
        try #require(guest.status("cap-\(format)") == 0, "capture \(format): \(guest.text("cap-\(format).err"))")
        let image = try ImageCodecs.decodePNG(guest.bytes("cap-\(format).png"))
        try #require(image.width == 640 && image.height == 360, "\(format): \(image.width)x\(image.height)")
        let raw = guest.bytes("ref-\(format).raw")
        let pixels = 640 * 360
        if format != "GREY" { FrameConversionTests.assertBars(image, FrameConversionTests.barsRGB, barWidth: 80, tolerance: 8, format) }
        let rgbOffsets: [String: (Int, Int, Int, Int)] = ["RGB3": (3, 0, 1, 2), "BGR3": (3, 2, 1, 0), "XR24": (4, 2, 1, 0), "AR24": (4, 2, 1, 0),
                                                           "BX24": (4, 1, 2, 3), "BA24": (4, 1, 2, 3), "XB24": (4, 0, 1, 2), "AB24": (4, 0, 1, 2),
                                                           "RX24": (4, 3, 2, 1)]
        if let (size, r, g, b) = rgbOffsets[format] {
            try #require(raw.count == pixels * size, "v4l2-ctl's \(format) frame has \(raw.count) bytes")
            let mismatches = (0..<pixels).filter { (p: Int) -> Bool in
                let at = p * size
                return image.pixels[p * 3] != raw[at + r] || image.pixels[p * 3 + 1] != raw[at + g] || image.pixels[p * 3 + 2] != raw[at + b]
            }
            #expect(mismatches.isEmpty, "\(format): \(mismatches.count) pixels differ from v4l2-ctl's frame")
        } else if format == "GREY" {
            try #require(raw.count == pixels)
            let differing = (0..<pixels).filter { (p: Int) -> Bool in image.pixels[p * 3] != raw[p] || image.pixels[p * 3 + 2] != raw[p] }
            #expect(differing.isEmpty, "GREY: \(differing.count) pixels differ from v4l2-ctl's frame")
        } else if format == "YUYV" || format == "NV12" {
            try #require(raw.count == (format == "YUYV" ? pixels * 2 : pixels * 3 / 2), "v4l2-ctl's \(format) frame has \(raw.count) bytes")
            var worst = 0
            for y in stride(from: 0, to: 360, by: 7) {
                for x in stride(from: 0, to: 640, by: 5) {
                    let luma: Int, cb: Int, cr: Int
                    if format == "YUYV" {
                        let group = y * 1280 + (x / 2) * 4
                        (luma, cb, cr) = (Int(raw[group + (x % 2) * 2]), Int(raw[group + 1]), Int(raw[group + 3]))
                    } else {
                        let chroma = pixels + (y / 2) * 640 + (x / 2) * 2
                        (luma, cb, cr) = (Int(raw[y * 640 + x]), Int(raw[chroma]), Int(raw[chroma + 1]))
                    }
                    // ITU-R BT.601, 8-bit limited range, in floating point.
                    let yy: Double = Double(luma - 16) * 255 / 219
                    let u: Double = Double(cb - 128) * 255 / 224
                    let v: Double = Double(cr - 128) * 255 / 224
                    let red: Double = yy + 1.402 * v
                    let green: Double = yy - 0.344136 * u - 0.714136 * v
                    let blue: Double = yy + 1.772 * u
                    let expected: [Int] = [red, green, blue].map { Int(min(255, max(0, $0.rounded()))) }
                    let at = (y * 640 + x) * 3
                    for c in 0..<3 { worst = max(worst, abs(Int(image.pixels[at + c]) - expected[c])) }
                }
            }
            #expect(worst <= 2, "\(format): our RGB is up to \(worst) off BT.601 of v4l2-ctl's frame")
        }
    }
}
