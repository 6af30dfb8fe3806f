import BlueZ
import Mdoc
import MdocNFC

extension MdocBLECentral: MdocSessionChannel {
    public var carrier: String { "ble" }

    public var timings: [String: Double] {
        let timings = self.bleTimings
        return ["scan": Self.seconds(timings.scan), "connect": Self.seconds(timings.connect), "transfer": Self.seconds(timings.transfer)]
    }

    public var garbledAnswerHint: String? { l2cap == nil ? Self.enhancedATTHint() : nil }

    public var link: MdocCarrierLink? {
        MdocCarrierLink(mode: MdocBLEMode.peripheralServer.rawValue, channel: l2cap == nil ? "gatt" : "l2cap", mtu: mtu,
                        psm: l2cap.map { Int($0.psm) }, l2capNotUsed: l2capNotUsed)
    }

    /// Why a BLE answer may arrive garbled on this kiosk (nil when BlueZ uses one ATT channel).
    static func enhancedATTHint() -> String? {
        let configuration = BlueZMainConfiguration.current()
        guard configuration.enhancedATT else { return nil }
        return "over BLE this is what notifications delivered out of order look like: this kiosk's BlueZ uses Enhanced ATT "
            + "(\(configuration.effectiveChannels) ATT channels\(configuration.channels == nil ? ", BlueZ's default" : " in \(configuration.path ?? "main.conf")")); "
            + BlueZMainConfiguration.fix
    }

    static func seconds(_ duration: Duration) -> Double {
        ((Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) * 1000).rounded() / 1000
    }
}

extension MdocBLEPeripheral {
    public var garbledAnswerHint: String? { MdocBLECentral.enhancedATTHint() }

    public var link: MdocCarrierLink? { MdocCarrierLink(mode: MdocBLEMode.centralClient.rawValue, channel: "gatt", mtu: mtu) }
}

extension MdocAlternativeCarrier {
    /// BLE through `adapters` (the powered adapters BlueZ lists): offered to the holder in a
    /// negotiated Handover Request (LE role: both, central preferred), used when the holder's
    /// engagement or Handover Select offers it — mdoc peripheral server mode first (the kiosk
    /// scans every adapter and connects, `MdocBLECentral`), else mdoc central client mode (the
    /// kiosk advertises on every adapter and serves GATT, `MdocBLEPeripheral`).
    /// `l2cap`: whether a holder's L2CAP channel is opened when its service offers one.
    public static func ble(adapters: [BlueZAdapter], maximumMessage: Int, busAddress: String? = nil,
                           l2cap: MdocBLEL2CAP.Policy = .auto) -> MdocAlternativeCarrier {
        MdocAlternativeCarrier(
            name: "ble",
            offered: { engagement, select in !plans(engagement, select).isEmpty },
            open: { engagement, select, deadline in
                guard let plan = plans(engagement, select).first else { throw MdocError(.unsupported, "the holder offers no BLE mode") }
                let paths = adapters.map(\.path)
                switch plan.mode {
                case .peripheralServer:
                    return try await MdocBLECentral.connect(plan: plan, adapters: paths, deviceKeyBytes: engagement.deviceKeyBytes.taggedBytes,
                                                            deadline: deadline, maximumMessage: maximumMessage, busAddress: busAddress,
                                                            l2cap: l2cap)
                case .centralClient:
                    return try await MdocBLEPeripheral.open(plan: plan, adapters: paths, deviceKeyBytes: engagement.deviceKeyBytes.taggedBytes,
                                                            deadline: deadline, maximumMessage: maximumMessage, busAddress: busAddress)
                }
            },
            // LE Role AD structure (Bluetooth CSS Part A §1.17): 0x03, both roles, central preferred.
            handoverRequestRecord: (type: "application/vnd.bluetooth.le.oob", payload: [0x02, 0x1C, 0x03])
        )
    }

    static func plans(_ engagement: DeviceEngagement, _ select: HandoverSelect?) -> [MdocBLEPlan] {
        let outOfBand = (select?.carriers ?? []).lazy.compactMap { carrier -> BLEOutOfBand? in
            if case .ble(let data) = carrier { return data }
            return nil
        }.first
        return MdocBLEPlan.plans(engagement: engagement, outOfBand: outOfBand)
    }
}
