import ChildProcesses
import Foundation
import MRTDEmulator
import SmartCard
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts a real `pcscd` (foreground, with Debian's vpcd reader driver) for hardware-in-the-loop
/// tests when none is running, and stops it by PID when the test process exits. Serialises use
/// of the virtual readers: vpcd accepts one card per port.
public actor PCSCDHarness {
    public static let shared = PCSCDHarness()

    public static let vpcdReaderName = "Virtual PCD 00 00"
    public static let vpcdPort: UInt16 = 35963
    public static let socketPath = "/run/pcscd/pcscd.comm"

    private var process: ChildProcess?
    private var available: Bool?
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Why the harness could not provide pcscd, when it could not.
    public private(set) var unavailableReason: String?

    /// Makes sure pcscd is up with the vpcd driver; returns false (see `unavailableReason`) when it
    /// cannot be started.
    public func ensureRunning() async -> Bool {
        if let available { return available }
        let result = await start()
        available = result
        return result
    }

    private func start() async -> Bool {
        guard FileManager.default.fileExists(atPath: "/usr/lib/pcsc/drivers/serial/libifdvpcd.so") else {
            unavailableReason = "vsmartcard-vpcd is not installed (scripts/install-deps.sh installs it)"
            return false
        }
        if Self.socketAnswers() { return true }
        let candidates = ["/usr/sbin/pcscd", "/sbin/pcscd", "/usr/bin/pcscd"]
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            unavailableReason = "pcscd is not installed"
            return false
        }
        let process: ChildProcess
        do {
            process = try ChildProcess(executable: path, arguments: ["--foreground"])
        } catch {
            unavailableReason = error.description
            return false
        }
        self.process = process
        PCSCDHarness.registerExitCleanup(process)
        for _ in 0..<100 {
            if Self.socketAnswers() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        unavailableReason = "pcscd did not come up within 5 s"
        return false
    }

    private static func socketAnswers() -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            let bytes = Array(socketPath.utf8.prefix(buffer.count - 1))
            buffer.copyBytes(from: bytes + [0])
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    private static let started = Mutex<[ChildProcess]>([])
    private static let cleanupRegistered = Mutex(false)

    private static func registerExitCleanup(_ process: ChildProcess) {
        started.withLock { $0.append(process) }
        let first = cleanupRegistered.withLock { registered -> Bool in
            defer { registered = true }
            return !registered
        }
        if first {
            atexit {
                for process in PCSCDHarness.started.withLock({ $0 }) {
                    process.terminateBlocking()
                }
            }
        }
    }

    /// Runs `body` with exclusive use of the vpcd readers.
    public func withExclusiveReaders<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
        while locked {
            await withCheckedContinuation { waiters.append($0) }
        }
        locked = true
        defer {
            locked = false
            if !waiters.isEmpty { waiters.removeFirst().resume() }
        }
        return try await body()
    }
}

/// Waits until pcscd reports the vpcd reader with (or without) a card, so one test's card
/// leaving does not race the next test's card arriving.
func settle(cardPresent: Bool) async -> Bool {
    let backend = PCSCBackend()
    for _ in 0..<100 {
        if let readers = try? await backend.readers(),
           readers.first(where: { $0.name == PCSCDHarness.vpcdReaderName })?.cardPresent == cardPresent {
            return true
        }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return false
}

/// Why a hardware-in-the-loop test could not set up its rig.
public struct RigUnavailable: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

extension PCSCDHarness {
    /// Starts pcscd if needed, takes the vpcd readers for itself, puts `chip` into reader
    /// `Virtual PCD 00 00` and runs `body`; the card is taken out afterwards.
    public static func withEmulatedCard<T: Sendable>(
        _ chip: VirtualPassportChip,
        _ body: @Sendable (VPCDClient) async throws -> T
    ) async throws -> T {
        let harness = PCSCDHarness.shared
        guard await harness.ensureRunning() else {
            throw RigUnavailable(description: "pcscd with vpcd is required: \(await harness.unavailableReason ?? "unknown reason")")
        }
        return try await harness.withExclusiveReaders {
            let client = VPCDClient(chip: chip, port: vpcdPort)
            client.start()
            guard await client.waitUntilConnected(timeout: .seconds(10)),
                  await settle(cardPresent: true) else {
                client.stop()
                throw RigUnavailable(description: "vpcd did not accept the emulator on port \(vpcdPort)")
            }
            do {
                let result = try await body(client)
                client.stop()
                _ = await settle(cardPresent: false)
                return result
            } catch {
                client.stop()
                _ = await settle(cardPresent: false)
                throw error
            }
        }
    }
}
