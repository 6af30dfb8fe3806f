import COSE
import Foundation
import Mdoc
import MdocBLE
import MdocNFC
import MRTDCrypto
import TestSupport
import Testing

/// The kiosk as GATT client of a holder in mdoc peripheral server mode, through BlueZ's D-Bus
/// API: against a stand-in bluetoothd with a holder behind it (dbus-python on a private bus,
/// `Independent/fake_bluez_holder.py`), good and hostile. The real bluetoothd and radio path is
/// the BLE VM test's (issue 52).
@Suite("mdoc over BLE: the GATT client through BlueZ's D-Bus API", .serialized,
       .enabled(if: PrivateDBus.available, "needs dbus-daemon and /usr/bin/python3 with dbus and gi (dbus, python3-dbus, python3-gi)"))
struct MdocBLECentralTests {
    static let script = "Tests/MdocTests/Independent/fake_bluez_holder.py"
    static let service = "45efef74-2b2c-4837-a9a3-b0e1d05a6917"

    struct Run: Sendable {
        var answer: [UInt8]?
        var error: MdocError?
        var timings: MdocBLECentral.Timings?
        var mtu: Int?
        var link: MdocCarrierLink?
    }

    /// Connects to a holder in `mode`, sends `message`, ends; what happened and the holder's log.
    static func run(_ mode: String, message: [UInt8], seconds: Int = 60, maximumMessage: Int = 64 << 10,
                    l2cap: MdocBLEL2CAP.Policy = .auto) async throws -> (Run, String) {
        let key = COSEKey(curve: .p256, publicKey: try EllipticCurve.nistP256.generateKeyPair().publicKey)
        let engagement = try #require(DeviceEngagement.make(deviceKey: key, retrievalMethods: [
            .ble(peripheralServer: true, centralClient: false, peripheralUUID: BLEUUID(service)?.bytes, centralUUID: nil, address: nil),
        ]))
        let plan = try #require(MdocBLEPlan.plans(engagement: engagement, outOfBand: nil).first)
        let ident = try MdocBLEIdent.derive(engagement: engagement).map { String(format: "%02x", $0) }.joined()
        let keyBytes = engagement.deviceKeyBytes.taggedBytes
        return try await PrivateDBus.with(script: script, arguments: [service, ident, mode]) { address in
            var run = Run()
            do throws(MdocError) {
                let central = try await MdocBLECentral.connect(plan: plan, adapters: ["/org/bluez/hci0"], deviceKeyBytes: keyBytes,
                                                               deadline: .now + .seconds(seconds), maximumMessage: maximumMessage, busAddress: address,
                                                               l2cap: l2cap)
                run.mtu = central.mtu
                run.link = central.link
                do throws(MdocError) {
                    run.answer = try await central.exchange(message)
                } catch {
                    run.error = error
                }
                run.timings = central.bleTimings
                await central.end()
            } catch {
                run.error = error
            }
            return run
        }
    }

    static let message = (0..<700).map { UInt8($0 % 251) }
    static var expected: [UInt8] { Array("ANSWER:".utf8) + message.reversed() }

    @Test("scan by the service UUID, connect, check Ident, subscribe, State start, a message out in pieces and the answer back, State end, disconnect")
    func goodHolder() async throws {
        let (run, log) = try await Self.run("good", message: Self.message)
        #expect(run.error == nil, "\(String(describing: run.error)) — \(log)")
        #expect(run.answer == Self.expected)
        #expect(run.mtu == 185)
        #expect(log.contains("filter ['\(Self.service)'] le"), "\(log)")
        #expect(log.contains("scan started") && log.contains("scan stopped") && log.contains("connected"), "\(log)")
        // 700 bytes at 181 a piece: 4 pieces.
        #expect(log.contains("message 700 bytes in 4 pieces"), "\(log)")
        #expect(log.contains("state 01 (command)") && log.contains("state 02 (command)"), "\(log)")
        #expect(log.contains("disconnected; states ['01', '02']"), "\(log)")
        #expect((run.timings?.transfer ?? .zero) > .zero)
    }

    @Test("a holder whose L2CAP characteristic gives no PSM, or a PSM no channel reaches, is read over GATT, and the link says why",
          arguments: [("l2cap-garbage", "no LE PSM (3 bytes)"), ("l2cap-unreachable", "PSM 128")])
    func l2capFallsBackToGATT(mode: String, why: String) async throws {
        let (run, log) = try await Self.run(mode, message: Self.message)
        #expect(run.answer == Self.expected, "\(String(describing: run.error)) — \(log)")
        #expect(log.contains("L2CAP read") && log.contains("state 01 (command)") && log.contains("state 02 (command)"), "\(log)")
        #expect(run.link?.channel == "gatt" && run.link?.psm == nil, "\(String(describing: run.link))")
        #expect(run.link?.l2capNotUsed?.contains(why) == true, "\(String(describing: run.link))")
        // Asked to keep to GATT, the reader does not even read the PSM.
        let plain = try await Self.run(mode, message: Self.message, l2cap: .never)
        #expect(plain.0.answer == Self.expected && !plain.1.contains("L2CAP read"), "\(plain.1)")
        #expect(plain.0.link?.l2capNotUsed?.contains("keep to GATT") == true, "\(String(describing: plain.0.link))")
    }

    @Test("a holder BlueZ knows already is connected without a scan")
    func knownHolder() async throws {
        let (run, log) = try await Self.run("known", message: [0x42])
        #expect(run.answer == Array("ANSWER:".utf8) + [0x42], "\(String(describing: run.error)) — \(log)")
        #expect(!log.contains("scan started"), "\(log)")
    }

    @Test("hostile holders end in typed errors within the deadline", arguments: [
        ("wrong-ident", "MDOC_BLE", "Ident"),
        ("endless", "MDOC_LIMIT_EXCEEDED", "bytes"),
        ("never-ends", "MDOC_TIMEOUT", "deadline"),
        ("disconnect", "MDOC_BLE", "ended the BLE link"),
        ("bad-lead", "MDOC_BLE", "0x7"),
        ("oversized", "MDOC_BLE", "an ATT value holds at most"),
        ("no-state", "MDOC_BLE", "lacks the State"),
        ("hidden", "MDOC_TIMEOUT", "was not seen over BLE"),
    ])
    func hostileHolder(mode: String, code: String, words: String) async throws {
        // The deadline is the point only where the holder never finishes or is never seen; the
        // others get a generous one (a loaded machine starts Python and D-Bus slowly).
        let seconds = ["never-ends", "hidden"].contains(mode) ? 5 : 60
        let (run, log) = try await Self.run(mode, message: Self.message, seconds: seconds, maximumMessage: 4096)
        let error = try #require(run.error, "\(mode): no error — \(log)")
        #expect(error.code.rawValue == code, "\(mode): \(error)")
        #expect(error.reason.contains(words), "\(mode): \(error)")
    }
}
