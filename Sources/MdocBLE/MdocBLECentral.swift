import BlueZ
import Dispatch
import Mdoc
#if canImport(Glibc)
import Glibc
#endif

/// The kiosk as GATT client of a holder in mdoc peripheral server mode (ISO 18013-5
/// §8.3.3.1.1.4–6), through BlueZ: scan for the engagement's service UUID (LE only), connect,
/// wait for the services, check Ident where the holder offers it, subscribe to Server2Client
/// (AcquireNotify), write State 0x01, then each message in pieces to Client2Server
/// (AcquireWrite, else WriteValue without response) and the holder's answer assembled from its
/// notifications. Everything inside the read's deadline, every buffer bounded; `end()` writes
/// State 0x02 and disconnects. A holder whose service offers the L2CAP characteristic is read
/// over an LE credit-based channel to its PSM instead (`MdocBLEL2CAP`; policy `auto`), and over
/// GATT when that channel cannot be opened (`l2capNotUsed` says why).
public final class MdocBLECentral: @unchecked Sendable {
    public struct Timings: Sendable, Equatable {
        /// Scanning until the holder was seen.
        public var scan: Duration = .zero
        /// Connecting until the services were resolved and subscribed.
        public var connect: Duration = .zero
        /// Every message out and its answer back.
        public var transfer: Duration = .zero
    }

    public let plan: MdocBLEPlan
    public let adapter: String
    public let device: String
    public private(set) var mtu: Int
    public private(set) var bleTimings = Timings()
    let session: BlueZSession
    let deadline: ContinuousClock.Instant
    let maximumMessage: Int
    let characteristics: (state: String, client2Server: String, server2Client: String)
    let notify: Int32?
    let write: Int32?
    /// The L2CAP channel the session runs on, when the holder offered one and it opened.
    public let l2cap: MdocBLEL2CAP.Link?
    /// Why a holder's L2CAP characteristic was not used (the session ran over GATT), if it offered one.
    public private(set) var l2capNotUsed: String?
    private let io = DispatchQueue(label: "gbgbridge.mdoc-ble.io")
    private var closed = false

    /// How long opening a holder's L2CAP channel may take (at most half of what the read has
    /// left): a channel that does not open leaves the time to read over GATT.
    static let l2capConnectTimeout: Duration = .seconds(5)

    /// How often BlueZ is asked whether the holder was seen, or its services resolved.
    static let pollInterval: Duration = .milliseconds(200)

    private init(plan: MdocBLEPlan, adapter: String, device: String, mtu: Int, session: BlueZSession, deadline: ContinuousClock.Instant,
                 maximumMessage: Int, characteristics: (String, String, String), notify: Int32?, write: Int32?,
                 l2cap: MdocBLEL2CAP.Link? = nil, l2capNotUsed: String? = nil) {
        self.plan = plan
        self.adapter = adapter
        self.device = device
        self.mtu = mtu
        self.session = session
        self.deadline = deadline
        self.maximumMessage = maximumMessage
        self.characteristics = characteristics
        self.notify = notify
        self.write = write
        self.l2cap = l2cap
        self.l2capNotUsed = l2capNotUsed
    }

    deinit {
        if let notify { close(notify) }
        if let write { close(write) }
    }

    /// Finds and connects to the holder of `plan` (peripheral server mode) through whichever of
    /// `adapters` (`/org/bluez/hci0`, …: every powered one; a kiosk may have several, and a
    /// controller never sees its own advertisements) sees it first. `deviceKeyBytes`
    /// (EDeviceKeyBytes, tagged) checks Ident when offered.
    public static func connect(plan: MdocBLEPlan, adapters: [String], deviceKeyBytes: [UInt8]?, deadline: ContinuousClock.Instant,
                               maximumMessage: Int, busAddress: String? = nil,
                               l2cap: MdocBLEL2CAP.Policy = .auto) async throws(MdocError) -> MdocBLECentral {
        guard !adapters.isEmpty else { throw MdocError(.bleTransport, "BLE needs a powered Bluetooth adapter; BlueZ lists none") }
        guard plan.mode == .peripheralServer else {
            throw MdocError(.unsupported, "the kiosk is the GATT client only in mdoc peripheral server mode (central client mode: MdocBLEPeripheral)")
        }
        let session: BlueZSession
        do { session = try await BlueZSession.open(address: busAddress) } catch { throw Self.error(error, "connecting to BlueZ") }
        do {
            return try await connect(plan: plan, adapters: adapters, session: session, deviceKeyBytes: deviceKeyBytes, deadline: deadline,
                                     maximumMessage: maximumMessage, l2cap: l2cap)
        } catch {
            await session.close()
            throw error
        }
    }

