import MRTDCrypto
import SmartCardCore

/// Chip Authentication (ICAO 9303-11 §6.2, BSI TR-03110): the chip proves it holds the private
/// key of the DG14 public key by agreeing new secure-messaging keys with it. ECDH and DH; with
/// 3DES through MSE:Set KAT (version 1, also what a DG14 without ChipAuthenticationInfo implies),
/// with AES through MSE:Set AT + GENERAL AUTHENTICATE (version 2).
public enum ChipAuthentication {
    package static let protocolPrefix = "0.4.0.127.0.7.2.2.3."
    package static let ecdhPublicKeyOID = "0.4.0.127.0.7.2.2.1.2"
    package static let dhPublicKeyOID = "0.4.0.127.0.7.2.2.1.1"
    /// dhpublicnumber (X9.42): the algorithm of a DH SubjectPublicKeyInfo.
    package static let dhPublicNumberOID = "1.2.840.10046.2.1"

    /// A CA protocol OID: key agreement and cipher.
    public struct ProtocolID: Sendable, Hashable, CustomStringConvertible {
        package let oid: String
        package let keyAgreement: PACE.KeyAgreement
        package let keyType: KeyDerivation.KeyType

        package init?(oid: String) {
            guard oid.hasPrefix(ChipAuthentication.protocolPrefix) else { return nil }
            let parts = oid.dropFirst(ChipAuthentication.protocolPrefix.count).split(separator: ".").compactMap { Int($0) }
            guard parts.count == 2, [1, 2].contains(parts[0]) else { return nil }
            keyAgreement = parts[0] == 1 ? .dh : .ecdh
            guard let keyType = KeyDerivation.KeyType(oidArc: parts[1]) else { return nil }
            self.keyType = keyType
            self.oid = oid
        }

        package init(keyAgreement: PACE.KeyAgreement, keyType: KeyDerivation.KeyType) {
            self.keyAgreement = keyAgreement
            self.keyType = keyType
            self.oid = "\(ChipAuthentication.protocolPrefix)\(keyAgreement == .dh ? 1 : 2).\(keyType.oidArc)"
        }

        /// 3DES runs through MSE:Set KAT, AES through MSE:Set AT + GENERAL AUTHENTICATE.
        package var usesKeyAgreementTemplate: Bool { keyType == .tripleDES }

        public var description: String {
            "CA-\(keyAgreement.rawValue)-\(keyType == .tripleDES ? "3DES" : "AES-\(keyType.keyLength * 8)")"
        }
    }

    /// The chip's static key agreement key.
    public enum ChipKey: Sendable, Hashable, CustomStringConvertible {
        case ec(EllipticCurve, point: [UInt8])
        case dh(DiffieHellmanGroup, publicValue: [UInt8])

        /// The key's domain (curve or group), for Comp() of keys in it.
        package var domain: PACEDomain {
            switch self {
            case .ec(let curve, _): return .ec(curve)
            case .dh(let group, _): return .dh(group)
            }
        }

        package var keyAgreement: PACE.KeyAgreement {
            if case .ec = self { return .ecdh }
            return .dh
        }

        public var description: String {
            switch self {
            case .ec(let curve, _): return "\(curve)"
            case .dh(let group, _): return "\(group)"
            }
        }
    }

    /// What DG14 offers: the protocol and the chip's public key (with its key id, when several).
    /// `impliedByKeyOnly` is true for a DG14 with a ChipAuthenticationPublicKeyInfo but no
    /// ChipAuthenticationInfo: CA version 1 with 3DES is then implied (ICAO 9303-11 §9.2.5).
    package struct Offer: Sendable {
        package let protocolID: ProtocolID
        package let publicKey: ChipKey
        package let keyId: Int?
        package let impliedByKeyOnly: Bool
    }

    static func integer(_ object: TLV?) -> Int? {
        guard let object, object.tag == 0x02, object.value.count <= 4 else { return nil }
        return object.value.reduce(0) { $0 << 8 | Int($1) }
    }

