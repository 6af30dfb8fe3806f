import CHostileImages
import Foundation
import ImageCodecs
import Synchronization
import Testing
@testable import ImageSandbox

/// The confined decoder (issue 43), proved rather than run: a compromised decoder's every move —
/// crash, spin, allocate 4 GiB, open /etc/passwd, open a socket, exec a shell, any other system
/// call, garbage on its output, sleep forever — fails the way the confinement says (SIGSYS, EPERM,
/// killed at the budget) and reaches the host as a typed failure; a live child shows `Seccomp: 2`
/// and `NoNewPrivs: 1`; killing it mid-decode is a typed failure too; a thousand decodes leave
/// the host's memory and descriptors flat; a 2,080-scan progressive JPEG is refused at once.
@Suite("The image decoder child: confined, bounded, and never the host's problem", .serialized)
struct ImageSandboxTests {
    static let short = ImageSandbox.Budget(time: .seconds(3), memoryMiB: 512, cpuSeconds: 2, outputLimit: 1 << 20)

    /// A small JPEG to decode.
    static let jpeg: [UInt8] = (try? ImageCodecs.encodeJPEG(ImageCodecs.RGBImage(width: 64, height: 48, pixels: [UInt8](repeating: 150, count: 64 * 48 * 3)))) ?? []

    static func fault(_ kind: String, budget: ImageSandbox.Budget = short) -> ImageSandbox.Failure? {
        do {
            _ = try ImageSandbox.decodeHeader(ImageSandbox.Status.self, try ImageSandbox.runBlocking(["fault", kind], input: [1, 2, 3], budget: budget))
            return nil
        } catch {
            return error
        }
    }

    @Test("the helper is built and found")
    func helper() {
        #expect(ImageSandbox.helperPath != nil, "gbgbridge-decode next to the test binary (swift build)")
    }

    @Test("a compromised decoder's every move fails as the confinement says, and reaches the host typed", arguments: [
        ("crash", "crashed|seccomp", ImageSandbox.Failure.Code.decoderFailed),
        ("forbidden", "seccomp", .decoderFailed),
        ("open", "errno 1", .decoderFailed),
        ("socket", "errno 1", .decoderFailed),
        ("exec", "errno 1", .decoderFailed),
        // Past RLIMIT_AS, or (touching a gigabyte on a busy machine) past the wall-clock budget first.
        ("allocate", "crashed|seccomp|status|CPU or memory|was stopped", .decoderFailed),
        ("garbage", "not in its form", .decoderFailed),
        ("spin", "CPU or memory|stopped", .imageTooCostly),
        ("sleep", "was stopped", .imageTooCostly),
    ])
    func faults(kind: String, reason: String, code: ImageSandbox.Failure.Code) throws {
        let failure = try #require(Self.fault(kind), "\(kind) gave no failure")
        let stoppedAtTheBudget = kind == "allocate" && failure.code == .imageTooCostly
        #expect(failure.code == code || stoppedAtTheBudget, "\(kind): \(failure)")
        #expect(failure.reason.contains(try Regex(reason)), "\(kind): \(failure.reason)")
    }

    @Test("a live child: Seccomp 2 and NoNewPrivs 1 in /proc; killing it mid-decode is a typed failure")
    func liveChildIsConfined() async throws {
        // Every child the sandbox starts while this runs: suites in parallel decode too (the hook is
        // global), so ours is the one whose command line has `fault sleep` (a CI run once killed
        // another test's child, and ours ran into its 60 s budget).
        let pids = Mutex<[pid_t]>([])
        ImageSandbox.onChildStart = { started in pids.withLock { $0.append(started) } }
        defer { ImageSandbox.onChildStart = nil }
        let run = Task { Self.fault("sleep", budget: .init(time: .seconds(60), memoryMiB: 512, cpuSeconds: 10, outputLimit: 1 << 20)) }
        var status = ""
        var child: pid_t = 0
        for _ in 0..<400 where child == 0 {
            try await Task.sleep(for: .milliseconds(25))
            for candidate in pids.withLock({ $0 }) {
                guard let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(candidate)/cmdline")),
                      case let parts = command.split(separator: 0).map({ String(decoding: $0, as: UTF8.self) }),
                      let at = parts.firstIndex(of: "fault"), parts.dropFirst(at + 1).first == "sleep",
                      let text = try? String(contentsOfFile: "/proc/\(candidate)/status", encoding: .utf8), text.contains("Seccomp:\t2") else { continue }
                status = text
                child = candidate
                break
            }
        }
        #expect(status.contains("Seccomp:\t2"), "\(status)")
        #expect(status.contains("NoNewPrivs:\t1"), "\(status)")
        try #require(child > 0)
        kill(child, SIGKILL)
        let failure = try #require(await run.value)
        #expect(failure.code == .decoderFailed, "\(failure)")
    }

