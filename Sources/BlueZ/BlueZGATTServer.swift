import CBlueZShim
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The kiosk as a GATT server with an LE advertisement, registered with BlueZ on one or more
/// adapters (mdoc central client mode: the holder connects to us). Like `BlueZSession`, every
/// call runs on the server's own serial queue, never on the cooperative pool; BlueZ's calls
/// into us (GetManagedObjects, WriteValue, StartNotify) are handled while `pump` waits.
public final class BlueZGATTServer: @unchecked Sendable {
    /// What the holder has done so far.
    public struct Status: Sendable, Equatable {
        /// The last byte written to State (nil: none yet).
        public var lastState: UInt8?
        public var stateWrites: Int
        public var stateNotifying: Bool
        public var server2ClientNotifying: Bool
        /// The link's ATT MTU as BlueZ last gave it (23 until a write told).
        public var mtu: Int
        /// The holder wrote more to Client2Server than the inbox holds.
        public var overflowed: Bool
    }

    /// Which characteristic to notify.
    public enum Notifying: Int32, Sendable {
        case state = 0
        case server2Client = 2
    }

    // Touched only on `queue`.
    private var server: OpaquePointer?
    private let queue = DispatchQueue(label: "gbgbridge.bluez.server")

    private init() {}

    deinit {
        if let server { CBlueZShim_server_close(server) }
    }

    /// Exports the service `serviceUUID` with `characteristics` (State, Client2Server,
    /// Server2Client, Ident — in that order — and a fifth, L2CAP, reading `l2capValue`, when that
    /// is given) whose Ident reads `ident`, and an advertisement of it, on each of `adapters`;
    /// waits at most `timeout` for BlueZ to accept them.
    public static func open(address: String? = nil, adapters: [String], serviceUUID: String, characteristics: [String], ident: [UInt8],
                            l2capValue: [UInt8]? = nil, inboxLimit: Int, timeout: Duration = BlueZSession.callTimeout) async throws(BlueZError) -> BlueZGATTServer {
        guard characteristics.count == (l2capValue == nil ? 4 : 5), !adapters.isEmpty, ident.count <= 64, (l2capValue?.count ?? 0) <= 8 else {
            throw BlueZError(code: .failed, reason: "a GATT server needs 4 characteristics (5 with L2CAP's value of at most 8 bytes), an adapter and an Ident of at most 64 bytes", fix: "")
        }
        let server = BlueZGATTServer()
        try await server.run { () throws(BlueZError) in
            var opened: OpaquePointer?
            let cStrings = characteristics.map { strdup($0) }
            defer { cStrings.forEach { free($0) } }
            let pointers = cStrings.map { UnsafePointer($0) }
            // At least 1 µs: a deadline already past still gets BlueZ's typed timeout, not a trap.
            let microseconds = max(1, BlueZ.microseconds(timeout))
            try BlueZSession.check(BlueZSession.withError { error, length in
                pointers.withUnsafeBufferPointer { list in
                    if let l2capValue {
                        return CBlueZShim_server_open(&opened, address, adapters.joined(separator: "\n"), serviceUUID.lowercased(), list.baseAddress,
                                                      ident, ident.count, l2capValue, l2capValue.count, max(inboxLimit, 1), microseconds, error, length)
                    }
                    return CBlueZShim_server_open(&opened, address, adapters.joined(separator: "\n"), serviceUUID.lowercased(), list.baseAddress,
                                                  ident, ident.count, nil, 0, max(inboxLimit, 1), microseconds, error, length)
                }
            })
            server.server = opened
        }
        return server
    }

    func run<T: Sendable>(_ body: @escaping @Sendable () throws(BlueZError) -> T) async throws(BlueZError) -> T {
        try await BlueZ.run(on: queue, body)
    }

    private func opened() throws(BlueZError) -> OpaquePointer {
        guard let server else { throw BlueZError(code: .failed, reason: "the GATT server is closed", fix: "") }
        return server
    }

    /// Handles BlueZ's calls for at most `duration` (returning as soon as something arrived),
    /// then the status and the Client2Server pieces that arrived.
    public func pump(for duration: Duration) async throws(BlueZError) -> (status: Status, pieces: [[UInt8]]) {
        try await run { () throws(BlueZError) -> (status: Status, pieces: [[UInt8]]) in
            let server = try self.opened()
            let pumped = CBlueZShim_server_pump(server, BlueZ.microseconds(duration))
            guard pumped >= 0 else { throw BlueZ.classify(status: pumped, message: "the bus connection to BlueZ failed") }
            var pieces: [[UInt8]] = []
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                var length = 0
                let taken = CBlueZShim_server_take_piece(server, &buffer, buffer.count, &length)
                guard taken == 1 else { break }
                pieces.append(Array(buffer.prefix(length)))
            }
            var last: Int32 = -1, writes: Int32 = 0, notifying: Int32 = 0, overflow: Int32 = 0
            var mtu: UInt32 = 23
            CBlueZShim_server_status(server, &last, &writes, &notifying, &mtu, &overflow)
            let status = Status(lastState: last >= 0 ? UInt8(truncatingIfNeeded: last) : nil, stateWrites: Int(writes),
                                stateNotifying: notifying & 1 != 0, server2ClientNotifying: notifying & 4 != 0,
                                mtu: Int(mtu), overflowed: overflow != 0)
            return (status, pieces)
        }
    }

    /// Sets `characteristic`'s value to `bytes` (at most 512) and notifies the holder.
    public func notify(_ characteristic: Notifying, _ bytes: [UInt8]) async throws(BlueZError) {
        try await run { () throws(BlueZError) in
            let server = try self.opened()
            try BlueZSession.check(BlueZSession.withError { CBlueZShim_server_notify(server, characteristic.rawValue, bytes, bytes.count, $0, $1) })
        }
    }

    /// Leaves the bus: BlueZ drops the application and the advertisement (idempotent).
    public func close() async {
        try? await run { () throws(BlueZError) in
            if let server = self.server { CBlueZShim_server_close(server) }
            self.server = nil
        }
    }
}