    /// The Chip Authentication DG14 offers that this reader performs (ECDH preferred over DH,
    /// AES over 3DES), when there is one.
    package static func offer(in dg14: SecurityInfos) -> Offer? {
        examine(dg14).offer
    }

    /// The Chip Authentication `offer(in:)` gives, and why chip keys were refused (`scanChipKeys`).
    package static func examine(_ dg14: SecurityInfos) -> (offer: Offer?, refusals: [String]) {
        let (keys, refusals) = scanChipKeys(in: dg14)
        return (offer(in: dg14, keys: keys), refusals)
    }

    private static func offer(in dg14: SecurityInfos, keys: [(key: ChipKey, keyId: Int?)]) -> Offer? {
        let protocols = dg14.entries.compactMap { entry -> (ProtocolID, Int?)? in
            guard let id = ProtocolID(oid: entry.oid), let fields = try? BERTLV.parseSingle(entry.der).children() else { return nil }
            return (id, integer(fields.count > 2 ? fields[2] : nil))
        }
        func key(for id: ProtocolID, keyId: Int?) -> (key: ChipKey, keyId: Int?)? {
            keys.first { $0.key.keyAgreement == id.keyAgreement && (keyId == nil || $0.keyId == nil || $0.keyId == keyId) }
        }
        let ranked = protocols.sorted { a, b in
            (a.0.keyAgreement == .ecdh ? 10 : 0) + a.0.keyType.oidArc > (b.0.keyAgreement == .ecdh ? 10 : 0) + b.0.keyType.oidArc
        }
        for (id, keyId) in ranked {
            if let (chipKey, foundId) = key(for: id, keyId: keyId) {
                return Offer(protocolID: id, publicKey: chipKey, keyId: keyId ?? foundId, impliedByKeyOnly: false)
            }
        }
        // No ChipAuthenticationInfo at all: version 1 with 3DES.
        guard protocols.isEmpty, let (chipKey, keyId) = keys.first(where: { $0.key.keyAgreement == .ecdh }) ?? keys.first else { return nil }
        return Offer(protocolID: ProtocolID(keyAgreement: chipKey.keyAgreement, keyType: .tripleDES), publicKey: chipKey, keyId: keyId,
                     impliedByKeyOnly: true)
    }

    /// The chip keys (ChipAuthenticationPublicKeyInfo, ECDH or DH) among `infos` that this reader
    /// can use, with their key ids; keys it cannot parse or use are left out.
    package static func chipKeys(in infos: SecurityInfos) -> [(key: ChipKey, keyId: Int?)] {
        scanChipKeys(in: infos).keys
    }

    /// The chip keys of `infos` this reader can use, and why others were refused before any
    /// arithmetic: a key above `KeySizeLimits`, or keys beyond the first `maxChipKeys` (a chip
    /// publishes one or two; forty 16,384-bit DH keys are an attack on the reader's CPU).
    package static func scanChipKeys(in infos: SecurityInfos) -> (keys: [(key: ChipKey, keyId: Int?)], refusals: [String]) {
        let entries = infos.entries.filter { $0.oid == ecdhPublicKeyOID || $0.oid == dhPublicKeyOID }
        var refusals: [String] = []
        if entries.count > KeySizeLimits.maxChipKeys {
            refusals.append("\(entries.count) chip keys are published; only the first \(KeySizeLimits.maxChipKeys) were looked at")
        }
        var keys: [(key: ChipKey, keyId: Int?)] = []
        for entry in entries.prefix(KeySizeLimits.maxChipKeys) {
            guard let fields = try? BERTLV.parseSingle(entry.der).children(), fields.count >= 2, fields[1].tag == 0x30 else { continue }
            let spki = fields[1].encoded()
            if let refusal = sizeRefusal(subjectPublicKeyInfo: spki) {
                refusals.append(refusal)
                continue
            }
            let key: ChipKey?
            if entry.oid == ecdhPublicKeyOID {
                key = ecPublicKey(subjectPublicKeyInfo: spki).map { ChipKey.ec($0.curve, point: $0.point) }
            } else {
                key = dhPublicKey(subjectPublicKeyInfo: spki).map { ChipKey.dh($0.group, publicValue: $0.publicValue) }
            }
            if let key { keys.append((key, integer(fields.count > 2 ? fields[2] : nil))) }
        }
        return (keys, refusals)
    }

