import Foundation
import Synchronization

/// The `gbgbridge` binary `swift build` made, for tests that run the command line as users do.
public enum GBGBridgeBinary {
    public static let path = TestFixtures.packageRoot.appendingPathComponent(".build/debug/gbgbridge").path
    public static var isBuilt: Bool { FileManager.default.isExecutableFile(atPath: path) }
}

/// What a finished command printed and how it ended.
public struct CommandOutcome: Sendable {
    public let status: Int32
    public let standardOutput: String
    public let standardError: String
}

/// Runs a command to its end without blocking the cooperative pool (pipes are drained as they
/// fill, so large outputs cannot stall it); killed after `timeout`.
public func runCommand(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(120),
                       directory: URL = TestFixtures.packageRoot, environment: [String: String] = [:]) async throws -> CommandOutcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.currentDirectoryURL = directory
    if !environment.isEmpty {
        // This process's environment with `environment` laid over it.
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    process.standardInput = FileHandle.nullDevice
    // Blocking reads on threads of their own, not `readabilityHandler`: tearing down that
    // handler's dispatch read source races libdispatch's epoll bookkeeping on Linux and can crash
    // the whole test process in `_dispatch_event_loop_drain` (swift-corelibs-libdispatch#949).
    let outDrain = PipeDrain(output.fileHandleForReading.fileDescriptor)
    let errDrain = PipeDrain(error.fileHandleForReading.fileDescriptor)
    let finished = AsyncStream<Void>.makeStream()
    process.terminationHandler = { _ in finished.continuation.finish() }
    try process.run()
    let watchdog = Task {
        try await Task.sleep(for: timeout)
        process.terminate()
    }
    for await _ in finished.stream {}
    watchdog.cancel()
    // A grandchild still holding a pipe open must not hold the test: wait a while for the end of
    // the output, then take what came.
    let settle = ContinuousClock.now + .seconds(10)
    while !(outDrain.isDone && errDrain.isDone), ContinuousClock.now < settle {
        try? await Task.sleep(for: .milliseconds(5))
    }
    let (out, err) = (outDrain.data, errDrain.data)
    // Our ends of the pipes, now: Foundation keeps a finished Process's pipes open for as long as
    // something holds the Process, and a suite of a few hundred commands ran this process past
    // 1,024 descriptors (where select(), which libnfc uses, aborts the process).
    try? output.fileHandleForReading.close()
    try? error.fileHandleForReading.close()
    return CommandOutcome(status: process.terminationStatus, standardOutput: String(decoding: out, as: UTF8.self),
                          standardError: String(decoding: err, as: UTF8.self))
}

/// Reads a descriptor to its end on a thread of its own. It works on a duplicate of the
/// descriptor, closed when the reading ends, so the owner closing its own never races a read.
private final class PipeDrain: Sendable {
    private let state = Mutex<(data: Data, done: Bool)>((Data(), false))

    init(_ descriptor: Int32) {
        let own = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard own >= 0 else {
            state.withLock { $0.done = true }
            return
        }
        let thread = Thread { self.drain(own) }
        thread.name = "runCommand pipe"
        thread.start()
    }

    private func drain(_ own: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(own, $0.baseAddress, $0.count) }
            if count > 0 {
                state.withLock { $0.data.append(contentsOf: buffer[0..<count]) }
            } else if count < 0, errno == EINTR {
                continue
            } else {
                break
            }
        }
        close(own)
        state.withLock { $0.done = true }
    }

    var isDone: Bool { state.withLock { $0.done } }
    var data: Data { state.withLock { $0.data } }
}

extension PCSCDHarness {
    /// Runs `gbgbridge emulate` with `arguments` as the card of reader `Virtual PCD 00 00` (on the
    /// harness's vpcd port) while `body` runs; the emulator is stopped afterwards.
    public static func withEmulatorCommand<T: Sendable>(_ arguments: [String], _ body: @Sendable () async throws -> T) async throws -> T {
        try await withCardProcess(GBGBridgeBinary.path, arguments: { ["emulate", "--vpcd-port", String($0)] + arguments }, body)
    }

    /// Runs `executable` with the arguments made from the harness's vpcd port as the card of reader
    /// `Virtual PCD 00 00` while `body` runs (a card written elsewhere: an independent mdoc holder);
    /// it is stopped afterwards.
    public static func withCardProcess<T: Sendable>(_ executable: String, arguments: @Sendable (UInt16) -> [String],
                                                    _ body: @Sendable () async throws -> T) async throws -> T {
        let harness = PCSCDHarness.shared
        guard await harness.ensureRunning() else {
            throw RigUnavailable(description: "pcscd with vpcd is required: \(await harness.unavailableReason ?? "unknown reason")")
        }
        return try await harness.withExclusiveReaders {
            let emulator = Process()
            emulator.executableURL = URL(fileURLWithPath: executable)
            emulator.arguments = arguments(vpcdPort)
            emulator.currentDirectoryURL = TestFixtures.packageRoot
            emulator.standardOutput = FileHandle.nullDevice
            emulator.standardError = FileHandle.nullDevice
            try emulator.run()
            func stop() async {
                emulator.terminate()
                // A card process that ignores SIGTERM (SIG_IGN is inherited across exec) is killed.
                let patience = ContinuousClock.now + .seconds(5)
                while emulator.isRunning, ContinuousClock.now < patience { try? await Task.sleep(for: .milliseconds(10)) }
                if emulator.isRunning { kill(emulator.processIdentifier, SIGKILL) }
                while emulator.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
                _ = await settle(cardPresent: false)
            }
            guard await settle(cardPresent: true) else {
                await stop()
                throw RigUnavailable(description: "pcscd did not report the emulated card in \(vpcdReaderName) within 5 s (\(await harness.mode))")
            }
            do {
                let result = try await body()
                await stop()
                return result
            } catch {
                await stop()
                throw error
            }
        }
    }
}
