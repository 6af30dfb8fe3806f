import CBlueZShim
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// One system-bus connection to BlueZ for one GATT client session. Every call runs on the
/// session's own serial queue (sd-bus is not thread-safe, and its calls block): never on the
/// cooperative pool. Each D-Bus call is bounded by `callTimeout`.
public final class BlueZSession: @unchecked Sendable {
    /// Connect can take a few seconds on a real radio; nothing else should come near.
    public static let callTimeout: Duration = .seconds(10)

    // Touched only on `queue`.
    private var bus: OpaquePointer?
    private let queue = DispatchQueue(label: "gbgbridge.bluez")

    private init() {}

    /// Connects to BlueZ on the system bus, or on the bus at `address` (`unix:path=…`).
    public static func open(address: String? = nil) async throws(BlueZError) -> BlueZSession {
        let session = BlueZSession()
        try await session.run { () throws(BlueZError) in
            var bus: OpaquePointer?
            try Self.check(Self.withError { CBlueZShim_open(&bus, address, $0, $1, BlueZ.microseconds(callTimeout)) })
            session.bus = bus
        }
        return session
    }

    deinit {
        if let bus { CBlueZShim_close(bus) }
    }

    /// Closes the connection (idempotent).
    public func close() async {
        try? await run { () throws(BlueZError) in
            if let bus = self.bus { CBlueZShim_close(bus) }
            self.bus = nil
        }
    }

