import Mdoc

/// NFC Forum Connection Handover (1.5) as ISO 18013-5 §8.2.2 uses it: the Handover Select message
/// with its alternative carriers and the DeviceEngagement record, and the reader's Handover Request.
public struct HandoverSelect: Sendable {
    /// A carrier the holder offers for data retrieval.
    public enum Carrier: Sendable, Hashable {
        case nfc(maximumCommandLength: Int, maximumResponseLength: Int)
        case ble(BLEOutOfBand)
        case other(String)

        public var name: String {
            switch self {
            case .nfc: return "nfc"
            case .ble: return "ble"
            case .other(let type): return type
            }
        }
    }

    /// The Handover Select message exactly as read: the SessionTranscript's Handover carries these bytes.
    public let bytes: [UInt8]
    public let carriers: [Carrier]
    /// The DeviceEngagement record's payload.
    public let deviceEngagement: DeviceEngagement

    static let nfcCarrierType = "iso.org:18013:nfc"
    static let bleCarrierType = "application/vnd.bluetooth.le.oob"
    static let engagementType = "iso.org:18013:deviceengagement"

    public init(bytes: [UInt8], limits: NDEFLimits = NDEFLimits()) throws(MdocError) {
        let message = try NDEFMessage(bytes: bytes, limits: limits)
        guard let first = message.records.first, first.isType(.wellKnown, "Hs") else {
            throw MdocError(.engagement, "the NDEF message is not a Handover Select (its first record is \(message.records.first.map { "\($0.format) \($0.typeName.debugDescription)" } ?? "none"))")
        }
        guard let version = first.payload.first, version >> 4 == 1 else { throw MdocError(.unsupported, "Connection Handover version \(first.payload.first.map { "\($0 >> 4).\($0 & 0x0F)" } ?? "missing")") }
        let embedded = first.payload.count > 1 ? try NDEFMessage(bytes: Array(first.payload.dropFirst()), limits: limits).records : []
        var carriers: [Carrier] = []
        for record in embedded where record.isType(.wellKnown, "ac") {
            let reference = try Self.carrierReference(record.payload)
            guard let carrier = message.records.dropFirst().first(where: { $0.identifier == reference }) else { continue }
            carriers.append(try Self.carrier(carrier))
        }
        guard let engagementRecord = message.first(.external, Self.engagementType) else {
            throw MdocError(.engagement, "the Handover Select has no \(Self.engagementType) record")
        }
        deviceEngagement = try DeviceEngagement(bytes: engagementRecord.payload)
        self.carriers = carriers
        self.bytes = bytes
    }

    /// The carrier data reference of an Alternative Carrier record.
    static func carrierReference(_ payload: [UInt8]) throws(MdocError) -> [UInt8] {
        guard payload.count >= 2, Int(payload[1]) + 2 <= payload.count else { throw MdocError(.engagement, "an Alternative Carrier record too short for its reference") }
        return Array(payload[2..<(2 + Int(payload[1]))])
    }

    static func carrier(_ record: NDEFRecord) throws(MdocError) -> Carrier {
        if record.isType(.external, nfcCarrierType) {
            let (command, response) = try nfcLengths(record.payload)
            return .nfc(maximumCommandLength: command, maximumResponseLength: response)
        }
        if record.isType(.media, bleCarrierType) { return .ble(try BLEOutOfBand(payload: record.payload)) }
        return .other(record.typeName)
    }

    /// The NFC carrier's version 1 and its TLVs: 01 maximum command data length, 02 maximum response data length.
    static func nfcLengths(_ payload: [UInt8]) throws(MdocError) -> (Int, Int) {
        guard payload.first == 0x01 else { throw MdocError(.unsupported, "NFC carrier record version \(payload.first.map(String.init) ?? "missing")") }
        var command = 255, response = 256
        var index = 1
        while index < payload.count {
            let length = Int(payload[index])
            guard length >= 2, index + 1 + length <= payload.count else { throw MdocError(.engagement, "a malformed field in the NFC carrier record") }
            let value = payload[(index + 2)..<(index + 1 + length)].reduce(0) { $0 << 8 | Int($1) }
            switch payload[index + 1] {
            case 0x01: command = value
            case 0x02: response = value
            default: break
            }
            index += 1 + length
        }
        // ISO 18013-5 §8.3.3.1.2 note 2: 255…65 535 and 256…65 536.
        guard (255...65_535).contains(command), (256...65_536).contains(response) else {
            throw MdocError(.engagement, "NFC carrier limits \(command)/\(response) outside ISO 18013-5's ranges")
        }
        return (command, response)
    }
}

/// The BLE out-of-band data of a handover carrier record (AD structures): LE role, the mdoc
/// service UUID, the device address.
public struct BLEOutOfBand: Sendable, Hashable {
    public let role: UInt8?
    public let serviceUUID: [UInt8]?
    public let address: [UInt8]?

    public init(role: UInt8?, serviceUUID: [UInt8]?, address: [UInt8]?) {
        self.role = role
        self.serviceUUID = serviceUUID
        self.address = address
    }

    init(payload: [UInt8]) throws(MdocError) {
        var role: UInt8?, uuid: [UInt8]?, address: [UInt8]?
        var index = 0
        while index < payload.count {
            let length = Int(payload[index])
            if length == 0 { break }
            guard index + 1 + length <= payload.count else { throw MdocError(.engagement, "a malformed AD structure in the BLE carrier record") }
            let value = Array(payload[(index + 2)..<(index + 1 + length)])
            switch payload[index + 1] {
            case 0x1C: role = value.first
            case 0x06, 0x07: uuid = value.count >= 16 ? Array(value.prefix(16).reversed()) : nil
            case 0x1B: address = value
            default: break
            }
            index += 1 + length
        }
        self.init(role: role, serviceUUID: uuid, address: address)
    }
}

/// The reader's Handover Request for negotiated handover (ISO 18013-5 §8.2.2.1): the carriers it
/// can use — NFC data retrieval, and another carrier (BLE) when the kiosk can use it now.
public enum HandoverRequest {
    /// `alternative`: the other carrier's record (NDEF media type and payload), offered after NFC.
    public static func message(random: [UInt8], alternative: (type: String, payload: [UInt8])? = nil) -> [UInt8] {
        let collision = NDEFRecord(format: .wellKnown, type: "cr", payload: Array(random.prefix(2)))
        // ac: carrier power state active, the carrier record's id, no auxiliary data.
        var embeddedRecords = [collision, NDEFRecord(format: .wellKnown, type: "ac", payload: [0x01, 0x03] + Array("nfc".utf8) + [0x00])]
        var carriers = [NDEFRecord(format: .external, type: HandoverSelect.nfcCarrierType, identifier: "nfc", payload: [0x01])]
        if let alternative {
            embeddedRecords.append(NDEFRecord(format: .wellKnown, type: "ac", payload: [0x01, 0x01] + Array("0".utf8) + [0x00]))
            carriers.append(NDEFRecord(format: .media, type: alternative.type, identifier: "0", payload: alternative.payload))
        }
        let embedded = NDEFMessage(records: embeddedRecords).encoded
        let request = NDEFRecord(format: .wellKnown, type: "Hr", payload: [0x15] + embedded)
        return NDEFMessage(records: [request] + carriers).encoded
    }
}
