import MRTDCrypto
import SmartCardCore

/// What EF.CardAccess (or DG14) says about PACE: one `PACEInfo` per supported protocol.
public struct PACEInfo: Sendable, Hashable, CustomStringConvertible {
    package var protocolID: PACE.ProtocolID
    package var version: Int
    /// The domain parameters' id: 0–31 standardised, above that proprietary (then a
    /// PACEDomainParameterInfo with the same id gives them).
    package var parameterId: Int?
    /// Domain parameters given explicitly by a PACEDomainParameterInfo (proprietary ids).
    package var domainParameters: PACEDomain?

    package init(protocolID: PACE.ProtocolID, version: Int = 2, parameterId: Int?, domainParameters: PACEDomain? = nil) {
        self.protocolID = protocolID
        self.version = version
        self.parameterId = parameterId
        self.domainParameters = domainParameters
    }

    /// The group PACE runs in: the explicit domain parameters, or the standardised ones.
    package var domain: PACEDomain? {
        if let domainParameters { return domainParameters }
        guard let parameterId, (0...31).contains(parameterId) else { return nil }
        return PACEDomain.standardized(parameterId)
    }

    public var description: String {
        let parameters = domainParameters.map { "\($0), id \(parameterId.map(String.init) ?? "none")" } ?? parameterId.map(String.init) ?? "unspecified"
        return "\(protocolID) (parameters \(parameters))"
    }

    /// The PACEDomainParameterInfo publishing `domain` under `parameterId` (for the emulator):
    /// explicit ECParameters for a curve, X9.42 DomainParameters { p, g, q } for a MODP group.
    package static func domainParameterInfo(protocolID: PACE.ProtocolID, domain: PACEDomain, parameterId: Int) -> [UInt8] {
        let mappingArc: Int
        switch (protocolID.keyAgreement, protocolID.mapping) {
        case (.dh, .genericMapping): mappingArc = 1
        case (.ecdh, .genericMapping): mappingArc = 2
        case (.dh, .integratedMapping): mappingArc = 3
        case (.ecdh, .integratedMapping): mappingArc = 4
        case (_, .chipAuthenticationMapping): mappingArc = 6
        }
        let algorithm: [UInt8]
        switch domain {
        case .ec(let curve):
            algorithm = DER.sequence(DER.oid(ecPublicKeyOID), curve.explicitParameters)
        case .dh(let group):
            algorithm = group.x942AlgorithmIdentifier
        }
        return DER.sequence(DER.oid(PACE.ProtocolID.prefix + "\(mappingArc)"), algorithm, DER.integer(parameterId))
    }

    static let ecPublicKeyOID = "1.2.840.10045.2.1"

    /// The domain parameters of a PACEDomainParameterInfo's AlgorithmIdentifier: an EC curve
    /// (named, or explicit parameters equal to a standard curve) or a MODP group with its q.
    static func domain(algorithmIdentifier object: TLV) -> PACEDomain? {
        guard let fields = try? object.children(), fields.count == 2, fields[0].tag == 0x06,
              let oid = DER.oidString(fields[0].value) else { return nil }
        switch oid {
        case ecPublicKeyOID:
            if fields[1].tag == 0x06 { return DER.oidString(fields[1].value).flatMap(EllipticCurve.init(oid:)).map { .ec($0) } }
            // Explicit parameters: let OpenSSL recognise the curve from a key on its base point.
            guard fields[1].tag == 0x30, let parameters = try? fields[1].children(), parameters.count >= 5, parameters[3].tag == 0x04 else {
                return nil
            }
            let spki = DER.sequence(object.encoded(), BERTLV.encode(tag: 0x03, value: [0x00] + parameters[3].value))
            return EllipticCurve.publicKey(subjectPublicKeyInfo: spki).map { .ec($0.curve) }
        case ChipAuthentication.dhPublicNumberOID:
            return DiffieHellmanGroup.x942(algorithmIdentifier: object).map { .dh($0) }
        default:
            return nil
        }
    }

    /// The PACEInfos among `infos` (EF.CardAccess content), in file order, each with the
    /// explicit domain parameters a PACEDomainParameterInfo gives for its (proprietary) id.
    package static func all(in infos: SecurityInfos) -> [PACEInfo] {
        // PACEDomainParameterInfo: OID id-PACE-<KA>-<mapping> (no cipher arc), AlgorithmIdentifier, id.
        var explicit: [(keyAgreement: PACE.KeyAgreement, domain: PACEDomain?, parameterId: Int?)] = []
        for entry in infos.entries where entry.oid.hasPrefix(PACE.ProtocolID.prefix) {
            let arcs = entry.oid.dropFirst(PACE.ProtocolID.prefix.count).split(separator: ".")
            guard arcs.count == 1, let arc = Int(arcs[0]), [1, 2, 3, 4, 6].contains(arc),
                  let sequence = try? BERTLV.parseSingle(entry.der).children(), sequence.count >= 2, sequence[1].tag == 0x30 else { continue }
            let parameter = sequence.count >= 3 && sequence[2].tag == 0x02 ? sequence[2].value.reduce(0) { $0 << 8 | Int($1) } : nil
            explicit.append(([1, 3].contains(arc) ? .dh : .ecdh, domain(algorithmIdentifier: sequence[1]), parameter))
        }
        return infos.entries.compactMap { entry in
            guard let protocolID = PACE.ProtocolID(oid: entry.oid),
                  let sequence = try? BERTLV.parseSingle(entry.der).children(), sequence.count >= 2,
                  sequence[1].tag == 0x02 else { return nil }
            let version = sequence[1].value.reduce(0) { $0 << 8 | Int($1) }
            let parameter = sequence.count >= 3 && sequence[2].tag == 0x02 ? sequence[2].value.reduce(0) { $0 << 8 | Int($1) } : nil
            var info = PACEInfo(protocolID: protocolID, version: version, parameterId: parameter)
            if parameter.map({ !(0...31).contains($0) }) ?? true {
                let candidates = explicit.filter { $0.keyAgreement == protocolID.keyAgreement }
                let match = candidates.first { $0.parameterId == parameter } ?? (parameter == nil && candidates.count == 1 ? candidates.first : nil)
                info.domainParameters = match?.domain
            }
            return info
        }
    }

    /// The DER encoding of this PACEInfo.
    package var der: [UInt8] {
        var parts = [DER.oid(protocolID.oid), DER.integer(version)]
        if let parameterId { parts.append(DER.integer(parameterId)) }
        return DER.sequence(parts)
    }

    /// How much we prefer this protocol: ECDH over DH, stronger ciphers first, CAM > IM > GM.
    package var preference: Int {
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
