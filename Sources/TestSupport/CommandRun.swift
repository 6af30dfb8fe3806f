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
    let collected = Mutex<(out: Data, err: Data)>((Data(), Data()))
    output.fileHandleForReading.readabilityHandler = { handle in
        let chunk = handle.availableData
        collected.withLock { $0.out.append(chunk) }
    }
    error.fileHandleForReading.readabilityHandler = { handle in
        let chunk = handle.availableData
        collected.withLock { $0.err.append(chunk) }
    }
    let finished = AsyncStream<Void>.makeStream()
    process.terminationHandler = { _ in finished.continuation.finish() }
    try process.run()
    let watchdog = Task {
        try await Task.sleep(for: timeout)
        process.terminate()
    }
    for await _ in finished.stream {}
    watchdog.cancel()
    output.fileHandleForReading.readabilityHandler = nil
    error.fileHandleForReading.readabilityHandler = nil
    // What was still in the pipes when the handlers stopped.
    let restOut = (try? output.fileHandleForReading.readToEnd()) ?? nil
    let restErr = (try? error.fileHandleForReading.readToEnd()) ?? nil
    let (out, err) = collected.withLock { ($0.out + (restOut ?? Data()), $0.err + (restErr ?? Data())) }
    return CommandOutcome(status: process.terminationStatus, standardOutput: String(decoding: out, as: UTF8.self),
                          standardError: String(decoding: err, as: UTF8.self))
}

extension PCSCDHarness {
    /// Runs `gbgbridge emulate` with `arguments` as the card of reader `Virtual PCD 00 00` (on the
    /// harness's vpcd port) while `body` runs; the emulator is stopped afterwards.
    public static func withEmulatorCommand<T: Sendable>(_ arguments: [String], _ body: @Sendable () async throws -> T) async throws -> T {
        let harness = PCSCDHarness.shared
        guard await harness.ensureRunning() else {
            throw RigUnavailable(description: "pcscd with vpcd is required: \(await harness.unavailableReason ?? "unknown reason")")
        }
        return try await harness.withExclusiveReaders {
            let emulator = Process()
            emulator.executableURL = URL(fileURLWithPath: GBGBridgeBinary.path)
            emulator.arguments = ["emulate", "--vpcd-port", String(vpcdPort)] + arguments
            emulator.currentDirectoryURL = TestFixtures.packageRoot
            emulator.standardOutput = FileHandle.nullDevice
            emulator.standardError = FileHandle.nullDevice
            try emulator.run()
            func stop() async {
                emulator.terminate()
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
