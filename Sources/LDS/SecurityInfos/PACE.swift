import MRTDCrypto
import SmartCardCore

/// PACE (ICAO 9303-11 §4.4, BSI TR-03110): protocol identifiers, standardised domain
/// parameters, and the cryptographic steps shared by the reader and the emulated chip.
public enum PACE {
    public enum Mapping: String, Sendable, Hashable, Codable {
        case genericMapping = "GM"
        case integratedMapping = "IM"
        case chipAuthenticationMapping = "CAM"
    }

    package enum KeyAgreement: String, Sendable, Hashable { case dh = "DH", ecdh = "ECDH" }

    /// A PACE protocol OID, decoded.
    public struct ProtocolID: Sendable, Hashable, CustomStringConvertible {
        package let oid: String
        package let keyAgreement: KeyAgreement
        package let mapping: Mapping
        package let keyType: KeyDerivation.KeyType

        static let prefix = "0.4.0.127.0.7.2.2.4."

        package init?(oid: String) {
            guard oid.hasPrefix(Self.prefix) else { return nil }
            let parts = oid.dropFirst(Self.prefix.count).split(separator: ".").compactMap { Int($0) }
            guard parts.count == 2 else { return nil }
            switch parts[0] {
            case 1: (keyAgreement, mapping) = (.dh, .genericMapping)
            case 2: (keyAgreement, mapping) = (.ecdh, .genericMapping)
            case 3: (keyAgreement, mapping) = (.dh, .integratedMapping)
            case 4: (keyAgreement, mapping) = (.ecdh, .integratedMapping)
            case 6: (keyAgreement, mapping) = (.ecdh, .chipAuthenticationMapping)
            default: return nil
            }
            guard let keyType = KeyDerivation.KeyType(oidArc: parts[1]),
                  keyType != .tripleDES || mapping != .chipAuthenticationMapping else { return nil }
            self.keyType = keyType
            self.oid = oid
        }

        package init(keyAgreement: KeyAgreement, mapping: Mapping, keyType: KeyDerivation.KeyType) {
            let first: Int
            switch (keyAgreement, mapping) {
            case (.dh, .genericMapping): first = 1
            case (.ecdh, .genericMapping): first = 2
            case (.dh, .integratedMapping): first = 3
            case (.ecdh, .integratedMapping): first = 4
            case (_, .chipAuthenticationMapping): first = 6
            }
            self.keyAgreement = keyAgreement
            self.mapping = mapping
            self.keyType = keyType
            self.oid = "\(Self.prefix)\(first).\(keyType.oidArc)"
        }

        package var cipherName: String {
            switch keyType {
            case .tripleDES: return "3DES"
            case .aes128: return "AES-128"
            case .aes192: return "AES-192"
            case .aes256: return "AES-256"
            }
        }

        public var description: String { "PACE-\(keyAgreement.rawValue)-\(mapping.rawValue)-\(cipherName)" }
    }

    /// Standardised domain parameters by PACE parameter id (ICAO 9303-11 §9.5.1).
    /// Comp(PK) of BSI TR-03110-3 A.2.2.3: an EC point's x coordinate, the SHA-1 of a DH value.
    package static func compressed(_ publicKey: [UInt8], domain: PACEDomain) -> [UInt8] {
        switch domain {
        case .ec(let curve): return (try? curve.xCoordinate(publicKey)) ?? []
        case .dh: return DigestAlgorithm.sha1.hash(publicKey)
        }
    }

    package static func curve(parameterId: Int) -> EllipticCurve? {
        switch parameterId {
        case 8: return .nistP192
        case 9: return .brainpoolP192r1
        case 10: return .nistP224
        case 11: return .brainpoolP224r1
        case 12: return .nistP256
        case 13: return .brainpoolP256r1
        case 14: return .brainpoolP320r1
        case 15: return .nistP384
        case 16: return .brainpoolP384r1
        case 17: return .brainpoolP512r1
        case 18: return .nistP521
        default: return nil
        }
    }
}

/// The group PACE runs in: a standardised elliptic curve (ECDH) or RFC 5114 MODP group (DH).
public enum PACEDomain: Sendable, Hashable, CustomStringConvertible {
    case ec(EllipticCurve)
    case dh(DiffieHellmanGroup)

    /// Standardised domain parameters by PACE parameter id: 0–2 DH, 8–18 ECDH.
    package static func standardized(_ parameterId: Int) -> PACEDomain? {
        if let curve = PACE.curve(parameterId: parameterId) { return .ec(curve) }
        return DiffieHellmanGroup.rfc5114(parameterId: parameterId).map { .dh($0) }
    }

    /// Whether Integrated Mapping works in this domain: every RFC 5114 group, and every curve
    /// whose prime is ≡ 3 mod 4 (all standardised ones but NIST P-224, whose square roots need
    /// Tonelli–Shanks; ICAO 9303-11 Appendix B covers only p ≡ 3 mod 4). Any cipher.
    package func supportsIntegratedMapping(_ type: KeyDerivation.KeyType) -> Bool {
        guard case .ec(let curve) = self else { return true }
        return curve != .nistP224
    }

    package var keyAgreement: PACE.KeyAgreement {
        if case .ec = self { return .ecdh }
        return .dh
    }

    public var description: String {
        switch self {
        case .ec(let curve): return curve.description
        case .dh(let group): return group.description
        }
    }
}