    private static func connect(plan: MdocBLEPlan, adapters: [String], session: BlueZSession, deviceKeyBytes: [UInt8]?,
                                deadline: ContinuousClock.Instant, maximumMessage: Int, l2cap: MdocBLEL2CAP.Policy) async throws(MdocError) -> MdocBLECentral {
        let service = plan.serviceUUID.description
        let address = plan.address.map { bytes in bytes.map { byte -> String in
            let text = String(byte, radix: 16, uppercase: true)
            return text.count == 1 ? "0" + text : text
        }.joined(separator: ":") }
        let started = ContinuousClock.now

        /// The first adapter under which BlueZ knows the holder, and the holder's path there.
        func seen(_ adapters: [String]) async throws(MdocError) -> (adapter: String, device: String)? {
            for adapter in adapters {
                if let device = try await bluez("looking for the holder", { try await session.findDevice(adapter: adapter, uuid: service, address: address) }) {
                    return (adapter, device)
                }
            }
            return nil
        }

        // Scan: LE, filtered by the service UUID, on every adapter; a device BlueZ knows already is
        // taken at once. An adapter that refuses to scan (busy just after power-on, another
        // client's discovery starting) is asked again each second until the deadline.
        var sighting = try await seen(adapters)
        var scanning: [String] = []
        var refusals: [String: MdocError] = [:]
        func startScans(_ candidates: [String]) async {
            for adapter in candidates {
                do {
                    try await bluez("setting the scan filter") { try await session.setDiscoveryFilter(adapter: adapter, uuid: service) }
                    try await bluez("starting the scan") { try await session.call(adapter, "org.bluez.Adapter1", "StartDiscovery") }
                    scanning.append(adapter)
                    refusals[adapter] = nil
                } catch {
                    refusals[adapter] = error
                }
            }
        }
        if sighting == nil {
            await startScans(adapters)
            if scanning.isEmpty, let refusal = refusals.values.first, refusal.code == .timeout { throw refusal }
        }
        // On a failure the session closes, and BlueZ ends the discovery of a client that left the bus.
        var lastRetry = ContinuousClock.now
        while sighting == nil {
            let names = { (paths: [String]) in paths.map { $0.split(separator: "/").last.map(String.init) ?? $0 }.joined(separator: ", ") }
            let why = refusals.isEmpty ? "" : "; \(names(refusals.keys.sorted())) would not scan (\(refusals.values.first?.reason ?? ""))"
            try await pause(until: deadline, "the holder (service \(service)) was not seen over BLE\(scanning.isEmpty ? "" : " (scanning on \(names(scanning)))")\(why)")
            if !refusals.isEmpty, ContinuousClock.now - lastRetry >= .seconds(1) {
                lastRetry = ContinuousClock.now
                await startScans(refusals.keys.sorted())
            }
            sighting = try await seen(scanning.isEmpty ? adapters : scanning)
        }
        for adapter in scanning { try? await session.call(adapter, "org.bluez.Adapter1", "StopDiscovery") }
        guard let (adapter, device) = sighting else { throw MdocError(.bleTransport, "the holder was not seen over BLE") }
        let scanned = ContinuousClock.now

        // Connect and wait for the services. From here on a failure disconnects (which also cancels
        // a connection attempt still pending): BlueZ keeps a link our session made even after we
        // leave the bus (seen in the VM: a holder refused for its Ident stayed connected, and its
        // controller advertised no more).
        do throws(MdocError) {
            try await bluez("connecting to the holder") { try await session.call(device, "org.bluez.Device1", "Connect") }
            let wanted = MdocBLEMode.peripheralServer.characteristics
            var found: [String?]?
            while true {
                let resolved = try await bluez("asking whether the holder's services are resolved") {
                    try await session.bool(device, "org.bluez.Device1", "ServicesResolved")
                }
                if resolved {
                    found = try await bluez("finding the holder's characteristics") {
                        try await session.characteristics(device: device, service: service,
                                                          uuids: [wanted.state, wanted.client2Server, wanted.server2Client, wanted.ident, wanted.l2cap].map(\.description))
                    }
                    if found != nil { break }
                }
                try await pause(until: deadline, "the holder's GATT services were not resolved in time")
            }
            guard let found, let state = found[0], let client2Server = found[1], let server2Client = found[2] else {
                throw MdocError(.bleTransport, "the holder's service \(service) lacks the State, Client2Server or Server2Client characteristic (ISO 18013-5 Table 11)")
            }
            if let ident = found[3], let deviceKeyBytes {
                let value = try await bluez("reading the holder's Ident") { try await session.readValue(ident, maximum: 64) }
                try MdocBLEIdent.check(value, deviceKeyBytes: deviceKeyBytes)
            }
            var l2capNotUsed: String?
            if let offered = found[4] {
                if l2cap == .never {
                    l2capNotUsed = "the holder offers L2CAP; this read was asked to keep to GATT"
                } else {
                    switch await openL2CAP(offered, adapter: adapter, device: device, session: session, deadline: deadline, maximumMessage: maximumMessage) {
                    case .success(let link):
                        let central = MdocBLECentral(plan: plan, adapter: adapter, device: device, mtu: link.sendMTU, session: session, deadline: deadline,
                                                     maximumMessage: maximumMessage, characteristics: (state, client2Server, server2Client),
                                                     notify: nil, write: nil, l2cap: link)
                        central.bleTimings.scan = scanned - started
                        central.bleTimings.connect = ContinuousClock.now - scanned
                        return central
                    case .failure(let why):
                        l2capNotUsed = why.reason
                    }
                }
            }
            let (notify, notifyMTU) = try await bluez("subscribing to Server2Client") { try await session.acquire(server2Client, "AcquireNotify") }
            var write: Int32?
            var mtu = notifyMTU
            if let acquired = try? await session.acquire(client2Server, "AcquireWrite") {
                write = acquired.fd
                mtu = min(mtu, acquired.mtu)
            }
            let central = MdocBLECentral(plan: plan, adapter: adapter, device: device, mtu: min(max(mtu, MdocBLEFraming.minimumMTU), MdocBLEFraming.maximumMTU),
                                         session: session, deadline: deadline, maximumMessage: maximumMessage,
                                         characteristics: (state, client2Server, server2Client), notify: notify, write: write,
                                         l2capNotUsed: l2capNotUsed)
            try await bluez("writing State start") { try await session.writeValue(state, [MdocBLEState.start.rawValue], type: "command") }
            central.bleTimings.scan = scanned - started
            central.bleTimings.connect = ContinuousClock.now - scanned
            return central
        } catch {
            await session.setCallTimeout(.seconds(2))
            try? await session.call(device, "org.bluez.Device1", "Disconnect")
            throw error
        }
    }

