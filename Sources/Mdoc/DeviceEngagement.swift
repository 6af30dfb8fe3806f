import CBORCoding
import COSE

/// DeviceEngagement (ISO 18013-5 §8.2.1.1): the mdoc's ephemeral key and how it can be reached.
public struct DeviceEngagement: Sendable, Hashable {
    /// How the holder offers to transfer data (DeviceRetrievalMethod).
    public enum RetrievalMethod: Sendable, Hashable {
        /// NFC (type 1) with the largest command and response data fields it takes.
        case nfc(maximumCommandLength: Int, maximumResponseLength: Int)
        /// BLE (type 2): mdoc peripheral server mode and/or mdoc central client mode, with their UUIDs.
        case ble(peripheralServer: Bool, centralClient: Bool, peripheralUUID: [UInt8]?, centralUUID: [UInt8]?, address: [UInt8]?)
        /// Wi-Fi Aware (type 3), or any other type number.
        case other(type: Int, version: Int)

        public var name: String {
            switch self {
            case .nfc: return "nfc"
            case .ble: return "ble"
            case .other(let type, _): return type == 3 ? "wifi-aware" : "type-\(type)"
            }
        }
    }

    public let version: String
    /// The mdoc's ephemeral key (EDeviceKey).
    public let deviceKey: COSEKey
    /// EDeviceKeyBytes exactly as received.
    public let deviceKeyBytes: EmbeddedCBOR
    public let retrievalMethods: [RetrievalMethod]
    /// The DeviceEngagement's encoding exactly as received.
    public let bytes: [UInt8]

    public static let limits = CBORLimits(maximumBytes: 8 << 10, maximumDepth: 8, maximumItems: 512, maximumStringBytes: 4 << 10)

    public init(bytes: [UInt8]) throws(MdocError) {
        let item = try CBOR.decode(bytes, as: "the DeviceEngagement", limits: Self.limits)
        let map = try item.requireMap("the DeviceEngagement")
        version = try map.required(0, in: "the DeviceEngagement").requireText("the DeviceEngagement's version")
        guard version.hasPrefix("1.") else { throw MdocError(.unsupported, "DeviceEngagement version \(version); this reader speaks 1.x") }
        let security = try map.required(1, in: "the DeviceEngagement").requireArray("Security")
        guard security.count >= 2, let suite = security[0].intValue else { throw .malformed("Security is not [cipher suite, EDeviceKeyBytes]") }
        guard suite == 1 else { throw MdocError(.unsupported, "cipher suite \(suite); ISO 18013-5 defines 1") }
        let (keyBytes, keyItem) = try security[1].embedded(as: "EDeviceKeyBytes", limits: Self.limits)
        do { deviceKey = try COSEKey(cbor: keyItem) } catch { throw MdocError(error, in: "EDeviceKey") }
        guard deviceKey.curve.ellipticCurve != nil || [.x25519, .x448].contains(deviceKey.curve) else {
            throw MdocError(.unsupported, "EDeviceKey on \(deviceKey.curve), which is not a key agreement curve")
        }
        deviceKeyBytes = keyBytes
        var methods: [RetrievalMethod] = []
        for method in try map[2]?.requireArray("DeviceRetrievalMethods") ?? [] {
            methods.append(try Self.method(method))
        }
        retrievalMethods = methods
        self.bytes = bytes
    }

    static func method(_ item: CBOR) throws(MdocError) -> RetrievalMethod {
        let array = try item.requireArray("a DeviceRetrievalMethod")
        guard array.count >= 3, let type = array[0].intValue, let version = array[1].intValue else {
            throw .malformed("a DeviceRetrievalMethod is not [type, version, options]")
        }
        let options = try array[2].requireMap("a DeviceRetrievalMethod's options")
        switch type {
        case 1:
            guard let command = options[0]?.intValue, let response = options[1]?.intValue else {
                throw .malformed("the NFC retrieval options lack the maximum command or response length")
            }
            return .nfc(maximumCommandLength: command, maximumResponseLength: response)
        case 2:
            return .ble(peripheralServer: options[0]?.boolValue ?? false, centralClient: options[1]?.boolValue ?? false,
                        peripheralUUID: options[10]?.bytesValue, centralUUID: options[11]?.bytesValue, address: options[20]?.bytesValue)
        default:
            return .other(type: type, version: version)
        }
    }

    /// Builds a DeviceEngagement (the holder's side: the emulator and tests).
    public static func make(deviceKey: COSEKey, retrievalMethods: [RetrievalMethod]) -> DeviceEngagement? {
        let keyBytes = EmbeddedCBOR(encoding: deviceKey.cbor())
        var map = CBORMap()
        map[0] = .text("1.0")
        map[1] = .array([CBOR(1), .embedded(keyBytes)])
        if !retrievalMethods.isEmpty {
            map[2] = .array(retrievalMethods.map { method in
                switch method {
                case .nfc(let command, let response):
                    return .array([CBOR(1), CBOR(1), .map([CBOR(0): CBOR(command), CBOR(1): CBOR(response)])])
                case .ble(let server, let client, let peripheralUUID, let centralUUID, let address):
                    var options: CBORMap = [CBOR(0): .bool(server), CBOR(1): .bool(client)]
                    if let peripheralUUID { options[10] = .bytes(peripheralUUID) }
                    if let centralUUID { options[11] = .bytes(centralUUID) }
                    if let address { options[20] = .bytes(address) }
                    return .array([CBOR(2), CBOR(1), .map(options)])
                case .other(let type, let version):
                    return .array([CBOR(type), CBOR(version), .map([:])])
                }
            })
        }
        return try? DeviceEngagement(bytes: CBOR.map(map).encoded())
    }
}
