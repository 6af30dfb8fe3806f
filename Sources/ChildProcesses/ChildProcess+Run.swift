import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension ChildProcess {
    /// What a finished command gave back.
    public struct Outcome: Sendable, Hashable {
        /// The exit status (`WEXITSTATUS`) when it exited, else 128 + the signal that ended it.
        public var status: Int32
        public var output: [UInt8]
        public var error: [UInt8]
        /// It ran past the time limit and was killed.
        public var timedOut: Bool
        /// It wrote more than the output limit to standard output or error (the rest was dropped
        /// and it was killed).
        public var overflowed: Bool
    }

    /// Runs `executable` with `arguments`, hands it `input` on standard input, and collects what it
    /// writes to standard output and error — at most `outputLimit` bytes of each — for at most
    /// `timeLimit`; a command that runs longer or writes more is killed (SIGKILL) and says so in
    /// the outcome. The waiting happens on a Dispatch thread, never on the Swift cooperative pool.
    /// A command that does not read its input, or closes it early, is no error: the rest of the
    /// input is dropped.
    /// `onStart` is told the process's id once it runs (tests look at it while it works).
    public static func run(_ executable: String, arguments: [String], input: [UInt8] = [], environment: [String: String]? = nil,
                           timeLimit: Duration, outputLimit: Int = 1 << 20,
                           onStart: (@Sendable (pid_t) -> Void)? = nil) async throws(ChildProcessError) -> Outcome {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Outcome, ChildProcessError>, Never>) in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(ChildProcessError) -> Outcome in
                    try runBlocking(executable, arguments: arguments, input: input, environment: environment,
                                    timeLimit: timeLimit, outputLimit: outputLimit, onStart: onStart)
                })
            }
        }
        return try result.get()
    }

    /// `run`, waiting on the calling thread (a command-line tool's way; never call it on the Swift
    /// cooperative pool).
    public static func runBlocking(_ executable: String, arguments: [String], input: [UInt8], environment: [String: String]?,
                                   timeLimit: Duration, outputLimit: Int,
                                   onStart: (@Sendable (pid_t) -> Void)? = nil) throws(ChildProcessError) -> Outcome {
        ignoreBrokenPipes()
        let stdin = try makePipe(), stdout = try makePipe(), stderr = try makePipe()
        let child: ChildProcess
        do {
            child = try ChildProcess(executable: executable, arguments: arguments,
                                     inheriting: [0: stdin.read, 1: stdout.write, 2: stderr.write], environment: environment)
        } catch {
            [stdin.read, stdin.write, stdout.read, stdout.write, stderr.read, stderr.write].forEach { _ = close($0) }
            throw error
        }
        [stdin.read, stdout.write, stderr.write].forEach { _ = close($0) }
        onStart?(child.pid)
        var writer: Int32 = stdin.write
        var readers: [Int32] = [stdout.read, stderr.read]
        for fd in [writer] + readers { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        defer { ([writer] + readers).filter { $0 >= 0 }.forEach { _ = close($0) } }
        if input.isEmpty { close(writer); writer = -1 }

        var collected: [Int32: [UInt8]] = [stdout.read: [], stderr.read: []]
        var written = 0
        var timedOut = false, overflowed = false
        let deadline = ContinuousClock.now + timeLimit
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while writer >= 0 || readers.contains(where: { $0 >= 0 }) {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                timedOut = true
                break
            }
            var watched = readers.filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if writer >= 0 { watched.append(pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)) }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&watched, nfds_t(watched.count), milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            for entry in watched where entry.revents != 0 {
                if entry.fd == writer {
                    let sent = input.withUnsafeBytes { raw in write(writer, raw.baseAddress.map { $0 + written }, input.count - written) }
                    if sent > 0 { written += sent }
                    if written == input.count || (sent < 0 && errno != EAGAIN && errno != EINTR) {
                        close(writer)
                        writer = -1
                    }
                    continue
                }
                let got = chunk.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if got > 0 {
                    let room = outputLimit - (collected[entry.fd]?.count ?? 0)
                    collected[entry.fd, default: []] += chunk.prefix(min(got, max(0, room)))
                    if got > room { overflowed = true }
                } else if got == 0 || (errno != EAGAIN && errno != EINTR) {
                    if let index = readers.firstIndex(of: entry.fd) {
                        close(entry.fd)
                        readers[index] = -1
                    }
                }
            }
            if overflowed { break }
        }
        if timedOut || overflowed {
            _ = child.send(SIGKILL)
        }
        // The pipes are closed (or given up on): the process has ended or ends now.
        while child.isRunning {
            if ContinuousClock.now > deadline + .seconds(1) { _ = child.send(SIGKILL) }
            usleep(2_000)
        }
        let raw = child.exitStatus ?? -1
        let status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
        return Outcome(status: status, output: collected[stdout.read] ?? [], error: collected[stderr.read] ?? [],
                       timedOut: timedOut, overflowed: overflowed)
    }
}