    /// Sends one message and returns the holder's answer.
    public func exchange(_ message: [UInt8]) async throws(MdocError) -> [UInt8] {
        let started = ContinuousClock.now
        defer { bleTimings.transfer += ContinuousClock.now - started }
        if let l2cap { return try await l2cap.exchange(message, deadline: deadline) }
        guard let notify else { throw MdocError(.bleTransport, "the BLE session has no channel") }
        for piece in MdocBLEFraming.fragments(message, mtu: mtu, write: true) {
            if let write {
                try await blocking { () throws(MdocError) in try Self.send(piece, to: write) }
            } else {
                let session = self.session, path = characteristics.client2Server
                try await Self.bluez("writing to Client2Server") { try await session.writeValue(path, piece, type: "command") }
            }
        }
        let deadline = self.deadline, mtu = self.mtu, maximumMessage = self.maximumMessage
        return try await blocking { () throws(MdocError) -> [UInt8] in
            var assembler = MdocBLEAssembler(maximumBytes: maximumMessage)
            while true {
                let piece = try Self.receive(from: notify, mtu: mtu, deadline: deadline)
                if let message = try assembler.take(piece) { return message }
            }
        }
    }

    /// State 0x02 (end), then disconnect; best effort, once, each call bounded by 2 s (a holder
    /// that floods or hangs does not hold the read).
    public func end() async {
        guard !closed else { return }
        closed = true
        if let l2cap {
            // Over L2CAP the session ends with SessionData status 20 (ISO 18013-5 §9.1.1.4): no
            // State write there. Best effort within 2 s of its own (a read that used up its deadline
            // still says goodbye), and the message is let out before the socket closes: closing
            // drops an SDU the kernel still holds for want of the holder's credits (CI of stop 62
            // saw a holder never get it).
            let goodbye = ContinuousClock.now + .seconds(2)
            if (try? await l2cap.send(SessionMessage.data(nil, status: SessionMessage.statusTermination), deadline: goodbye)) != nil {
                await l2cap.drain(until: goodbye)
            }
            await l2cap.close()
        }
        // Our ends of the notification and write sockets first: a holder streaming into them stops.
        if let notify { shutdown(notify, Int32(SHUT_RDWR)) }
        if let write { shutdown(write, Int32(SHUT_RDWR)) }
        await session.setCallTimeout(.seconds(2))
        if l2cap == nil { try? await session.writeValue(characteristics.state, [MdocBLEState.end.rawValue], type: "command") }
        try? await session.call(device, "org.bluez.Device1", "Disconnect")
        await session.close()
    }

    // MARK: - Helpers