    /// Why a chip key's SubjectPublicKeyInfo is refused before it is parsed or checked, or `nil`:
    /// more DER than a key within `KeySizeLimits` takes, a DH prime or an explicit EC field above
    /// the limits (read from the DER, no arithmetic).
    package static func sizeRefusal(subjectPublicKeyInfo der: [UInt8]) -> String? {
        guard der.count <= KeySizeLimits.maxSubjectPublicKeyInfoBytes else {
            return "a chip key of \(der.count) bytes, more than the \(KeySizeLimits.maxSubjectPublicKeyInfoBytes) a key this reader accepts takes"
        }
        // AlgorithmIdentifier { OID, parameters }: X9.42 { p, g, q } or explicit ECParameters
        // { version, FieldID { prime-field, p }, … }; the first INTEGER found is p either way.
        guard let spki = try? BERTLV.parseSingle(der).children(), let algorithm = try? spki.first?.children(), algorithm.count == 2,
              algorithm[1].tag == 0x30, let parameters = try? algorithm[1].children() else { return nil }
        let prime: TLV?
        if parameters.first?.tag == 0x02, parameters.count >= 3, DER.oidString(algorithm[0].value) == dhPublicNumberOID {
            prime = parameters[0]
        } else if parameters.count >= 2, parameters[1].tag == 0x30, let field = try? parameters[1].children(), field.count == 2,
                  field[1].tag == 0x02 {
            prime = field[1]
        } else {
            prime = nil
        }
        guard let prime else { return nil }
        let bits = KeySizeLimits.bitLength(prime.value)
        if DER.oidString(algorithm[0].value) == dhPublicNumberOID {
            return KeySizeLimits.dhRefusal(bits: bits).map { "a chip key over \($0)" }
        }
        return bits > KeySizeLimits.maxECFieldBits
            ? "a chip key over a \(bits)-bit EC field, above the \(KeySizeLimits.maxECFieldBits) bits this reader accepts" : nil
    }

    /// The SecurityInfos EF.CardSecurity carries (CMS SignedData over id-SecurityObject); `nil`
    /// when the bytes are not that. Its signature is passive authentication's business.
    package static func cardSecurityInfos(_ bytes: [UInt8]) -> SecurityInfos? {
        guard let signed = try? CMSSignedData(bytes: bytes), signed.contentType == cardSecurityContentType,
              let content = signed.content else { return nil }
        return try? SecurityInfos(bytes: content)
    }

    /// The group and public value of a DH SubjectPublicKeyInfo: algorithm dhpublicnumber with
    /// DomainParameters { p, g, q, … } and the public value y as a DER INTEGER in the BIT STRING.
    /// Also accepts standardizedDomainParameters with an RFC 5114 parameter id (0–2).
    package static func dhPublicKey(subjectPublicKeyInfo der: [UInt8]) -> (group: DiffieHellmanGroup, publicValue: [UInt8])? {
        guard let spki = try? BERTLV.parseSingle(der).children(), spki.count == 2, spki[0].tag == 0x30, spki[1].tag == 0x03,
              let group = DiffieHellmanGroup.x942(algorithmIdentifier: spki[0]) ?? standardizedGroup(spki[0]),
              spki[1].value.first == 0x00, let y = try? BERTLV.parseSingle(Array(spki[1].value.dropFirst())), y.tag == 0x02 else { return nil }
        let value = Array(y.value.drop { $0 == 0 })
        guard value.count <= group.size else { return nil }
        let padded = [UInt8](repeating: 0, count: group.size - value.count) + value
        return group.isValidPublicKey(padded) ? (group, padded) : nil
    }

