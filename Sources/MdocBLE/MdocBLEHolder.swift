import BlueZ
import Mdoc

/// The holder's side of mdoc peripheral server mode through BlueZ (the project's own test
/// wallet over BLE, `gbgbridge emulate --mdoc… --transport ble`): after each NFC engagement, the
/// engagement's service — State, Client2Server, Server2Client, Ident — and an advertisement of it
/// registered with BlueZ; the reader connects, subscribes, writes State 0x01 and its messages;
/// each is answered by `respond` in notifications of the link's MTU; State 0x02 (or a new
/// engagement) ends the session and the service is withdrawn, and `afterSession` runs (a QR
/// holder makes its next engagement there). Runs until cancelled.
public enum MdocBLEHolder {
    /// Bounds what one reader message may be (a request with reader authentication is a few KB).
    public static let maximumMessage = 1 << 20

    public static func serve(serviceUUID: BLEUUID, adapters: [String], busAddress: String? = nil,
                             engagement: @escaping @Sendable () -> DeviceEngagement?,
                             respond: @escaping @Sendable ([UInt8]) -> [UInt8],
                             log: @escaping @Sendable (String) -> Void,
                             afterSession: (@Sendable () -> Void)? = nil) async {
        let wanted = MdocBLEMode.peripheralServer.characteristics
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
                server = try await BlueZGATTServer.open(address: busAddress, adapters: adapters, serviceUUID: serviceUUID.description,
                                                        characteristics: [wanted.state, wanted.client2Server, wanted.server2Client, wanted.ident].map(\.description),
                                                        ident: ident, inboxLimit: maximumMessage + maximumMessage / 8)
            } catch {
                log("BLE: advertising \(serviceUUID) failed: \(error.reason)\(error.fix.isEmpty ? "" : " — \(error.fix)")")
                try? await Task.sleep(for: .seconds(1))
                served = nil
                continue
            }
            log("BLE: advertising \(serviceUUID) for the engagement just made")
            await session(server, respond: respond, log: log) { engagement()?.bytes != current.bytes }
            await server.close()
            afterSession?()
        }
    }

    /// One session on `server` until State 0x02, a link error, or `superseded` (a new engagement).
    static func session(_ server: BlueZGATTServer, respond: @Sendable ([UInt8]) -> [UInt8], log: @Sendable (String) -> Void,
                        superseded: () -> Bool) async {
        var assembler = MdocBLEAssembler(maximumBytes: maximumMessage)
        var started = false
        while !Task.isCancelled, !superseded() {
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
                } catch let error as MdocError {
                    log("BLE: \(error.reason)")
                    return
                } catch let error as BlueZError {
                    log("BLE: \(error.reason)")
                    return
                } catch {
                    return
                }
            }
            if status.lastState == MdocBLEState.end.rawValue, started {
                log("BLE: the reader ended the session")
                return
            }
        }
    }
}
