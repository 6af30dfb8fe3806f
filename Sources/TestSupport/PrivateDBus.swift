import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A private D-Bus (`dbus-daemon --session` on a socket of its own) and, on it, a stand-in for
/// bluetoothd written in dbus-python (`Tests/MdocTests/Independent/fake_bluez*.py`): BlueZ's
/// D-Bus API for tests on a host without a Bluetooth stack. (The real bluetoothd needs a kernel
/// with Bluetooth; the BLE VM tests boot one.)
public enum PrivateDBus {
    /// dbus-daemon, and Debian's Python with dbus-python and GLib's bindings.
    public static let available: Bool = FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon")
        && debianPythonImports("import dbus, dbus.service, dbus.mainloop.glib; from gi.repository import GLib")

    /// Starts a bus, and `script` (a path under Tests/) with `arguments` on it when given; runs
    /// `body` with the bus address; returns its result and what the script wrote to stderr.
    public static func with<T: Sendable>(script: String?, arguments: [String] = [],
                                         _ body: @Sendable (String) async throws -> T) async throws -> (T, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gbg-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let address = "unix:path=\(directory.path)/bus"
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)"]
        daemon.standardOutput = FileHandle.nullDevice
        try daemon.run()
        // SIGKILL: dbus-daemon --session may outlive a SIGTERM while a client is connected.
        defer { kill(daemon.processIdentifier, SIGKILL); daemon.waitUntilExit() }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: directory.path + "/bus") { try await Task.sleep(for: .milliseconds(50)) }
        guard let script else { return (try await body(address), "") }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [TestFixtures.packageRoot.appendingPathComponent(script).path] + arguments
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let collected = Collected()
        let reader = Thread {
            while true {
                let data = errors.fileHandleForReading.availableData
                if data.isEmpty { break }
                collected.append(data)
            }
        }
        reader.start()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let ready = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: output.fileHandleForReading.availableData) }
        }
        guard String(decoding: ready, as: UTF8.self).hasPrefix("ready") else {
            throw PrivateDBusError(message: "\(script) did not start: \(collected.text)")
        }
        let result = try await body(address)
        // Let the script log what the last calls did.
        try await Task.sleep(for: .milliseconds(200))
        return (result, collected.text)
    }
}

public struct PrivateDBusError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

private final class Collected: Sendable {
    private let data = Mutex(Data())
    func append(_ more: Data) { data.withLock { $0.append(more) } }
    var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }
}

/// Whether Debian's Python (/usr/bin/python3) runs `statement` (an import) without error: the
/// independent implementations' libraries are there.
public func debianPythonImports(_ statement: String) -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = ["-c", statement]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}
