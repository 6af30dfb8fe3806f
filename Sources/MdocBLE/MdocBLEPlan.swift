import BlueZ
import Mdoc
import MdocNFC

/// Where and how to reach a holder over BLE: the mode, the service UUID to scan for (or to
/// advertise, in central client mode) and the holder's address when the engagement gives one.
public struct MdocBLEPlan: Sendable, Hashable {
    public let mode: MdocBLEMode
    public let serviceUUID: BLEUUID
    /// The holder's BLE device address (6 bytes, as the engagement carries it), when given.
    public let address: [UInt8]?

    public init(mode: MdocBLEMode, serviceUUID: BLEUUID, address: [UInt8]?) {
        self.mode = mode
        self.serviceUUID = serviceUUID
        self.address = address
    }

    /// The plans a holder's engagement offers, the mode the wallets use first: from the
    /// DeviceEngagement's BLE retrieval method (QR and static handover) and from the handover's
    /// BLE carrier record (negotiated handover puts the UUID and LE role there alone). A
    /// malformed UUID (not 16 bytes) is no plan.
    public static func plans(engagement: DeviceEngagement?, outOfBand: BLEOutOfBand?) -> [MdocBLEPlan] {
        var plans: [MdocBLEPlan] = []
        func add(_ mode: MdocBLEMode, _ uuid: [UInt8]?, _ address: [UInt8]?) {
            guard let uuid, let serviceUUID = BLEUUID(bytes: uuid) else { return }
            let plan = MdocBLEPlan(mode: mode, serviceUUID: serviceUUID, address: address?.count == 6 ? address : nil)
            if !plans.contains(plan) { plans.append(plan) }
        }
        for method in engagement?.retrievalMethods ?? [] {
            guard case .ble(let server, let client, let peripheralUUID, let centralUUID, let address) = method else { continue }
            if server { add(.peripheralServer, peripheralUUID, address) }
            if client { add(.centralClient, centralUUID, nil) }
        }
        if let outOfBand {
            // LE Role AD (Bluetooth CSS Part A §1.17): 0 peripheral only, 1 central only, 2 both
            // (peripheral preferred), 3 both (central preferred). The holder's role: a
            // peripheral holder is mdoc peripheral server mode.
            let address = outOfBand.address.map { Array($0.prefix(6)) }
            switch outOfBand.role {
            case 0x00, nil: add(.peripheralServer, outOfBand.serviceUUID, address)
            case 0x01: add(.centralClient, outOfBand.serviceUUID, nil)
            case 0x02, 0x03:
                add(.peripheralServer, outOfBand.serviceUUID, address)
                add(.centralClient, outOfBand.serviceUUID, nil)
            default: break
            }
        }
        // Peripheral server mode first: what the wallets use, and the kiosk needs no advertising.
        return plans.filter { $0.mode == .peripheralServer } + plans.filter { $0.mode == .centralClient }
    }
}

/// Whether this kiosk can use BLE now, and if not why (doctor and capability.query say the same).
public enum MdocBluetoothAvailability: Sendable, Hashable {
    case available(adapter: String)
    case unavailable(String)

    public var isAvailable: Bool {
        if case .available = self { return true }
        return false
    }

    public var reason: String {
        switch self {
        case .available(let adapter): return "adapter \(adapter) is powered"
        case .unavailable(let reason): return reason
        }
    }
}

extension MdocBluetoothAvailability {
    /// What BlueZ says now: the first powered adapter, or why there is none (with the fix).
    public static func probe() async -> MdocBluetoothAvailability {
        do {
            return judge(try await BlueZ.adaptersOffPool())
        } catch {
            return .unavailable("\(error.reason) — \(error.fix)")
        }
    }

    /// The verdict on an adapter list.
    public static func judge(_ adapters: [BlueZAdapter]) -> MdocBluetoothAvailability {
        if let powered = adapters.first(where: \.powered) { return .available(adapter: powered.name) }
        guard let first = adapters.first else {
            return .unavailable("no Bluetooth adapter (BlueZ lists none) — plug in a Bluetooth LE adapter; check rfkill list")
        }
        return .unavailable("adapter \(first.name) is not powered — bluetoothctl power on (or AutoEnable=true in /etc/bluetooth/main.conf); check rfkill list")
    }
}
