import ChildProcesses
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("ChildProcess")
struct ChildProcessTests {
    /// The `SigBlk:` mask of a process, from /proc.
    func blockedSignals(of pid: pid_t) throws -> UInt64 {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") })
        return try #require(UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16))
    }

    /// Spawns `body` on a thread that blocks every signal (as Swift concurrency and Dispatch
    /// threads do) and returns what it made.
    func onAThreadBlockingAllSignals<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let box = ResultBox<T>()
        let thread = Thread {
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_BLOCK, &all, nil)
            box.set(Result { try body() })
            box.done.signal()
        }
        thread.start()
        box.done.wait()
        return try box.get()
    }

    @Test func aChildStartedFromABlockingThreadStillObeysSIGTERM() async throws {
        let child = try onAThreadBlockingAllSignals {
            try ChildProcess(executable: "/bin/sleep", arguments: ["30"])
        }
        // Wait until exec has happened (the mask is set in the child before exec).
        var mask: UInt64 = .max
        for _ in 0..<100 {
            mask = try blockedSignals(of: child.pid)
            if mask == 0 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(mask == 0)
        #expect(child.isRunning)
        #expect(child.send(SIGTERM))
        for _ in 0..<200 where child.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        let status = try #require(child.exitStatus)
        #expect(status & 0x7F == SIGTERM)  // ended by the signal itself
        #expect(!child.send(SIGTERM))      // a reaped pid is never signalled again
    }

    @Test func terminateEscalatesToSIGKILLForAProgramIgnoringSIGTERM() async throws {
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "trap '' TERM; while :; do sleep 0.05; done"])
        try await Task.sleep(for: .milliseconds(200))
        await child.terminate(gracePeriod: .milliseconds(300))
        #expect(!child.isRunning)
        #expect((child.exitStatus ?? 0) & 0x7F == SIGKILL)
    }

    @Test func mappedDescriptorsAreTheOnlyOnesTheChildGets() throws {
        let output = try ChildProcess.makePipe()
        // An ordinary descriptor of ours (not close-on-exec) that must not leak.
        let leaky = open("/dev/null", O_RDONLY)
        defer { close(leaky) }
        let child = try ChildProcess(executable: "/bin/sh",
                                     arguments: ["-c", "echo hello >&3; ls /proc/self/fd >&3"],
                                     inheriting: [3: output.write])
        close(output.write)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(output.read, &chunk, chunk.count)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        close(output.read)
        child.terminateBlocking()
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.first == "hello")
        // 0-2 (/dev/null), 3 (the pipe), and the descriptor `ls` itself opens to list the directory.
        let descriptors = Set(lines.dropFirst().compactMap { Int32($0) })
        #expect(descriptors.isSuperset(of: [0, 1, 2, 3]))
        #expect(!descriptors.contains(leaky))
        #expect(descriptors.count <= 5)
    }

    @Test func aMissingProgramIsATypedError() {
        #expect {
            _ = try ChildProcess(executable: "/nonexistent/program", arguments: [])
        } throws: { error in
            guard let error = error as? ChildProcessError else { return false }
            return error.errno == ENOENT && error.description.contains("/nonexistent/program")
        }
    }
}

final class ResultBox<T: Sendable>: @unchecked Sendable {
    private var result: Result<T, any Error>?
    let done = DispatchSemaphore(value: 0)
    func set(_ result: Result<T, any Error>) { self.result = result }
    func get() throws -> T { try result!.get() }
}

@Suite("Broken pipes")
struct BrokenPipeTests {
    @Test("after ignoreBrokenPipes, writing to a pipe nobody reads is EPIPE, not a SIGPIPE that kills the process")
    func writeToAClosedPipe() {
        ChildProcess.ignoreBrokenPipes()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        var byte: UInt8 = 1
        let written = write(fds[1], &byte, 1)
        let code = errno
        close(fds[1])
        #expect(written == -1 && code == EPIPE)
    }
}
