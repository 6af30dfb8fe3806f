import CBlueZShim
import Dispatch

/// A Bluetooth adapter as BlueZ (`bluetoothd`) lists it on the system bus.
public struct BlueZAdapter: Sendable, Hashable {
    /// The D-Bus object path, `/org/bluez/hci0`.
    public let path: String
    public let powered: Bool
    public let address: String
    public let alias: String

    public init(path: String, powered: Bool, address: String, alias: String) {
        self.path = path
        self.powered = powered
        self.address = address
        self.alias = alias
    }

    /// `hci0` from the path.
    public var name: String { path.split(separator: "/").last.map(String.init) ?? path }
}

/// Why BlueZ could not be asked, with a stable code and a fix a kiosk operator can follow.
public struct BlueZError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// No system bus to connect to (dbus not running, or no socket in this container).
        case noBus = "NO_SYSTEM_BUS"
        /// `bluetoothd` is not on the bus.
        case notRunning = "BLUEZ_NOT_RUNNING"
        /// The bus refused this user the call (polkit, the bus policy, the `bluetooth` group).
        case accessDenied = "BLUEZ_ACCESS_DENIED"
        /// BlueZ did not answer within the time allowed.
        case timeout = "BLUEZ_TIMEOUT"
        /// Anything else BlueZ or the bus answered.
        case failed = "BLUEZ_FAILED"
    }

    public let code: Code
    public let reason: String
    /// What to do about it.
    public let fix: String

    public var description: String { "\(code.rawValue): \(reason)" }
}

public enum BlueZ {
    /// Every call on the bus is bounded by this.
    public static let callTimeout: Duration = .seconds(3)

    /// The adapters BlueZ lists (blocking, at most `callTimeout`; see `adaptersOffPool`).
    public static func adapters() throws(BlueZError) -> [BlueZAdapter] {
        var out = [CChar](repeating: 0, count: 64 << 10)
        var error = [CChar](repeating: 0, count: 1024)
        let status = CBlueZShim_list_adapters(&out, out.count, &error, error.count, BlueZ.microseconds(callTimeout))
        let message = BlueZ.text(error)
        guard status >= 0 else { throw classify(status: status, message: message) }
        let text = BlueZ.text(out)
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 4 else { return nil }
            return BlueZAdapter(path: fields[0], powered: fields[1] == "1", address: fields[2], alias: fields[3])
        }.sorted { $0.path < $1.path }
    }

    /// `adapters()` on a dispatch thread: a blocking D-Bus call never holds a cooperative thread.
    public static func adaptersOffPool() async throws(BlueZError) -> [BlueZAdapter] {
        let result: Result<[BlueZAdapter], BlueZError> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                continuation.resume(returning: Result { () throws(BlueZError) -> [BlueZAdapter] in try adapters() })
            }
        }
        return try result.get()
    }

    /// A C buffer's text up to its first NUL (the shim's outputs and error messages).
    static func text<C: Collection<CChar>>(_ buffer: C) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func classify(status: Int32, message: String) -> BlueZError {
        if message.hasPrefix("connect:") {
            return BlueZError(code: .noBus, reason: "cannot reach the system D-Bus (\(message.dropFirst(9)))",
                              fix: "install and start dbus (apt install dbus; systemctl start dbus), or give the kiosk's container the host's /run/dbus/system_bus_socket")
        }
        if message.contains("ServiceUnknown") || message.contains("NameHasNoOwner") {
            return BlueZError(code: .notRunning, reason: "BlueZ (bluetoothd) is not on the system bus",
                              fix: "apt install bluez; systemctl enable --now bluetooth")
        }
        if message.contains("AccessDenied") || message.contains("Denied") || message.contains("NotAuthorized") {
            return BlueZError(code: .accessDenied, reason: "the system bus refused this user BlueZ (\(message))",
                              fix: "add the kiosk's user to the bluetooth group (usermod -aG bluetooth USER) or allow it in a polkit rule for org.bluez")
        }
        if message.contains("NoReply") || message.contains("Timeout") || status == -110 {
            return BlueZError(code: .timeout, reason: "BlueZ did not answer within \(callTimeout.components.seconds) s",
                              fix: "systemctl restart bluetooth; journalctl -u bluetooth")
        }
        return BlueZError(code: .failed, reason: "BlueZ failed: \(message)", fix: "journalctl -u bluetooth")
    }
}
