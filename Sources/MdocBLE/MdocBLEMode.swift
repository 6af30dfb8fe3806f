/// The two BLE roles of ISO 18013-5 §8.3.3.1.1 and the GATT characteristics of each.
///
/// - `peripheralServer` (*mdoc peripheral server mode*): the phone is the GATT server and
///   advertises the service UUID of its DeviceEngagement; the kiosk scans, connects and is the
///   client. The mode the phone wallets use.
/// - `centralClient` (*mdoc central client mode*): the kiosk is the GATT server and advertises;
///   the phone connects, and checks the kiosk's Ident before it sends anything.
public enum MdocBLEMode: String, Sendable, Hashable, CaseIterable {
    case peripheralServer = "peripheral-server"
    case centralClient = "central-client"

    /// The service's characteristics in this mode (ISO 18013-5 §8.3.3.1.1.4, Tables 11 and 12).
    public var characteristics: MdocBLECharacteristics {
        switch self {
        case .peripheralServer:
            return MdocBLECharacteristics(state: Self.uuid(0x01), client2Server: Self.uuid(0x02), server2Client: Self.uuid(0x03),
                                          ident: Self.uuid(0x08), l2cap: Self.uuid(0x0A))
        case .centralClient:
            return MdocBLECharacteristics(state: Self.uuid(0x05), client2Server: Self.uuid(0x06), server2Client: Self.uuid(0x07),
                                          ident: Self.uuid(0x08), l2cap: Self.uuid(0x0B))
        }
    }

    /// `000000NN-A123-48CE-896B-4C76973373E6`.
    static func uuid(_ number: UInt8) -> BLEUUID {
        BLEUUID(fixed: [0, 0, 0, number, 0xA1, 0x23, 0x48, 0xCE, 0x89, 0x6B, 0x4C, 0x76, 0x97, 0x33, 0x73, 0xE6])
    }
}

/// The UUIDs of one mode's characteristics.
public struct MdocBLECharacteristics: Sendable, Hashable {
    /// Written by the GATT client: `0x01` the transfer starts, `0x02` it ends (`MdocBLEState`).
    public let state: BLEUUID
    /// The client's messages to the server (write without response).
    public let client2Server: BLEUUID
    /// The server's messages to the client (notifications).
    public let server2Client: BLEUUID
    /// HKDF(EDeviceKeyBytes, "BLEIdent"), 16 bytes, read by the client (`MdocBLEIdent`).
    public let ident: BLEUUID
    /// The L2CAP PSM, where the server offers a connection-oriented channel.
    public let l2cap: BLEUUID
}

/// What the GATT client writes to the State characteristic (ISO 18013-5 §8.3.3.1.1.5).
public enum MdocBLEState: UInt8, Sendable {
    /// The client subscribed and is about to write the first message.
    case start = 0x01
    /// The session ends (after SessionData with status 20, or instead of it).
    case end = 0x02
}
