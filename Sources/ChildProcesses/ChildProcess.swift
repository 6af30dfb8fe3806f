import CChildProcessShim

import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A helper program (pcscd, Chromium, …) started with `posix_spawn` in a clean signal state.
///
/// Why not Foundation's `Process`: a child inherits the signal mask of the *thread* that spawns
/// it, and Swift concurrency and Dispatch threads block almost every signal. A pcscd started from
/// such a thread never sees SIGTERM (it sat forever in a test's exit handler until we found it),
/// and a Chromium would ignore it too. Here the child always starts with an empty signal mask and
/// every signal at its default action.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    public let executable: String

    private struct State {
        var exitStatus: Int32?
    }
    private let state = Mutex(State())

    /// Starts `executable` with `arguments`. `inheriting` maps child descriptor numbers to this
    /// process's descriptors (for example `[3: pipeEnd]`); standard input, output and error go
    /// to /dev/null unless mapped. Throws `ChildProcessError` when the program cannot be started.
    public init(executable: String, arguments: [String], inheriting descriptors: [Int32: Int32] = [:],
                environment: [String: String]? = nil) throws(ChildProcessError) {
        // A parent descriptor whose number is itself a target could be overwritten by an earlier
        // dup2; move such ones out of the way first (the copies are closed again below).
        let highestTarget = max(2, descriptors.keys.max() ?? 2)
        var temporaries: [Int32] = []
        defer { temporaries.forEach { _ = close($0) } }
        var sources: [Int32: Int32] = [:]
        for (child, parent) in descriptors {
            if parent <= highestTarget {
                let moved = fcntl(parent, F_DUPFD_CLOEXEC, highestTarget + 1)
                guard moved >= 0 else { throw ChildProcessError(executable: executable, errno: errno) }
                temporaries.append(moved)
                sources[child] = moved
            } else {
                sources[child] = parent
            }
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (child, parent) in sources.sorted(by: { $0.key < $1.key }) {
            posix_spawn_file_actions_adddup2(&actions, parent, child)
        }
        for standard: Int32 in 0...2 where descriptors[standard] == nil {
            posix_spawn_file_actions_addopen(&actions, standard, "/dev/null", standard == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        // Nothing else of ours (sockets, pipes, the other ends) leaks into the child.
        CChildProcessShim_addclosefrom(&actions, highestTarget + 1)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = [executable] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let environmentLines = environment.map { $0.map { "\($0.key)=\($0.value)" }.sorted() }
        let cEnvironment = environmentLines.map { $0.map { strdup($0) } + [nil] }
        defer { cEnvironment?.forEach { free($0) } }

        var child: pid_t = 0
        let result: Int32
        if var lines = cEnvironment {
            result = posix_spawn(&child, executable, &actions, &attributes, &cArguments, &lines)
        } else {
            result = posix_spawn(&child, executable, &actions, &attributes, &cArguments, environ)
        }
        guard result == 0 else {
            throw ChildProcessError(executable: executable, errno: result)
        }
        self.pid = child
        self.executable = executable
    }

    /// A pipe (`read`, `write`) whose ends are closed on exec: map the child's end with
    /// `inheriting`, keep the other.
    public static func makePipe() throws(ChildProcessError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard CChildProcessShim_pipe_cloexec(&fds) == 0 else { throw ChildProcessError(executable: "pipe", errno: errno) }
        return (fds[0], fds[1])
    }

    /// The exit status once the process has ended and been reaped (`nil` while it runs).
    public var exitStatus: Int32? { reap() ? state.withLock { $0.exitStatus } : nil }

    /// Whether the process still runs (reaps it, without blocking, when it has ended).
    public var isRunning: Bool { !reap() }

    /// Sends `signal`; false once the process is gone.
    @discardableResult
    public func send(_ signal: Int32) -> Bool {
        // Never signal a reaped pid: the number may belong to someone else by now.
        state.withLock { state in state.exitStatus == nil && kill(pid, signal) == 0 }
    }

    /// SIGTERM, up to `gracePeriod` for the process to end, then SIGKILL; returns once it is
    /// reaped. Blocks the calling thread: use from exit handlers and dedicated threads.
    public func terminateBlocking(gracePeriod: Duration = .seconds(3)) {
        guard send(SIGTERM) else { return }
        let deadline = ContinuousClock.now + gracePeriod
        while ContinuousClock.now < deadline {
            if reap() { return }
            usleep(20_000)
        }
        waitAfterKill()
    }

    /// The same without blocking a thread while waiting.
    public func terminate(gracePeriod: Duration = .seconds(3)) async {
        guard send(SIGTERM) else { return }
        let deadline = ContinuousClock.now + gracePeriod
        while ContinuousClock.now < deadline {
            if reap() { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
        waitAfterKill()
    }

    private func waitAfterKill() {
        guard send(SIGKILL) else { return }
        // SIGKILL cannot be caught or blocked: the process ends promptly.
        state.withLock { state in
            guard state.exitStatus == nil else { return }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            state.exitStatus = status
        }
    }

    /// Reaps the process if it has ended; true when it has.
    private func reap() -> Bool {
        state.withLock { state in
            if state.exitStatus != nil { return true }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result < 0 && errno == ECHILD) {
                state.exitStatus = result == pid ? status : -1
                return true
            }
            return false
        }
    }
}

/// A program that could not be started.
public struct ChildProcessError: Error, Sendable, CustomStringConvertible {
    public let executable: String
    public let errno: Int32

    public var description: String {
        "cannot start \(executable): \(String(cString: strerror(errno)))"
    }
}

extension ChildProcess {
    /// This process's environment, as `environ` holds it now.
    public static var currentEnvironment: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let line = entry.pointee {
            let text = String(cString: line)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }

    /// Makes a write to a pipe or socket whose reader is gone an EPIPE error instead of a SIGPIPE
    /// that kills the process — unless the process installed a SIGPIPE handler of its own. Call it
    /// before writing to a child's pipe (a browser that crashed must not take the host with it).
    public static func ignoreBrokenPipes() {
        _ = sigpipeIgnored
    }

    private static let sigpipeIgnored: Bool = {
        var current = sigaction()
        guard sigaction(SIGPIPE, nil, &current) == 0 else { return false }
        if current.__sigaction_handler.sa_handler == nil { signal(SIGPIPE, SIG_IGN) }
        return true
    }()
}
