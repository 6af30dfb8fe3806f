import SmartCard

/// What EF.CardAccess (or DG14) says about PACE: one `PACEInfo` per supported protocol.
public struct PACEInfo: Sendable, Hashable, CustomStringConvertible {
    public var protocolID: PACE.ProtocolID
    public var version: Int
    /// The standardised domain parameters, when given (required when several are offered).
    public var parameterId: Int?

    public init(protocolID: PACE.ProtocolID, version: Int = 2, parameterId: Int?) {
        self.protocolID = protocolID
        self.version = version
        self.parameterId = parameterId
    }

    public var description: String { "\(protocolID) (parameters \(parameterId.map(String.init) ?? "unspecified"))" }

    /// The PACEInfos among `infos` (EF.CardAccess content), in file order.
    public static func all(in infos: SecurityInfos) -> [PACEInfo] {
        infos.entries.compactMap { entry in
            guard let protocolID = PACE.ProtocolID(oid: entry.oid),
                  let sequence = try? BERTLV.parseSingle(entry.der).children(), sequence.count >= 2,
                  sequence[1].tag == 0x02 else { return nil }
            let version = sequence[1].value.reduce(0) { $0 << 8 | Int($1) }
            let parameter = sequence.count >= 3 && sequence[2].tag == 0x02 ? sequence[2].value.reduce(0) { $0 << 8 | Int($1) } : nil
            return PACEInfo(protocolID: protocolID, version: version, parameterId: parameter)
        }
    }

    /// The DER encoding of this PACEInfo.
    public var der: [UInt8] {
        var parts = [DER.oid(protocolID.oid), DER.integer(version)]
        if let parameterId { parts.append(DER.integer(parameterId)) }
        return DER.sequence(parts)
    }

    /// How much we prefer this protocol: ECDH over DH, stronger ciphers first, CAM > IM > GM.
    var preference: Int {
        var score = protocolID.keyAgreement == .ecdh ? 100 : 0
        switch protocolID.keyType {
        case .aes256: score += 40
        case .aes192: score += 30
        case .aes128: score += 20
        case .tripleDES: score += 10
        }
        switch protocolID.mapping {
        case .chipAuthenticationMapping: score += 3
        case .integratedMapping: score += 2
        case .genericMapping: score += 1
        }
        return score
    }
}