    /// Reads the holder's PSM and opens a channel to it from `adapter`; or why not.
    private static func openL2CAP(_ characteristic: String, adapter: String, device: String, session: BlueZSession,
                                  deadline: ContinuousClock.Instant, maximumMessage: Int) async -> Result<MdocBLEL2CAP.Link, MdocError> {
        do throws(MdocError) {
            let value = try await bluez("reading the holder's L2CAP PSM") { try await session.readValue(characteristic, maximum: 16) }
            guard let psm = MdocBLEL2CAP.psm(value) else {
                throw MdocError(.bleTransport, "the holder's L2CAP characteristic holds no LE PSM (\(value.count) bytes)")
            }
            let peer = try await bluez("asking for the holder's address") { try await session.string(device, "org.bluez.Device1", "Address") }
            let typeName = try await bluez("asking for the holder's address type") { try await session.string(device, "org.bluez.Device1", "AddressType") }
            let local = try? await session.string(adapter, "org.bluez.Adapter1", "Address")
            guard let type = BlueZL2CAP.AddressType(rawValue: typeName) else {
                throw MdocError(.bleTransport, "BlueZ gives the holder an address type '\(typeName.prefix(16))', neither public nor random")
            }
            let timeout = min(l2capConnectTimeout, (deadline - ContinuousClock.now) / 2)
            let opened: Result<BlueZL2CAP.Channel, BlueZError> = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(returning: Result { () throws(BlueZError) in
                        try BlueZL2CAP.connect(localAddress: local, peer: peer, type: type, psm: psm, timeout: timeout)
                    })
                }
            }
            switch opened {
            case .success(let channel):
                return .success(MdocBLEL2CAP.Link(fd: channel.fd, psm: psm, sendMTU: channel.sendMTU, receiveMTU: channel.receiveMTU,
                                                   maximumMessage: maximumMessage))
            case .failure(let error):
                throw MdocError(.bleTransport, "opening the holder's L2CAP channel (PSM \(psm)): \(error.reason)")
            }
        } catch {
            return .failure(error)
        }
    }

    private func blocking<T: Sendable>(_ body: @escaping @Sendable () throws(MdocError) -> T) async throws(MdocError) -> T {
        let result: Result<T, MdocError> = await withCheckedContinuation { continuation in
            io.async { continuation.resume(returning: Result { () throws(MdocError) -> T in try body() }) }
        }
        return try result.get()
    }

    static func send(_ piece: [UInt8], to fd: Int32) throws(MdocError) {
        let sent = piece.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == piece.count else {
            throw MdocError(.bleTransport, "writing to the holder failed: \(sent < 0 ? String(cString: strerror(errno)) : "a short write") (the link is lost)")
        }
    }

    /// One notification, waiting at most until `deadline`.
    static func receive(from fd: Int32, mtu: Int, deadline: ContinuousClock.Instant) throws(MdocError) -> [UInt8] {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw MdocError(.timeout, "the holder's answer over BLE did not come before the read's deadline") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&descriptor, 1, min(milliseconds, 1000))
            if ready < 0, errno == EINTR { continue }
            guard ready >= 0 else { throw MdocError(.bleTransport, "waiting for the holder: \(String(cString: strerror(errno)))") }
            if ready == 0 { continue }
            var buffer = [UInt8](repeating: 0, count: MdocBLEFraming.maximumMTU - 3)
            // MSG_TRUNC: the notification's real length, so one longer than an ATT value can be is seen, not cut.
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_TRUNC)) }
            if count > buffer.count {
                throw MdocError(.bleTransport, "the holder sent a notification of \(count) bytes; an ATT value holds at most \(buffer.count)")
            }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else {
                throw MdocError(.bleTransport, count == 0 ? "the holder ended the BLE link mid-transfer" : "reading from the holder: \(String(cString: strerror(errno)))")
            }
            return Array(buffer.prefix(count))
        }
    }

    static func pause(until deadline: ContinuousClock.Instant, _ what: String) async throws(MdocError) {
        guard ContinuousClock.now + pollInterval < deadline else { throw MdocError(.timeout, "\(what) before the read's deadline") }
        do { try await Task.sleep(for: pollInterval) } catch { throw MdocError(.timeout, "the read was cancelled") }
    }

    static func bluez<T: Sendable>(_ what: String, _ body: () async throws -> T) async throws(MdocError) -> T {
        do {
            return try await body()
        } catch let error as BlueZError {
            throw Self.error(error, what)
        } catch {
            throw MdocError(.bleTransport, "\(what): \(error)")
        }
    }

    static func error(_ error: BlueZError, _ what: String) -> MdocError {
        MdocError(error.code == .timeout ? .timeout : .bleTransport, "\(what): \(error.reason)")
    }
}
