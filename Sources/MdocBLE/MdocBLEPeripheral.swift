import BlueZ
import Mdoc
import MdocNFC

/// The kiosk as GATT server for a holder in mdoc central client mode (ISO 18013-5
/// §8.3.3.1.1.4–7): the engagement's service — State, Client2Server, Server2Client and Ident
/// (HKDF of EDeviceKeyBytes, which the holder checks before it answers) — and an advertisement of
/// it, registered with BlueZ on every powered adapter. The holder connects, subscribes, writes
/// State 0x01; the kiosk then notifies each message in pieces on Server2Client and assembles the
/// holder's answer from its Client2Server writes. Everything inside the read's deadline, every
/// buffer bounded; `end()` notifies State 0x02 and leaves the bus (BlueZ drops the service and
/// the advertisement).
public final class MdocBLEPeripheral: MdocSessionChannel, @unchecked Sendable {
    public let plan: MdocBLEPlan
    public private(set) var bleTimings = MdocBLECentral.Timings()
    let server: BlueZGATTServer
    let deadline: ContinuousClock.Instant
    let maximumMessage: Int
    private(set) var mtu = MdocBLEFraming.minimumMTU
    private var closed = false
    /// Pieces that arrived before they were asked for (the holder's answer may start at once).
    private var pending: [[UInt8]] = []

    /// How long one pump waits for BlueZ before the deadline is looked at again.
    static let pumpInterval: Duration = .milliseconds(100)

    private init(plan: MdocBLEPlan, server: BlueZGATTServer, deadline: ContinuousClock.Instant, maximumMessage: Int) {
        self.plan = plan
        self.server = server
        self.deadline = deadline
        self.maximumMessage = maximumMessage
    }

    /// Advertises `plan`'s service on `adapters` and waits for the holder to connect, subscribe
    /// and write State 0x01.
    public static func open(plan: MdocBLEPlan, adapters: [String], deviceKeyBytes: [UInt8], deadline: ContinuousClock.Instant,
                            maximumMessage: Int, busAddress: String? = nil) async throws(MdocError) -> MdocBLEPeripheral {
        guard plan.mode == .centralClient else { throw MdocError(.unsupported, "the kiosk serves GATT only in mdoc central client mode") }
        guard !adapters.isEmpty else { throw MdocError(.bleTransport, "BLE needs a powered Bluetooth adapter; BlueZ lists none") }
        let ident = try MdocBLEIdent.derive(deviceKeyBytes: deviceKeyBytes)
        let wanted = MdocBLEMode.centralClient.characteristics
        let started = ContinuousClock.now
        let server: BlueZGATTServer
        do {
            let left = deadline - started
            server = try await BlueZGATTServer.open(address: busAddress, adapters: adapters, serviceUUID: plan.serviceUUID.description,
                                                    characteristics: [wanted.state, wanted.client2Server, wanted.server2Client, wanted.ident].map(\.description),
                                                    ident: ident, inboxLimit: maximumMessage + maximumMessage / 8 + 4096,
                                                    timeout: min(left, BlueZSession.callTimeout))
        } catch {
            throw MdocBLECentral.error(error, "advertising the kiosk's service (mdoc central client mode)")
        }
        let peripheral = MdocBLEPeripheral(plan: plan, server: server, deadline: deadline, maximumMessage: maximumMessage)
        let advertised = ContinuousClock.now
        do throws(MdocError) {
            // The holder connects, subscribes to Server2Client and writes State 0x01.
            while true {
                let status = try await peripheral.pumpOnce()
                if status.lastState == MdocBLEState.end.rawValue {
                    throw MdocError(.sessionTerminated, "the holder ended the BLE session before it started (State 0x02)")
                }
                if status.lastState == MdocBLEState.start.rawValue && status.server2ClientNotifying { break }
                if let state = status.lastState, state != MdocBLEState.start.rawValue {
                    throw MdocError(.bleTransport, "the holder wrote State 0x\(String(state, radix: 16)); ISO 18013-5 knows 0x01 (start) and 0x02 (end)")
                }
                guard ContinuousClock.now < deadline else {
                    throw MdocError(.timeout, status.stateWrites == 0 && !status.server2ClientNotifying
                        ? "no holder connected to the kiosk's BLE service (\(plan.serviceUUID)) before the read's deadline"
                        : "the holder connected but did not start the BLE session (subscribe to Server2Client, State 0x01) before the read's deadline")
                }
            }
        } catch {
            await peripheral.end()
            throw error
        }
        peripheral.bleTimings.scan = advertised - started
        peripheral.bleTimings.connect = ContinuousClock.now - advertised
        return peripheral
    }

    /// One pump: BlueZ's calls handled, the status read, arrived pieces kept.
    private func pumpOnce() async throws(MdocError) -> BlueZGATTServer.Status {
        let left = deadline - ContinuousClock.now
        let (status, pieces) = try await MdocBLECentral.bluez("waiting for the holder") {
            try await server.pump(for: max(.zero, min(left, Self.pumpInterval)))
        }
        if status.overflowed {
            throw MdocError(.limitExceeded, "the holder wrote more to Client2Server than a message may be (\(maximumMessage) bytes)")
        }
        mtu = min(max(status.mtu, MdocBLEFraming.minimumMTU), MdocBLEFraming.maximumMTU)
        pending += pieces
        return status
    }

    public func exchange(_ message: [UInt8]) async throws(MdocError) -> [UInt8] {
        let started = ContinuousClock.now
        defer { bleTimings.transfer += ContinuousClock.now - started }
        for piece in MdocBLEFraming.fragments(message, mtu: mtu) {
            try await MdocBLECentral.bluez("notifying Server2Client") { try await server.notify(.server2Client, piece) }
        }
        var assembler = MdocBLEAssembler(maximumBytes: maximumMessage)
        while true {
            // Through an index, not removeFirst: at the smallest MTU a message is 100k pieces.
            for (index, piece) in pending.enumerated() {
                if let answer = try assembler.take(piece) {
                    pending.removeFirst(index + 1)
                    return answer
                }
            }
            pending.removeAll(keepingCapacity: true)
            let status = try await pumpOnce()
            if pending.isEmpty {
                if status.lastState == MdocBLEState.end.rawValue {
                    throw MdocError(.sessionTerminated, "the holder ended the BLE session (State 0x02) without an answer")
                }
                guard ContinuousClock.now < deadline else {
                    throw MdocError(.timeout, "the holder's answer over BLE did not come before the read's deadline")
                }
            }
        }
    }

    /// State 0x02 notified (best effort, once), then the service and advertisement withdrawn.
    public func end() async {
        guard !closed else { return }
        closed = true
        try? await server.notify(.state, [MdocBLEState.end.rawValue])
        _ = try? await server.pump(for: .milliseconds(50))
        await server.close()
    }

    public var carrier: String { "ble" }

    public var timings: [String: Double] {
        ["advertise": MdocBLECentral.seconds(bleTimings.scan), "connect": MdocBLECentral.seconds(bleTimings.connect),
         "transfer": MdocBLECentral.seconds(bleTimings.transfer)]
    }
}