    @Test("a clean JPEG decodes in the child and is passed on as it is; a damaged one is IMAGE_INVALID")
    func decodes() throws {
        let passed = try ImageSandbox.browserJPEG(Self.jpeg)
        #expect(passed.width == 64 && passed.height == 48 && passed.jpeg == Self.jpeg && passed.sourceFormat == "jpeg")
        #expect(throws: ImageSandbox.Failure.self) { _ = try ImageSandbox.browserJPEG(Array(Self.jpeg.prefix(200))) }
        do {
            _ = try ImageSandbox.browserJPEG(Array(Self.jpeg.prefix(200)))
        } catch {
            #expect(error.code == .imageInvalid, "\(error)")
        }
    }

    @Test("a progressive JPEG of 2,080 valid scans: refused (IMAGE_TOO_COSTLY) within the budget")
    func manyScans() throws {
        var pointer: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        try #require(CHostileImages_many_scan_jpeg(1600, 1200, 10, &pointer, &length) == 0)
        let bomb = Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
        free(pointer)
        #expect(bomb.count < 2_000_000)
        let started = ContinuousClock.now
        do {
            _ = try ImageSandbox.browserJPEG(bomb)
            Issue.record("a 2,080-scan JPEG was decoded")
        } catch {
            #expect(error.code == .imageTooCostly && error.reason.contains("scans"), "\(error)")
        }
        // What a person can read off the run: it was refused, not decoded for a minute.
        let took = ContinuousClock.now - started
        #expect(took < ImageSandbox.Budget.chipImage.time, "\(took)")
    }

    /// Resident memory (KiB) and open descriptors of this process.
    static func footprint() -> (rss: Int, descriptors: Int) {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        return (rss, descriptors)
    }

    @Test("1,000 decodes in a row: the host's memory and descriptors stay flat")
    func thousandDecodesStayFlat() throws {
        for _ in 0..<20 { _ = try ImageSandbox.browserJPEG(Self.jpeg) }
        let before = Self.footprint()
        for index in 0..<1_000 {
            if index % 10 == 9 {
                _ = Self.fault("crash")
            } else {
                _ = try ImageSandbox.browserJPEG(Self.jpeg)
            }
        }
        let after = Self.footprint()
        #expect(after.descriptors <= before.descriptors + 2, "descriptors \(before.descriptors) → \(after.descriptors)")
        #expect(after.rss < before.rss + 20 * 1_024, "RSS \(before.rss) → \(after.rss) KiB")
    }
}

/// What issue 49 promised of every decode: a child's answer is believed only for what it could
/// truthfully say, the child dies with its parent, decodes keep their CPU budget, and a server's
/// many photos wait their turn instead of running out of time.
@Suite("The image decoder child keeps its promises", .serialized)
struct ImageSandboxPromiseTests {
    static let budget = ImageSandbox.Budget(time: .seconds(30), memoryMiB: 512, cpuSeconds: 10, outputLimit: 1 << 20)

    static func forged(_ kind: String) -> Result<Void, ImageSandbox.Failure> {
        Result { () throws(ImageSandbox.Failure) in
            let answer = try ImageSandbox.runBlocking(["fault", kind], input: [1, 2, 3], budget: budget)
            switch kind {
            case "forge-text": try ImageSandbox.check(try ImageSandbox.decodeHeader(ImageSandbox.MRZAnswer.self, answer), limits: .chipImages)
            default: _ = try ImageSandbox.browserImage(ImageSandboxTests.jpeg, answer, limits: .chipImages)
            }
        }
    }

