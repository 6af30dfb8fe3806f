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
        let pid = Mutex<pid_t>(0)
        ImageSandbox.onChildStart = { started in pid.withLock { $0 = started } }
        defer { ImageSandbox.onChildStart = nil }
        let run = Task { Self.fault("sleep", budget: .init(time: .seconds(60), memoryMiB: 512, cpuSeconds: 10, outputLimit: 1 << 20)) }
        var status = ""
        for _ in 0..<200 {
            try await Task.sleep(for: .milliseconds(25))
            let child = pid.withLock { $0 }
            guard child > 0, let text = try? String(contentsOfFile: "/proc/\(child)/status", encoding: .utf8), text.contains("Seccomp:\t2") else { continue }
            status = text
            break
        }
        #expect(status.contains("Seccomp:\t2"), "\(status)")
        #expect(status.contains("NoNewPrivs:\t1"), "\(status)")
        let child = pid.withLock { $0 }
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
