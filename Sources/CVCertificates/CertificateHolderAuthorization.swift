import LDS
import SmartCardCore

/// The Certificate Holder Authorization Template (7F4C, TR-03110-3 C.1.5): the kind of terminal
/// (an object identifier), its role in the chain and what it may do — for an Inspection System,
/// read DG3 (fingerprints) and DG4 (iris) of an ePassport.
public struct CertificateHolderAuthorization: Sendable, Hashable {
    /// The role, from the two most significant bits of the relative authorization.
    public enum Role: String, Sendable, Hashable {
        case cvca, dvDomestic = "dv_domestic", dvForeign = "dv_foreign", terminal

        init(bits: UInt8) {
            switch bits >> 6 {
            case 0b11: self = .cvca
            case 0b10: self = .dvDomestic
            case 0b01: self = .dvForeign
            default: self = .terminal
            }
        }

        var bits: UInt8 {
            switch self {
            case .cvca: return 0b1100_0000
            case .dvDomestic: return 0b1000_0000
            case .dvForeign: return 0b0100_0000
            case .terminal: return 0
            }
        }
    }

    /// id-IS: Inspection Systems (ePassport, EAC v1).
    public static let inspectionSystem = "0.4.0.127.0.7.3.1.2.1"
    /// id-AT: Authentication Terminals (eID).
    public static let authenticationTerminal = "0.4.0.127.0.7.3.1.2.2"
    /// id-ST: Signature Terminals.
    public static let signatureTerminal = "0.4.0.127.0.7.3.1.2.3"

    /// The terminal type (dotted OID).
    public var terminalType: String
    /// The relative authorization (discretionary data, tag 53), role bits included.
    public var authorization: [UInt8]

    public init(terminalType: String, authorization: [UInt8]) {
        self.terminalType = terminalType
        self.authorization = authorization.isEmpty ? [0] : authorization
    }

    /// An Inspection System's CHAT.
    public static func inspectionSystem(role: Role, readDG3: Bool, readDG4: Bool) -> CertificateHolderAuthorization {
        CertificateHolderAuthorization(terminalType: inspectionSystem,
                                       authorization: [role.bits | (readDG4 ? 0x02 : 0) | (readDG3 ? 0x01 : 0)])
    }

    public var role: Role { Role(bits: authorization.first ?? 0) }

    /// For an Inspection System: may read DG3 (fingerprints).
    public var readsDG3: Bool { terminalType == Self.inspectionSystem && (authorization.last ?? 0) & 0x01 != 0 }
    /// For an Inspection System: may read DG4 (iris).
    public var readsDG4: Bool { terminalType == Self.inspectionSystem && (authorization.last ?? 0) & 0x02 != 0 }

    /// The biometric data groups these rights open, as their names: `DG3`, `DG4`, both or none.
    public var biometricDataGroups: [String] { [readsDG3 ? "DG3" : nil, readsDG4 ? "DG4" : nil].compactMap { $0 } }

    /// These rights narrowed by the issuer's (the effective authorization is the AND along the chain).
    public func intersected(with other: CertificateHolderAuthorization) -> CertificateHolderAuthorization {
        guard other.authorization.count == authorization.count else { return self }
        var bytes = zip(authorization, other.authorization).map { $0 & $1 }
        bytes[0] = (bytes[0] & 0x3F) | (authorization[0] & 0xC0)
        return CertificateHolderAuthorization(terminalType: terminalType, authorization: bytes)
    }

    init(_ tlv: TLV) throws(CVCertificateError) {
        let fields: [TLV]
        do {
            fields = try tlv.children()
        } catch {
            throw CVCertificateError(.malformed, field: "CHAT", "not a list of data objects: \(error.reason)")
        }
        guard fields.count == 2, fields[0].tag == 0x06, let oid = DER.oidString(fields[0].value), fields[1].tag == 0x53,
              !fields[1].value.isEmpty else {
            throw CVCertificateError(.malformed, field: "CHAT", "expected a terminal type (06) and an authorization (53)")
        }
        terminalType = oid
        authorization = fields[1].value
    }

    var tlv: TLV {
        TLV(tag: 0x7F4C, children: [TLV(tag: 0x06, value: DER.oidContent(terminalType)), TLV(tag: 0x53, value: authorization)])
    }
}
