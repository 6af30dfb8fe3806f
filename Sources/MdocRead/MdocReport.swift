import CBORCoding
import Foundation
import GBGBridge
import Mdoc
import MdocNFC

/// What `gbgbridge mdoc read --json`, `mdoc verify --json` and the bridge's `mdoc.read` say about
/// one document (Docs/mdoc-read.schema.json).
public struct MdocReport: Sendable {
    public var docType: String
    public var issuer: MdocVerification.IssuerVerdict
    public var issuerReason: String?
    public var device: MdocVerification.DeviceVerdict
    public var deviceReason: String?
    public var deviceAuthentication: String
    /// namespace → element → value, only elements whose digest held and that were asked for.
    public var elements: [String: [String: JSONValue]]
    public var withheld: [MdocVerification.Withheld]
    public var notReturned: [MdocVerification.Withheld]
    public var portrait: Portrait?
    public var documentSigner: String?
    public var issuingAuthority: String?
    public var signed: String?
    public var validFrom: String?
    public var validUntil: String?
    public var transport: Transport?
    public var verifiedAt: String

    public struct Portrait: Sendable {
        public var jpeg: [UInt8]
        public var width: Int
        public var height: Int
        /// Why there is none though one was returned (decoding refused it).
        public var problem: String?
    }

    public struct Transport: Sendable {
        /// "nfc", or "ble" after an NFC engagement.
        public var carrier: String = "nfc"
        /// Seconds: engagement, and for BLE scan and connect; transfer.
        public var timings: [String: Double] = [:]
        public var handover: String
        public var apdus: Int
        public var commandLength: Int
        public var responseLength: Int
        /// How a BLE session ran (mode, GATT or L2CAP, MTU, PSM); nil for NFC.
        public var link: MdocCarrierLink?
    }

    /// Whether everything returned verified: issuer and device valid, no element withheld for its digest.
    public var verified: Bool {
        issuer == .valid && device == .valid && !withheld.contains { [.digestMismatch, .noDigest, .issuerInvalid, .duplicate, .reusedDigestID].contains($0.reason) }
    }

    public init(_ verification: MdocVerification, outcome: MdocReadOutcome?, portrait: Portrait?, at time: Double) {
        docType = verification.docType
        issuer = verification.issuer
        issuerReason = verification.issuerReason
        device = verification.device
        deviceReason = verification.deviceReason
        deviceAuthentication = verification.deviceAuthentication
        var elements: [String: [String: JSONValue]] = [:]
        for element in verification.elements where !(element.identifier == "portrait" && element.value.bytesValue != nil) {
            elements[element.namespace, default: [:]][element.identifier] = Self.json(element.value, depth: 0)
        }
        self.elements = elements
        withheld = verification.withheld
        notReturned = verification.notReturned
        self.portrait = portrait
        documentSigner = verification.documentSigner
        issuingAuthority = verification.issuingAuthority
        signed = verification.signed.map(MdocTime.dateTime)
        validFrom = verification.validFrom.map(MdocTime.dateTime)
        validUntil = verification.validUntil.map(MdocTime.dateTime)
        transport = outcome.map { Transport(carrier: $0.carrier, timings: $0.timings, handover: $0.handover, apdus: $0.exchanges,
                                            commandLength: $0.commandLength, responseLength: $0.responseLength, link: $0.link) }
        verifiedAt = MdocTime.dateTime(time)
    }

    /// An element value as JSON: full-date and tdate as their text, byte strings as base64 under
    /// "base64", integers as numbers, maps with text keys as objects (others as [key, value] pairs).
    static func json(_ value: CBOR, depth: Int) -> JSONValue {
        guard depth < 16 else { return .null }
        switch value {
        case .unsigned, .negative: return value.intValue.map { .number(Double($0)) } ?? .string(value.shortDescription)
        case .text(let text): return .string(text)
        case .bytes(let bytes): return .object(["base64": .string(Data(bytes).base64EncodedString())])
        case .bool(let flag): return .bool(flag)
        case .null, .undefined: return .null
        case .float(let number): return number.isFinite ? .number(number) : .null
        case .tagged(1004, .text(let text)), .tagged(0, .text(let text)): return .string(text)
        case .tagged(_, let content): return json(content, depth: depth + 1)
        case .array(let items): return .array(items.map { json($0, depth: depth + 1) })
        case .map(let map):
            if map.entries.allSatisfy({ $0.key.textValue != nil }) {
                var object: [String: JSONValue] = [:]
                for entry in map.entries { if let key = entry.key.textValue { object[key] = json(entry.value, depth: depth + 1) } }
                return .object(object)
            }
            return .array(map.entries.map { .array([json($0.key, depth: depth + 1), json($0.value, depth: depth + 1)]) })
        case .embedded: return .string("(embedded CBOR)")
        case .simple(let number): return .number(Double(number))
        }
    }

    /// The report as JSON.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = [
            "docType": .string(docType), "issuer": .string(issuer.rawValue), "device": .string(device.rawValue),
            "deviceAuthentication": .string(deviceAuthentication), "verified": .bool(verified),
            "elements": .object(elements.mapValues { .object($0) }),
            "withheld": .array(withheld.map { .object(["namespace": .string($0.namespace), "element": .string($0.identifier), "reason": .string($0.reason.rawValue)]) }),
            "notReturned": .array(notReturned.map { .object(["namespace": .string($0.namespace), "element": .string($0.identifier)]) }),
            "verifiedAt": .string(verifiedAt),
        ]
        if let issuerReason { object["issuerReason"] = .string(issuerReason) }
        if let deviceReason { object["deviceReason"] = .string(deviceReason) }
        if let documentSigner { object["documentSigner"] = .string(documentSigner) }
        if let issuingAuthority { object["issuingAuthority"] = .string(issuingAuthority) }
        var validity: [String: JSONValue] = [:]
        if let signed { validity["signed"] = .string(signed) }
        if let validFrom { validity["validFrom"] = .string(validFrom) }
        if let validUntil { validity["validUntil"] = .string(validUntil) }
        if !validity.isEmpty { object["validity"] = .object(validity) }
        if let portrait {
            var entry: [String: JSONValue] = ["mimeType": .string("image/jpeg")]
            if portrait.problem == nil {
                entry["width"] = .number(Double(portrait.width))
                entry["height"] = .number(Double(portrait.height))
                entry["data"] = .string(Data(portrait.jpeg).base64EncodedString())
            }
            if let problem = portrait.problem { entry["problem"] = .string(problem) }
            object["portrait"] = .object(entry)
        }
        if let transport {
            var fields: [String: JSONValue] = ["carrier": .string(transport.carrier), "handover": .string(transport.handover), "apdus": .number(Double(transport.apdus)),
                                               "commandLength": .number(Double(transport.commandLength)), "responseLength": .number(Double(transport.responseLength))]
            if !transport.timings.isEmpty { fields["timings"] = .object(transport.timings.mapValues { .number($0) }) }
            if let link = transport.link {
                var ble: [String: JSONValue] = ["mode": .string(link.mode), "channel": .string(link.channel), "mtu": .number(Double(link.mtu))]
                if let psm = link.psm { ble["psm"] = .number(Double(psm)) }
                if let why = link.l2capNotUsed { ble["l2capNotUsed"] = .string(why) }
                fields["ble"] = .object(ble)
            }
            object["transport"] = .object(fields)
        }
        return .object(object)
    }
}