    @Test("forged answers in a good frame are refused for what they claim", arguments: ["forge-size", "forge-bytes", "forge-format", "forge-text"])
    func forgedAnswers(kind: String) {
        guard case .failure(let failure) = Self.forged(kind) else {
            Issue.record("\(kind) was believed")
            return
        }
        #expect(failure.code == .decoderFailed && failure.reason.contains("not believable"), "\(kind): \(failure)")
    }

    @Test("a child's reason reaches the host as one printable line of at most 300 characters")
    func reasonsArePrintable() throws {
        let failure = try #require(ImageSandboxTests.fault("forge-reason", budget: Self.budget))
        #expect(failure.code == .imageInvalid)
        #expect(failure.reason.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F && $0.value != 0x202E }, "\(failure.reason.debugDescription)")
        #expect(failure.reason.count <= 300)
    }

    @Test("a child dies with its parent: killed with SIGKILL, the parent's decoder is gone at once")
    func childDiesWithItsParent() async throws {
        let helper = try #require(ImageSandbox.helperPath)
        let script = """
            import os, subprocess, sys, time
            child = subprocess.Popen([sys.argv[1], "fault", "sleep", "--parent", str(os.getpid())], stdin=subprocess.PIPE)
            print(child.pid, flush=True)
            time.sleep(120)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, helper]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let child = try #require(Int32(line), "no pid from the parent: \(line)")
        #expect(kill(child, 0) == 0, "the decoder runs")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // The kernel sends SIGKILL as the parent dies; the child is reaped by init.
        var gone = false
        for _ in 0..<100 where !gone {
            let status = (try? String(contentsOfFile: "/proc/\(child)/status", encoding: .utf8)) ?? ""
            gone = status.isEmpty || status.contains("State:\tZ")
            if !gone { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(gone, "the decoder outlived its parent")
        if !gone { kill(child, SIGKILL) }
    }

    @Test("a PNG of 990 zTXt chunks is decoded without inflating one (it is in its CPU budget)")
    func textChunksAreNotInflated() throws {
        // 990 zTXt chunks, each 8 MiB of zeros compressed (8 KiB): 7.9 GB if inflated.
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return ImageCodecsPNG.bigEndian(data.count) + body + ImageCodecsPNG.bigEndian(Int(ImageCodecsPNG.crc32(body)))
        }
        png += chunk("IHDR", ImageCodecsPNG.bigEndian(8) + ImageCodecsPNG.bigEndian(8) + [8, 2, 0, 0, 0])
        let bomb = try ImageCodecsPNG.deflate([UInt8](repeating: 0, count: 8 << 20))
        let text = Array("Comment".utf8) + [0, 0] + bomb
        for _ in 0..<990 { png += chunk("zTXt", text) }
        png += chunk("IDAT", try ImageCodecsPNG.deflate((0..<8).flatMap { _ in [0] + [UInt8](repeating: 200, count: 24) }))
        png += chunk("IEND", [])
        #expect(png.count > 7_000_000)
        let size = try ImageSandbox.checkBlocking(png, limits: .chipImages, budget: .chipImage)
        #expect(size.width == 8 && size.height == 8)
    }

    @Test("200 photos decoded at once for a server all decode: they queue, none is called too costly")
    func concurrentDecodes() async throws {
        let jpeg = try ImageCodecs.encodeJPEG(ImageCodecs.RGBImage(width: 640, height: 480,
                                                                   pixels: (0..<(640 * 480 * 3)).map { UInt8(truncatingIfNeeded: $0 * 7) }))
        let failures = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    do throws(ImageSandbox.Failure) {
                        _ = try await ImageSandbox.check(jpeg)
                        return nil
                    } catch {
                        return "\(error.code.rawValue): \(error.reason)"
                    }
                }
            }
            var failures: [String] = []
            for await failure in group { if let failure { failures.append(failure) } }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.count) of 200 failed: \(failures.prefix(3))")
    }
}

/// PNG pieces for the tests: chunk lengths, CRC-32, and zlib streams written by Python's zlib.
enum ImageCodecsPNG {
    static func bigEndian(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// zlib-compressed `bytes`, by Python's zlib (an independent encoder).
    static func deflate(_ bytes: [UInt8]) throws -> [UInt8] {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("deflate-\(UUID().uuidString)")
        try Data(bytes).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import sys, zlib; sys.stdout.buffer.write(zlib.compress(open(sys.argv[1], 'rb').read(), 9))", input.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return [UInt8](data)
    }
}