    /// An RFC 5114 group named by standardizedDomainParameters in an AlgorithmIdentifier.
    static func standardizedGroup(_ algorithm: TLV) -> DiffieHellmanGroup? {
        guard let fields = try? algorithm.children(), fields.count == 2, fields[0].tag == 0x06,
              DER.oidString(fields[0].value) == standardizedDomainParametersOID, let id = integer(fields[1]) else { return nil }
        return DiffieHellmanGroup.rfc5114(parameterId: id)
    }

    /// The SubjectPublicKeyInfo of a DH public value (for the emulator's DG14).
    package static func dhSubjectPublicKeyInfo(group: DiffieHellmanGroup, publicValue: [UInt8]) -> [UInt8] {
        DER.sequence(group.x942AlgorithmIdentifier, BERTLV.encode(tag: 0x03, value: [0x00] + DER.unsignedInteger(publicValue)))
    }

    /// standardizedDomainParameters (BSI TR-03110-3 A.2.1.1): in an AlgorithmIdentifier, an
    /// INTEGER parameter names one of the standardised groups (0–2 MODP, 8–18 curves).
    package static let standardizedDomainParametersOID = "0.4.0.127.0.7.1.2"

    /// How a chip key's SubjectPublicKeyInfo names its domain parameters.
    package enum KeyEncoding: String, Sendable, CaseIterable {
        /// id-ecPublicKey with explicit ECParameters, or X9.42 dhpublicnumber with { p, g, q }:
        /// what passports' DG14 carry (e.g. the German 2008 test passport).
        case explicit
        /// id-ecPublicKey with a named-curve OID (X9.42 explicit for DH, which has no names).
        case namedCurve
        /// standardizedDomainParameters with the TR-03110 parameter id: what ID cards' EF.CardSecurity
        /// carries (e.g. the German eID: id-PK-ECDH, { 0.4.0.127.0.7.1.2, 13 }).
        case standardized
    }

    /// The standardised parameter id of `key`'s group (TR-03110-3 Table A.2), if it has one.
    package static func standardizedParameterId(of key: ChipKey) -> Int? {
        switch key {
        case .ec(let curve, _): return (8...18).first { PACE.curve(parameterId: $0) == curve }
        case .dh(let group, _):
            return (0...2).first { id in DiffieHellmanGroup.rfc5114(parameterId: id).map { $0.p == group.p && $0.g == group.g } ?? false }
        }
    }

    /// The SubjectPublicKeyInfo of a chip key, its domain parameters named as `encoding` says;
    /// `nil` when `standardized` is asked for a group without a standardised id.
    package static func subjectPublicKeyInfo(_ key: ChipKey, encoding: KeyEncoding) -> [UInt8]? {
        let bitString: [UInt8]
        switch key {
        case .ec(_, let point): bitString = BERTLV.encode(tag: 0x03, value: [0x00] + point)
        case .dh(_, let value): bitString = BERTLV.encode(tag: 0x03, value: [0x00] + DER.unsignedInteger(value))
        }
        if encoding == .standardized {
            guard let id = standardizedParameterId(of: key) else { return nil }
            return DER.sequence(DER.sequence(DER.oid(standardizedDomainParametersOID), DER.integer(id)), bitString)
        }
        switch key {
        case .ec(let curve, _):
            let parameters = encoding == .namedCurve ? DER.oid(curve.oid) : curve.explicitParameters
            return DER.sequence(DER.sequence(DER.oid(PACEInfo.ecPublicKeyOID), parameters), bitString)
        case .dh(let group, let value):
            return dhSubjectPublicKeyInfo(group: group, publicValue: value)
        }
    }

