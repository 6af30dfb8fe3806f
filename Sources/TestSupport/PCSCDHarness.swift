import ChildProcesses
import Foundation
import MRTDEmulator
import SmartCard
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A real `pcscd` with Debian's vpcd reader driver for hardware-in-the-loop tests.
///
/// By default every test process gets a **private** pcscd, so that a developer's running pcscd,
/// real readers or another virtual card on vpcd's ports never interfere. Debian's pcscd always
/// binds `/run/pcscd/pcscd.comm` and ignores `PCSCLITE_CSOCK_NAME`. So the private one runs in
/// a mount namespace of its own (`unshare --mount`), with a private directory bind-mounted over
/// `/run/pcscd`. Its reader configuration (`-c`) points the vpcd driver at two free ports of its
/// own. This process reaches it through `PCSCLITE_CSOCK_NAME`, which the client library reads
/// once, at its first call; the harness sets it before any test touches PC/SC. Children started
/// later (the `gbgbridge` CLI) inherit it.
///
/// Without root (no mount namespace) or with `GBGBRIDGE_TEST_PCSCD=system`, the system's pcscd is
/// used (started with `--foreground` when none runs) with vpcd's standard ports 35963/35964. If
/// another program already holds a port, the harness fails within seconds and says so.
public actor PCSCDHarness {
    public static let shared = PCSCDHarness()

    /// The first vpcd reader's name (the private instance names its readers as Debian's does).
    public static let vpcdReaderName = "Virtual PCD 00 00"
    /// The second vpcd reader's name.
    public static let secondVPCDReaderName = "Virtual PCD 00 01"
    /// The standard socket of the system's pcscd.
    public static let systemSocketPath = "/run/pcscd/pcscd.comm"
    static let vpcdDriver = "/usr/lib/pcsc/drivers/serial/libifdvpcd.so"

    /// vpcd's TCP port for `Virtual PCD 00 00` (`00 01` is the next port): the private instance's
    /// own, or 35963 with the system's pcscd. Valid once `ensureRunning()` has returned true.
    public static var vpcdPort: UInt16 { port.withLock { $0 } }
    private static let port = Mutex<UInt16>(35963)

    private var process: ChildProcess?
    /// The one start, shared by every caller (the actor is reentrant across its awaits).
    private var starting: Task<Bool, Never>?
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Why the harness could not provide pcscd, when it could not.
    public private(set) var unavailableReason: String?
    /// How the harness provides pcscd: `private (…)` or `system`.
    public private(set) var mode = "not started"

    /// Makes sure pcscd is up with the vpcd driver; returns false (see `unavailableReason`) when it
    /// cannot be started.
    public func ensureRunning() async -> Bool {
        if let starting { return await starting.value }
        let task = Task { await self.start() }
        starting = task
        return await task.value
    }

    private func start() async -> Bool {
        guard FileManager.default.fileExists(atPath: Self.vpcdDriver) else {
            unavailableReason = "vsmartcard-vpcd is not installed (scripts/install-deps.sh installs it)"
            return false
        }
        guard let pcscd = ["/usr/sbin/pcscd", "/sbin/pcscd", "/usr/bin/pcscd"].first(where: FileManager.default.isExecutableFile) else {
            unavailableReason = "pcscd is not installed (scripts/install-deps.sh installs it)"
            return false
        }
        let wanted = ProcessInfo.processInfo.environment["GBGBRIDGE_TEST_PCSCD"] ?? "private"
        let unshare = ["/usr/bin/unshare", "/bin/unshare"].first(where: FileManager.default.isExecutableFile)
        if wanted != "system", geteuid() == 0, let unshare {
            return await startPrivate(pcscd: pcscd, unshare: unshare)
        }
        return await startSystem(pcscd: pcscd)
    }

    // MARK: A private pcscd

    private func startPrivate(pcscd: String, unshare: String) async -> Bool {
        Self.removeStaleInstances()
        let directory = Self.instancesDirectory.appendingPathComponent("\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            unavailableReason = "cannot create \(directory.path): \(error)"
            return false
        }
        guard let port = Self.freePortPair() else {
            unavailableReason = "no two free TCP ports for a private vpcd"
            return false
        }
        let configuration = directory.appendingPathComponent("reader.conf")
        let hex = "0x" + String(port, radix: 16, uppercase: true)
        let readerConf = """
            FRIENDLYNAME "Virtual PCD"
            DEVICENAME   /dev/null:\(hex)
            LIBPATH      \(Self.vpcdDriver)
            CHANNELID    \(hex)

            """
        let socket = directory.appendingPathComponent("pcscd.comm").path
        do {
            try readerConf.write(to: configuration, atomically: true, encoding: .utf8)
        } catch {
            unavailableReason = "cannot write \(configuration.path): \(error)"
            return false
        }
        // Before any PC/SC call of this process: the client library reads it once.
        setenv("PCSCLITE_CSOCK_NAME", socket, 1)
        let log = directory.appendingPathComponent("pcscd.log").path
        let script = #"mkdir -p /run/pcscd && mount --bind "$0" /run/pcscd && exec "$1" --foreground -c "$2" >"$3" 2>&1"#
        let process: ChildProcess
        do {
            process = try ChildProcess(executable: unshare,
                                       arguments: ["--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
                                                   directory.path, pcscd, configuration.path, log])
        } catch {
            unavailableReason = "cannot start a private pcscd: \(error.description)"
            return false
        }
        self.process = process
        Self.registerExitCleanup(process, directory: directory)
        for _ in 0..<100 {
            if Self.socketAnswers(socket) {
                Self.port.withLock { $0 = port }
                mode = "private (socket \(socket), vpcd ports \(port)/\(port + 1))"
                return true
            }
            if !process.isRunning { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)).map { LogTail.last($0) } ?? ""
        unavailableReason = "the private pcscd did not come up within 5 s\(output.isEmpty ? "" : ": \(output)")"
        return false
    }

    static let instancesDirectory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("gbgbridge-pcscd")

    /// Stops private instances whose test process is gone (killed before its exit handler ran).
    private static func removeStaleInstances() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: instancesDirectory.path)) ?? []
        for name in names {
            guard let owner = pid_t(name), owner != getpid(), kill(owner, 0) != 0, errno == ESRCH else { continue }
            let directory = instancesDirectory.appendingPathComponent(name)
            if let text = try? String(contentsOf: directory.appendingPathComponent("pcscd.pid"), encoding: .utf8),
               let daemon = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(daemon, SIGTERM)
            }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Two consecutive TCP ports that nothing listens on (vpcd opens `port` and `port + 1`).
    private static func freePortPair() -> UInt16? {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let port = UInt16.random(in: 40_000...60_000, using: &generator) & ~1
            if canBind(port) && canBind(port + 1) { return port }
        }
        return nil
    }

    private static func canBind(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = INADDR_ANY
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    // MARK: The system's pcscd

    private func startSystem(pcscd: String) async -> Bool {
        mode = "system"
        if let reason = Self.vpcdPortsTaken() {
            unavailableReason = reason
            return false
        }
        if Self.socketAnswers(Self.systemSocketPath) { return true }
        let process: ChildProcess
        do {
            process = try ChildProcess(executable: pcscd, arguments: ["--foreground"])
        } catch {
            unavailableReason = error.description
            return false
        }
        self.process = process
        Self.registerExitCleanup(process, directory: nil)
        for _ in 0..<100 {
            if Self.socketAnswers(Self.systemSocketPath) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        unavailableReason = "pcscd did not come up within 5 s"
        return false
    }

    /// Whether another program is connected to vpcd's standard ports already (vpcd serves one card
    /// per port; a second client would wait for minutes).
    private static func vpcdPortsTaken() -> String? {
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        for port: UInt16 in [35963, 35964] {
            let hex = String(port, radix: 16, uppercase: true)
            let local = ":" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            // A connection in state 01 (ESTABLISHED) with vpcd's port as its local end.
            let established = table.split(separator: "\n").contains { line in
                let fields = line.split(separator: " ")
                return fields.count > 3 && fields[1].hasSuffix(local) && fields[3] == "01"
            }
            if established {
                return "another program is connected to vpcd's port \(port) (a virtual card of its own?); stop it, or let the tests run a private pcscd (as root, without GBGBRIDGE_TEST_PCSCD=system)"
            }
        }
        return nil
    }

    // MARK: Shared

    private static func socketAnswers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            let bytes = Array(path.utf8.prefix(buffer.count - 1))
            buffer.copyBytes(from: bytes + [0])
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    private static let started = Mutex<[(ChildProcess, URL?)]>([])
    private static let cleanupRegistered = Mutex(false)

    private static func registerExitCleanup(_ process: ChildProcess, directory: URL?) {
        started.withLock { $0.append((process, directory)) }
        let first = cleanupRegistered.withLock { registered -> Bool in
            defer { registered = true }
            return !registered
        }
        if first {
            atexit {
                for (process, directory) in PCSCDHarness.started.withLock({ $0 }) {
                    process.terminateBlocking()
                    if let directory { try? FileManager.default.removeItem(at: directory) }
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

/// The last lines of a helper's output, on one line.
enum LogTail {
    static func last(_ text: String, lines: Int = 3) -> String {
        text.split(separator: "\n").suffix(lines).joined(separator: " | ")
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
    public static func withEmulatedCard<T: Sendable, Card: VirtualCard>(
        _ chip: Card,
        _ body: @Sendable (VPCDClient<Card>) async throws -> T
    ) async throws -> T {
        let harness = PCSCDHarness.shared
        guard await harness.ensureRunning() else {
            throw RigUnavailable(description: "pcscd with vpcd is required: \(await harness.unavailableReason ?? "unknown reason")")
        }
        return try await harness.withExclusiveReaders {
            let port = vpcdPort
            let client = VPCDClient(chip: chip, port: port)
            client.start()
            guard await client.waitUntilConnected(timeout: .seconds(10)) else {
                client.stop()
                throw RigUnavailable(description: "vpcd did not accept the emulator on port \(port) within 10 s (\(await harness.mode))")
            }
            guard await settle(cardPresent: true) else {
                client.stop()
                throw RigUnavailable(description: "pcscd did not report the emulated card in \(vpcdReaderName) within 5 s (\(await harness.mode))")
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
