import BlueZ
import Mdoc
#if canImport(Glibc)
import Glibc
#endif

/// The holder's side of mdoc peripheral server mode through BlueZ (the project's own test
/// wallet over BLE, `gbgbridge emulate --mdoc… --transport ble`): after each NFC engagement, the
/// engagement's service — State, Client2Server, Server2Client, Ident — and an advertisement of it
/// registered with BlueZ; the reader connects, subscribes, writes State 0x01 and its messages;
/// each is answered by `respond` in notifications of the link's MTU; State 0x02 (or a new
/// engagement) ends the session and the service is withdrawn, and `afterSession` runs (a QR
/// holder makes its next engagement there). With `l2cap` the service also offers an L2CAP
/// characteristic (the PSM of an LE credit-based channel the kernel listens on): a reader that
/// opens it has its messages answered there, length-led (`MdocBLEL2CAP`), and the session ends
/// when it closes the channel. Runs until cancelled.
public enum MdocBLEHolder {
    /// Bounds what one reader message may be (a request with reader authentication is a few KB).
    public static let maximumMessage = 1 << 20

    public static func serve(serviceUUID: BLEUUID, adapters: [String], busAddress: String? = nil, l2cap: Bool = false,
                             engagement: @escaping @Sendable () -> DeviceEngagement?,
                             respond: @escaping @Sendable ([UInt8]) -> [UInt8],
                             log: @escaping @Sendable (String) -> Void,
                             afterSession: (@Sendable () -> Void)? = nil) async {
        let wanted = MdocBLEMode.peripheralServer.characteristics
        var listener: (fd: Int32, psm: UInt16)?
        if l2cap {
            do {
                let opened = try BlueZL2CAP.listen(localAddress: nil)
                listener = opened
                log("BLE: L2CAP listening on PSM \(opened.psm)")
            } catch {
                log("BLE: no L2CAP channel offered: \(error.reason)")
            }
        }
        defer { if let listener { close(listener.fd) } }
        var served: [UInt8]?
        while !Task.isCancelled {
            guard let current = engagement(), current.bytes != served else {
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            served = current.bytes
            let ident: [UInt8]
            do { ident = try MdocBLEIdent.derive(engagement: current) } catch {
                log("BLE: the engagement's Ident cannot be derived: \(error.reason)")
                continue
            }
            let server: BlueZGATTServer
            do {
                let uuids = [wanted.state, wanted.client2Server, wanted.server2Client, wanted.ident] + (listener == nil ? [] : [wanted.l2cap])
                server = try await BlueZGATTServer.open(address: busAddress, adapters: adapters, serviceUUID: serviceUUID.description,
                                                        characteristics: uuids.map(\.description), ident: ident,
                                                        l2capValue: listener.map { MdocBLEL2CAP.characteristicValue(psm: $0.psm) },
                                                        inboxLimit: maximumMessage + maximumMessage / 8)
            } catch {
                log("BLE: advertising \(serviceUUID) failed: \(error.reason)\(error.fix.isEmpty ? "" : " — \(error.fix)")")
                try? await Task.sleep(for: .seconds(1))
                served = nil
                continue
            }
            log("BLE: advertising \(serviceUUID) for the engagement just made")
            await session(server, listener: listener, respond: respond, log: log) { engagement()?.bytes != current.bytes }
            await server.close()
            afterSession?()
        }
    }

    /// One session on `server` until State 0x02, a link error, or `superseded` (a new engagement).
    static func session(_ server: BlueZGATTServer, listener: (fd: Int32, psm: UInt16)?, respond: @Sendable ([UInt8]) -> [UInt8],
                        log: @Sendable (String) -> Void, superseded: () -> Bool) async {
        var assembler = MdocBLEAssembler(maximumBytes: maximumMessage)
        var started = false
        while !Task.isCancelled, !superseded() {
            if !started, let listener {
                switch Result(catching: { () throws(BlueZError) in try BlueZL2CAP.accept(listener.fd) }) {
                case .success(let channel?):
                    let link = MdocBLEL2CAP.Link(fd: channel.fd, psm: listener.psm, sendMTU: channel.sendMTU, receiveMTU: channel.receiveMTU,
                                                 maximumMessage: maximumMessage, peer: "the reader")
                    log("BLE: the reader opened the L2CAP channel (PSM \(listener.psm), MTU \(link.sendMTU))")
                    await session(server, link: link, respond: respond, log: log, superseded: superseded)
                    await link.close()
                    return
                case .success(nil): break
                case .failure(let error): log("BLE: accepting an L2CAP channel: \(error.reason)")
                }
            }
            let status: BlueZGATTServer.Status, pieces: [[UInt8]]
            do {
                (status, pieces) = try await server.pump(for: .milliseconds(100))
            } catch {
                log("BLE: \(error.reason)")
                return
            }
            if status.overflowed {
                log("BLE: the reader wrote more than a message may be; session dropped")
                return
            }
            if !started, status.lastState == MdocBLEState.start.rawValue {
                started = true
                log("BLE: the reader started the session (MTU \(status.mtu))")
            }
            for piece in pieces {
                do {
                    guard let message = try assembler.take(piece) else { continue }
                    let answer = respond(message)
                    guard !answer.isEmpty else { continue }
                    for chunk in MdocBLEFraming.fragments(answer, mtu: status.mtu) {
                        try await server.notify(.server2Client, chunk)
                    }
                    log("BLE: answered \(answer.count) bytes")
                } catch {
                    if let reason = Self.reason(error) { log("BLE: \(reason)") }
                    return
                }
            }
            if status.lastState == MdocBLEState.end.rawValue, started {
                log("BLE: the reader ended the session")
                return
            }
        }
    }

    /// The session over an L2CAP channel the reader opened, until it closes it (or a link error,
    /// or a new engagement). The GATT server is tended between looks at the channel.
    static func session(_ server: BlueZGATTServer, link: MdocBLEL2CAP.Link, respond: @Sendable ([UInt8]) -> [UInt8],
                        log: @Sendable (String) -> Void, superseded: () -> Bool) async {
        while !Task.isCancelled, !superseded() {
            do {
                _ = try await server.pump(for: .milliseconds(10))
                guard let message = try await link.receive(within: .milliseconds(100)) else { continue }
                let answer = respond(message)
                guard !answer.isEmpty else { continue }
                try await link.send(answer, deadline: ContinuousClock.now + .seconds(10))
                log("BLE: answered \(answer.count) bytes over L2CAP")
            } catch {
                if let reason = Self.reason(error) {
                    log(reason.contains("closed the L2CAP channel") ? "BLE: the reader ended the session (closed the L2CAP channel)" : "BLE: \(reason)")
                }
                return
            }
        }
    }

    /// What ended a session, in words (nil: cancelled).
    static func reason(_ error: any Error) -> String? {
        switch error {
        case let error as MdocError: return error.reason
        case let error as BlueZError: return error.reason
        default: return nil
        }
    }
}