    /// The DG14 entries offering CA with `publicKeyInfo` (for the emulator); without the
    /// ChipAuthenticationInfo when `keyOnly` (version 1, 3DES implied).
    package static func securityInfos(protocolID: ProtocolID, publicKeyInfo: [UInt8], keyId: Int = 1, keyOnly: Bool = false) -> [[UInt8]] {
        let keyInfo = DER.sequence(DER.oid(protocolID.keyAgreement == .ecdh ? ecdhPublicKeyOID : dhPublicKeyOID), publicKeyInfo,
                                   DER.integer(keyId))
        if keyOnly { return [keyInfo] }
        return [DER.sequence(DER.oid(protocolID.oid), DER.integer(protocolID.usesKeyAgreementTemplate ? 1 : 2), DER.integer(keyId)), keyInfo]
    }
}

extension ChipAuthentication {
    /// The curve and point of an EC SubjectPublicKeyInfo whose parameters are a named-curve OID or
    /// (as TR-03110 documents write it) a standardised domain-parameter id.
    package static func ecPublicKey(subjectPublicKeyInfo der: [UInt8]) -> (curve: EllipticCurve, point: [UInt8])? {
        guard let spki = try? BERTLV.parseSingle(der).children(), spki.count == 2, spki[0].tag == 0x30, spki[1].tag == 0x03,
              let algorithm = try? spki[0].children(), algorithm.count == 2 else { return nil }
        let curve: EllipticCurve?
        switch algorithm[1].tag {
        case 0x06: curve = DER.oidString(algorithm[1].value).flatMap(EllipticCurve.init(oid:))
        case 0x02:
            // standardizedDomainParameters (TR-03110-3 A.2.1.1) with the curve's parameter id.
            guard algorithm[0].tag == 0x06, DER.oidString(algorithm[0].value) == standardizedDomainParametersOID
                    || DER.oidString(algorithm[0].value) == ecdhPublicKeyOID else { return nil }
            curve = integer(algorithm[1]).flatMap { PACE.curve(parameterId: $0) }
        case 0x30: return EllipticCurve.publicKey(subjectPublicKeyInfo: der)  // explicit domain parameters
        default: curve = nil
        }
        guard let curve, spki[1].value.first == 0x00 else { return nil }
        let point = Array(spki[1].value.dropFirst())
        return curve.isValidPoint(point) ? (curve, point) : nil
    }

    /// id-SecurityObject: the content type of EF.CardSecurity.
    package static let cardSecurityContentType = "0.4.0.127.0.7.3.2.1"
}

extension DiffieHellmanGroup {
    /// The X9.42 AlgorithmIdentifier { dhpublicnumber, DomainParameters { p, g, q } } naming this
    /// group, as DG14 chip keys and PACEDomainParameterInfo carry a MODP group.
    package var x942AlgorithmIdentifier: [UInt8] {
        DER.sequence(DER.oid(ChipAuthentication.dhPublicNumberOID),
                     DER.sequence(DER.unsignedInteger(p), DER.unsignedInteger(g), DER.unsignedInteger(q)))
    }

    /// The group an X9.42 AlgorithmIdentifier names (DomainParameters beyond p, g, q are ignored);
    /// `nil` when it is not one or its numbers make no group.
    package static func x942(algorithmIdentifier object: TLV) -> DiffieHellmanGroup? {
        guard let fields = try? object.children(), fields.count == 2, fields[0].tag == 0x06,
              DER.oidString(fields[0].value) == ChipAuthentication.dhPublicNumberOID, fields[1].tag == 0x30,
              let numbers = try? fields[1].children(), numbers.count >= 3, numbers[0...2].allSatisfy({ $0.tag == 0x02 }) else { return nil }
        return explicit(p: numbers[0].value, g: numbers[1].value, q: numbers[2].value)
    }
}
