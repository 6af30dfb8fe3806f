#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ChildProcesses
import Dispatch
import ImageCodecs
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Images a stranger chose — a chip's face or signature, a photo given to `gbgbridge mrz` — are
/// decoded in `gbgbridge-decode`, a child that confines itself before it reads a byte (no new
/// privileges, a seccomp filter of read/write/memory/exit, no new descriptors, bounded memory and
/// CPU) and is killed past a wall-clock budget (issue 43). One child an image, started with an
/// empty environment and nothing but its three pipes; its answer is read within a size ceiling
/// and checked before anything of it is believed. A child that crashes, is killed, overruns or
/// writes garbage costs that one image: a typed `Failure`, never the caller.
public enum ImageSandbox {
    /// Why an image was not decoded, with a stable code (nfc.read's `parseErrors`, `gbgbridge mrz
    /// --json`'s `errorCode`).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public enum Code: String, Sendable {
            /// Damaged, or not the image it claims to be.
            case imageInvalid = "IMAGE_INVALID"
            /// What decoding it would cost is past the bounds: its size, a progressive JPEG's
            /// scans, the child's time, memory or CPU.
            case imageTooCostly = "IMAGE_TOO_COSTLY"
            /// Not an image of a kind the operation takes.
            case notAnImage = "NOT_AN_IMAGE"
            /// The decoder could not be started, could not confine itself, or died or answered
            /// nonsense: nothing of the image is known.
            case decoderFailed = "DECODER_FAILED"
        }
        public let code: Code
        public let reason: String
        public var description: String { reason }

        public init(_ code: Code, _ reason: String) { (self.code, self.reason) = (code, reason) }
    }

    /// The helper: `GBGBRIDGE_DECODE` when set; else beside the running executable (a build
    /// tree), `../libexec/gbgbridge/` from it (the package, wherever its root is), then
    /// `/usr/libexec/gbgbridge/`. Nil when none is there.
    public static let helperPath: String? = {
        if let path = getenv("GBGBRIDGE_DECODE").map({ String(cString: $0) }), access(path, X_OK) == 0 { return path }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var candidates: [String] = []
        if length > 0 {
            let executable = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var directory = executable
            if let slash = directory.lastIndex(of: "/") { directory = String(directory[..<slash]) }
            candidates.append(directory + "/gbgbridge-decode")
            if let slash = directory.lastIndex(of: "/") { candidates.append(String(directory[..<slash]) + "/libexec/gbgbridge/gbgbridge-decode") }
        }
        candidates.append("/usr/libexec/gbgbridge/gbgbridge-decode")
        return candidates.first { access($0, X_OK) == 0 }
    }()

    /// What one child may use and how long it may take (issue 49: the promise is the decode's CPU
    /// time, with a wall-clock ceiling well above it — 200 concurrent children on two cores each
    /// get a fraction of a core, and a benign photo must not be called too costly for that).
    public struct Budget: Sendable {
        /// Wall clock, from its start to its answer; past it the child is killed (a ceiling for a
        /// child that waits rather than computes: its CPU is bounded below).
        public var time: Duration
        /// Its address space (RLIMIT_AS) and CPU seconds (RLIMIT_CPU: SIGXCPU, then SIGKILL a second later).
        public var memoryMiB: Int
        public var cpuSeconds: Int
        /// The CPU time one JPEG or PNG decode may take, checked as it decodes (finer than RLIMIT_CPU).
        public var decodeCPU: Duration
        /// The most it may write back.
        public var outputLimit: Int

        public init(time: Duration, memoryMiB: Int, cpuSeconds: Int, decodeCPU: Duration = .seconds(2), outputLimit: Int) {
            (self.time, self.memoryMiB, self.cpuSeconds, self.decodeCPU, self.outputLimit) = (time, memoryMiB, cpuSeconds, decodeCPU, outputLimit)
        }

        /// A chip's image: 4 megapixels at most, 1.5 s of CPU to decode (a JPEG 2000 face takes 20–200 ms).
        public static let chipImage = Budget(time: .seconds(8) * slowdown, memoryMiB: 512, cpuSeconds: 2 * slowdown,
                                             decodeCPU: .milliseconds(1_500) * slowdown, outputLimit: 16 << 20)
        /// A photo for the MRZ reader: 60 megapixels at most (decoded at the scale the search needs),
        /// 1.2 s of CPU to decode, the rest of the image's 2 s for the search.
        public static let photo = Budget(time: .seconds(12) * slowdown, memoryMiB: 1_536, cpuSeconds: 4 * slowdown,
                                         decodeCPU: .milliseconds(1_200) * slowdown, outputLimit: 1 << 20)

        /// A debug build (the tests') decodes many times slower and gets that much more time.
        static var slowdown: Int {
            #if DEBUG
            return 20
            #else
            return 1
            #endif
        }
    }

    /// The child's answer: its header (JSON) and payload.
    struct Answer {
        var header: [UInt8]
        var payload: [UInt8]
    }

    /// Test hook: told each child's process id once it runs.
    nonisolated(unsafe) public static var onChildStart: (@Sendable (pid_t) -> Void)?

    static let started = Atomic<Int>(0)
    /// How many children were started (diagnostics and tests).
    public static var childrenStarted: Int { started.load(ordering: .relaxed) }

    /// Runs `gbgbridge-decode arguments…` on `input`, waiting on this thread (which the child's
    /// life is tied to: it dies with this process).
    static func runBlocking(_ arguments: [String], input: [UInt8], budget: Budget) throws(Failure) -> Answer {
        guard let helper = helperPath else {
            throw Failure(.decoderFailed, "the image decoder (gbgbridge-decode) is not installed: images are not decoded in this process")
        }
        started.add(1, ordering: .relaxed)
        let outcome: ChildProcess.Outcome
        let cpuMilliseconds = budget.decodeCPU.components.seconds * 1_000 + budget.decodeCPU.components.attoseconds / 1_000_000_000_000_000
        do {
            outcome = try ChildProcess.runBlocking(helper, arguments: arguments + ["--memory-mib", String(budget.memoryMiB), "--cpu-seconds", String(budget.cpuSeconds),
                                                                                   "--cpu-ms", String(max(1, cpuMilliseconds)), "--parent", String(getpid())],
                                                   input: input, environment: [:], timeLimit: budget.time, outputLimit: budget.outputLimit,
                                                   onStart: onChildStart)
        } catch {
            throw Failure(.decoderFailed, "the image decoder could not be started: \(error)")
        }
        return try answer(outcome, budget: budget)
    }

    /// At most this many children decode at once for a server (the rest wait their turn without a
    /// thread, and without their wait counting against any budget): as many as the machine has
    /// cores, two to four.
    public static let pool = DecodeQueue(width: min(4, max(2, ProcessInfo.processInfo.activeProcessorCount)))

    /// The same on a Dispatch thread (never the Swift cooperative pool), queued on `pool`.
    static func run(_ arguments: [String], input: [UInt8], budget: Budget) async throws(Failure) -> Answer {
        let result: Result<Answer, Failure>
        do {
            result = try await pool.run { Result { () throws(Failure) -> Answer in try runBlocking(arguments, input: input, budget: budget) } }
        } catch {
            result = .failure(Failure(.decoderFailed, "the image decoder could not be run: \(error)"))
        }
        return try result.get()
    }

    /// The child's output judged: killed at the budget, died, or an answer in its frame.
    static func answer(_ outcome: ChildProcess.Outcome, budget: Budget) throws(Failure) -> Answer {
        if outcome.timedOut {
            throw Failure(.imageTooCostly, "decoding took more than its \(budget.time.components.seconds) s: the decoder was stopped")
        }
        if outcome.overflowed { throw Failure(.decoderFailed, "the image decoder wrote more than it may: its answer was dropped") }
        guard outcome.status == 0 else {
            let signal = outcome.status > 128 ? outcome.status - 128 : 0
            let how: String
            switch signal {
            case SIGSYS: how = "was stopped for a system call a decoder may not make (seccomp)"
            case SIGXCPU, SIGKILL: how = "was stopped for the CPU or memory it took"
            case 0: how = "ended with status \(outcome.status)"
            default: how = "crashed (signal \(signal))"
            }
            throw Failure(signal == SIGXCPU ? .imageTooCostly : .decoderFailed, "the image decoder \(how): the image is not shown")
        }
        let bytes = outcome.output
        func number(at offset: Int) -> Int? {
            guard offset + 4 <= bytes.count else { return nil }
            return bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        }
        guard bytes.starts(with: Array("GBGD".utf8)), let headerLength = number(at: 4), headerLength <= 64 << 10,
              let payloadLength = number(at: 8 + headerLength), 12 + headerLength + payloadLength == bytes.count else {
            throw Failure(.decoderFailed, "the image decoder's answer is not in its form: nothing of it is used")
        }
        return Answer(header: Array(bytes[8..<(8 + headerLength)]), payload: Array(bytes[(12 + headerLength)...]))
    }

    /// The header's common part: whether it decoded, and why not.
    struct Status: Decodable {
        var ok: Bool
        var code: String?
        var reason: String?
    }

    /// `text` as one printable line of at most 300 characters (control characters, escapes and
    /// bidirectional overrides replaced): what a compromised child says cannot drive a terminal.
    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.prefix(300).map { scalar -> Character in
            let value = scalar.value
            let control = value < 0x20 || (0x7F...0x9F).contains(value) || (0x200B...0x200F).contains(value)
                || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
            return control ? "?" : Character(scalar)
        }))
    }

    /// An answer that claims what was not asked for (a size past the limits the child was given):
    /// a forged or broken child; nothing of it is used.
    static func forged(_ what: String) -> Failure {
        Failure(.decoderFailed, "the image decoder's answer is not believable (\(what)): nothing of it is used")
    }

    static func decodeHeader<T: Decodable>(_ type: T.Type, _ answer: Answer) throws(Failure) -> T {
        let status: Status
        do {
            status = try JSONDecoder().decode(Status.self, from: Data(answer.header))
        } catch {
            throw Failure(.decoderFailed, "the image decoder's answer is not in its form: nothing of it is used")
        }
        guard status.ok else {
            let code = status.code.flatMap(Failure.Code.init(rawValue:)) ?? .decoderFailed
            // The child's words reach logs and terminals: printable, one line, bounded (issue 49).
            throw Failure(code, printable(status.reason ?? "the image was not decoded"))
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(answer.header))
        } catch {
            throw Failure(.decoderFailed, "the image decoder's answer is not in its form: nothing of it is used")
        }
    }
}