    /// Runs `body` on the session's queue.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws(BlueZError) -> T) async throws(BlueZError) -> T {
        try await BlueZ.run(on: queue, body)
    }

    private func connected() throws(BlueZError) -> OpaquePointer {
        guard let bus else { throw BlueZError(code: .failed, reason: "the BlueZ session is closed", fix: "") }
        return bus
    }

    /// Calls `body` with an error buffer; returns its status and the error text.
    static func withError(_ body: (UnsafeMutablePointer<CChar>?, Int) -> Int32) -> (Int32, String) {
        var error = [CChar](repeating: 0, count: 512)
        let status = error.withUnsafeMutableBufferPointer { buffer in body(buffer.baseAddress, buffer.count) }
        return (status, BlueZ.text(error))
    }

    @discardableResult
    static func check(_ outcome: (Int32, String)) throws(BlueZError) -> Int32 {
        guard outcome.0 >= 0 else { throw BlueZ.classify(status: outcome.0, message: outcome.1) }
        return outcome.0
    }

    /// Bounds every later call by `timeout` (a session ending with a holder that may not answer).
    public func setCallTimeout(_ timeout: Duration) async {
        try? await run { () throws(BlueZError) in
            let bus = try self.connected()
            CBlueZShim_set_timeout(bus, max(1, BlueZ.microseconds(timeout)))
        }
    }

    /// SetDiscoveryFilter: LE only, and the service UUID when given.
    public func setDiscoveryFilter(adapter: String, uuid: String?) async throws(BlueZError) {
        try await run { () throws(BlueZError) in
            let bus = try self.connected()
            try Self.check(Self.withError { CBlueZShim_set_discovery_filter(bus, adapter, uuid, $0, $1) })
        }
    }

    /// A method with no arguments and no answer (StartDiscovery, StopDiscovery, Connect, Disconnect).
    public func call(_ path: String, _ interface: String, _ method: String) async throws(BlueZError) {
        try await run { () throws(BlueZError) in
            let bus = try self.connected()
            try Self.check(Self.withError { CBlueZShim_call_void(bus, path, interface, method, $0, $1) })
        }
    }

    /// The device under `adapter` that offers `uuid` (or has `address`), if BlueZ knows one yet.
    public func findDevice(adapter: String, uuid: String, address: String?) async throws(BlueZError) -> String? {
        try await run { () throws(BlueZError) -> String? in
            let bus = try self.connected()
            var path = [CChar](repeating: 0, count: 512)
            let found = try Self.check(Self.withError { CBlueZShim_find_device(bus, adapter, uuid, address, &path, path.count, $0, $1) })
            return found == 1 ? BlueZ.text(path) : nil
        }
    }

    /// A boolean property.
    public func bool(_ path: String, _ interface: String, _ property: String) async throws(BlueZError) -> Bool {
        try await run { () throws(BlueZError) -> Bool in
            let bus = try self.connected()
            var value: Int32 = 0
            try Self.check(Self.withError { CBlueZShim_get_bool(bus, path, interface, property, &value, $0, $1) })
            return value != 0
        }
    }

    /// A string property (a device's `Address` and `AddressType`, an adapter's `Address`), at most 255 bytes.
    public func string(_ path: String, _ interface: String, _ property: String) async throws(BlueZError) -> String {
        try await run { () throws(BlueZError) -> String in
            let bus = try self.connected()
            var out = [CChar](repeating: 0, count: 256)
            try Self.check(Self.withError { CBlueZShim_get_string(bus, path, interface, property, &out, out.count, $0, $1) })
            return BlueZ.text(out)
        }
    }

    /// The paths of `device`'s service `service` characteristics `uuids` (nil where absent); nil
    /// when the service is not (yet) resolved.
    public func characteristics(device: String, service: String, uuids: [String]) async throws(BlueZError) -> [String?]? {
        try await run { () throws(BlueZError) -> [String?]? in
            let bus = try self.connected()
            guard uuids.count <= 8 else { throw BlueZError(code: .failed, reason: "more than 8 characteristics asked for", fix: "") }
            var paths = [CChar](repeating: 0, count: 512 * uuids.count)
            let cStrings = uuids.map { strdup($0) }
            defer { cStrings.forEach { free($0) } }
            let pointers = cStrings.map { UnsafePointer($0) }
            let found = try Self.check(Self.withError { error, length in
                pointers.withUnsafeBufferPointer { list in
                    CBlueZShim_find_characteristics(bus, device, service, list.baseAddress, Int32(uuids.count), &paths, 512, error, length)
                }
            })
            guard found == 1 else { return nil }
            return (0..<uuids.count).map { index in
                let slice = paths[(index * 512)..<((index + 1) * 512)]
                let text = BlueZ.text(slice)
                return text.isEmpty ? nil : text
            }
        }
    }

    /// ReadValue, at most `maximum` bytes kept.
    public func readValue(_ characteristic: String, maximum: Int = 512) async throws(BlueZError) -> [UInt8] {
        try await run { () throws(BlueZError) -> [UInt8] in
            let bus = try self.connected()
            var out = [UInt8](repeating: 0, count: maximum)
            var count = 0
            try Self.check(Self.withError { CBlueZShim_read_value(bus, characteristic, &out, out.count, &count, $0, $1) })
            return Array(out.prefix(count))
        }
    }

    /// WriteValue with `type` "command" (without response) or "request".
    public func writeValue(_ characteristic: String, _ bytes: [UInt8], type: String) async throws(BlueZError) {
        try await run { () throws(BlueZError) in
            let bus = try self.connected()
            try Self.check(Self.withError { CBlueZShim_write_value(bus, characteristic, bytes, bytes.count, type, $0, $1) })
        }
    }

    /// AcquireNotify or AcquireWrite: a socket of our own (the caller closes it) and the ATT MTU.
    public func acquire(_ characteristic: String, _ method: String) async throws(BlueZError) -> (fd: Int32, mtu: Int) {
        try await run { () throws(BlueZError) -> (fd: Int32, mtu: Int) in
            let bus = try self.connected()
            var fd: Int32 = -1
            var mtu: UInt32 = 0
            try Self.check(Self.withError { CBlueZShim_acquire(bus, characteristic, method, &fd, &mtu, $0, $1) })
            return (fd, Int(mtu))
        }
    }
}
