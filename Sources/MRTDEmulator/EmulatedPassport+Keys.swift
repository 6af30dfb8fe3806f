import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore

/// How a description's key settings (`chipAuthentication`, `activeAuthentication`, key encodings)
/// become chip keys and the security infos that announce them.
extension EmulatedPassport {
    /// A fresh CA key pair from a setting like `ECDH-brainpoolP256r1-AES-128`, `DH-MODP2048/224-AES-128`
    /// or `ECDH-P256-3DES-v1` (a DG14 without ChipAuthenticationInfo; version 1 implies 3DES).
    static func chipAuthentication(_ setting: String) throws(EmulatorError) -> (ChipAuthenticationKey, ChipAuthentication.ProtocolID, Bool) {
        var parts = setting.split(separator: "-").map(String.init)
        let keyOnly = parts.last?.lowercased() == "v1"
        if keyOnly { parts.removeLast() }
        let usage = "chipAuthentication must look like ECDH-brainpoolP256r1-AES-128, DH-MODP2048/224-AES-128 or ECDH-P256-3DES-v1, not '\(setting)'"
        guard parts.count >= 3, ["ECDH", "DH"].contains(parts[0].uppercased()) else { throw EmulatorError(usage) }
        let keyType: KeyDerivation.KeyType
        switch parts[2...].joined(separator: "-").uppercased() {
        case "AES-128": keyType = .aes128
        case "AES-192": keyType = .aes192
        case "AES-256": keyType = .aes256
        case "3DES": keyType = .tripleDES
        default: throw EmulatorError("chipAuthentication cipher must be AES-128, AES-192, AES-256 or 3DES")
        }
        if keyOnly && keyType != .tripleDES {
            throw EmulatorError("a DG14 without ChipAuthenticationInfo (-v1) implies 3DES; AES needs the ChipAuthenticationInfo")
        }
        do {
            if parts[0].uppercased() == "DH" {
                let groups = ["MODP1024/160": 0, "MODP2048/224": 1, "MODP2048/256": 2]
                guard let id = groups[parts[1].uppercased()], let group = DiffieHellmanGroup.rfc5114(parameterId: id) else {
                    throw EmulatorError("chipAuthentication DH group must be MODP1024/160, MODP2048/224 or MODP2048/256")
                }
                let pair = try group.generateKeyPair()
                return (.dh(group: group, privateKey: pair.privateKey, publicKey: pair.publicKey),
                        ChipAuthentication.ProtocolID(keyAgreement: .dh, keyType: keyType), keyOnly)
            }
            let curves = ["P192": "prime192v1", "SECP192R1": "prime192v1", "P224": "secp224r1", "SECP224R1": "secp224r1",
                          "P256": "prime256v1", "SECP256R1": "prime256v1", "P384": "secp384r1", "SECP384R1": "secp384r1",
                          "P521": "secp521r1", "SECP521R1": "secp521r1",
                          "BRAINPOOLP192R1": "brainpoolP192r1", "BRAINPOOLP224R1": "brainpoolP224r1", "BRAINPOOLP256R1": "brainpoolP256r1",
                          "BRAINPOOLP320R1": "brainpoolP320r1", "BRAINPOOLP384R1": "brainpoolP384r1", "BRAINPOOLP512R1": "brainpoolP512r1"]
            guard let curve = curves[parts[1].uppercased()] else { throw EmulatorError("chipAuthentication curve \(parts[1]) is not emulated") }
            return (.ec(try PrivateKey.generateEC(curveName: curve)), ChipAuthentication.ProtocolID(keyAgreement: .ecdh, keyType: keyType), keyOnly)
        } catch let error as EmulatorError {
            throw error
        } catch let error as CryptoError {
            throw EmulatorError(error.reason)
        } catch {
            throw EmulatorError("\(error)")
        }
    }

    /// What an `activeAuthentication` description asks for: `RSA-1024`, `RSA-2048`, or
    /// `ECDSA-<curve>[-SHA<n>]` (curves P256, P384, P521, brainpoolP256r1, brainpoolP384r1,
    /// brainpoolP512r1; SHA-1 … SHA-512, default SHA-256).
    struct ActiveAuthenticationKind {
        var curve: String?
        var rsaBits: Int?
        var digest: DigestAlgorithm = .sha256

        init(_ text: String) throws(EmulatorError) {
            let parts = text.split(separator: "-").map(String.init)
            let usage = "activeAuthentication must be RSA-1024, RSA-2048 or ECDSA-<curve>[-SHA<n>] (curves P256, P384, P521, brainpoolP256r1, brainpoolP384r1, brainpoolP512r1), not '\(text)'"
            switch parts.first?.uppercased() {
            case "RSA":
                guard parts.count == 2, let bits = Int(parts[1]), [1024, 2048, 3072].contains(bits) else { throw EmulatorError(usage) }
                rsaBits = bits
            case "ECDSA":
                let curves = ["P256": "prime256v1", "P384": "secp384r1", "P521": "secp521r1", "BRAINPOOLP256R1": "brainpoolP256r1",
                              "BRAINPOOLP384R1": "brainpoolP384r1", "BRAINPOOLP512R1": "brainpoolP512r1"]
                guard (2...3).contains(parts.count), let name = curves[parts[1].uppercased()] else { throw EmulatorError(usage) }
                curve = name
                if parts.count == 3 {
                    guard let digest = DigestAlgorithm.allCases.first(where: { $0.rawValue.replacingOccurrences(of: "-", with: "") == parts[2].uppercased() }) else {
                        throw EmulatorError(usage)
                    }
                    self.digest = digest
                }
            default:
                throw EmulatorError(usage)
            }
        }
    }

    /// A fresh AA key, DG15 with its public key (another key's when `clone`), the DG14
    /// ActiveAuthenticationInfo for ECDSA — the TR-03111 ecdsa-plain identifier of the hash the
    /// chip signs with (ICAO 9303-11 §6.1 requires the plain format), or the X9.62 one when
    /// `x962Identifier` — and the hash.
    static func activeAuthentication(_ text: String, clone: Bool, x962Identifier: Bool = false) throws(EmulatorError)
        -> (PrivateKey, [UInt8], [UInt8]?, DigestAlgorithm)
    {
        let kind = try ActiveAuthenticationKind(text)
        func make() throws(CryptoError) -> PrivateKey {
            if let bits = kind.rsaBits { return try PrivateKey.generateRSA(bits: bits) }
            return try PrivateKey.generateEC(curveName: kind.curve ?? "prime256v1")
        }
        do {
            let key = try make()
            let published = clone ? try make() : key
            let dg15 = BERTLV.encode(tag: 0x6F, value: published.subjectPublicKeyInfo)
            var info: [UInt8]?
            if kind.curve != nil {
                let x962: [DigestAlgorithm: String] = [.sha1: "1.2.840.10045.4.1", .sha224: "1.2.840.10045.4.3.1", .sha256: "1.2.840.10045.4.3.2",
                                                       .sha384: "1.2.840.10045.4.3.3", .sha512: "1.2.840.10045.4.3.4"]
                let oid = x962Identifier ? (x962[kind.digest] ?? "1.2.840.10045.4.3.2") : ActiveAuthentication.plainSignatureOID(kind.digest)
                info = DER.sequence(DER.oid(ActiveAuthentication.infoOID), DER.integer(1), DER.oid(oid))
            }
            return (key, dg15, info, kind.digest)
        } catch {
            throw EmulatorError(error.reason)
        }
    }

    mutating func configureAccess(_ description: PassportDescription, caKeyInCardSecurity: Bool, signer: DocumentSigner) throws(EmulatorError) {
        // Without an `access` field a description keeps its original BAC-only chip.
        let access = Self.effectiveAccess(description)
        guard ["pace", "bac", "both"].contains(access) else {
            throw EmulatorError("access must be pace, bac or both, not '\(access)'")
        }
        if let can = description.can, !((ASCII.digitBytes(can)?.count).map { (6...10).contains($0) } ?? false) {
            throw EmulatorError("can must be 6 to 10 digits")
        }
        guard access != "bac" else {
            can = description.can
            return
        }
        // One mapping, or several (`GM+IM`, `GM+CAM`): each offered, in that order in EF.CardAccess.
        let mappings = (description.paceMapping ?? "GM").uppercased().split(whereSeparator: { "+, ".contains($0) }).map(String.init)
        guard !mappings.isEmpty, Set(mappings).count == mappings.count, mappings.allSatisfy({ ["GM", "IM", "CAM"].contains($0) }) else {
            throw EmulatorError("paceMapping must be GM, IM or CAM, or several joined by + (e.g. GM+CAM), not '\(description.paceMapping ?? "")'")
        }
        let parameterId = description.paceParameterId ?? 13
        guard let domain = PACEDomain.standardized(parameterId) else {
            throw EmulatorError("paceParameterId \(parameterId) is not a standardised group (0–2 DH, 8–18 ECDH)")
        }
        let keyType: KeyDerivation.KeyType
        switch (description.paceCipher ?? "AES-128").uppercased() {
        case "AES-128", "AES128": keyType = .aes128
        case "AES-192", "AES192": keyType = .aes192
        case "AES-256", "AES256": keyType = .aes256
        case "3DES", "DESEDE": keyType = .tripleDES
        default: throw EmulatorError("paceCipher must be AES-128, AES-192, AES-256 or 3DES")
        }
        // Explicit domain parameters: a proprietary id (32) and a PACEDomainParameterInfo.
        let explicit = description.paceExplicitParameters == true
        let publishedId = explicit ? 32 : parameterId
        let domainParameters: PACEDomain? = explicit ? domain : nil
        var infos: [PACEInfo] = []
        for mapping in mappings {
            switch mapping {
            case "CAM" where domain.keyAgreement != .ecdh || keyType == .tripleDES:
                throw EmulatorError("PACE-CAM is defined for ECDH with AES only")
            case "IM" where !domain.supportsIntegratedMapping(keyType):
                throw EmulatorError("PACE-IM is emulated on every standard group but NIST P-224 (parameter id 10)")
            default: break
            }
            let kind: PACE.Mapping = mapping == "CAM" ? .chipAuthenticationMapping : mapping == "IM" ? .integratedMapping : .genericMapping
            infos.append(PACEInfo(protocolID: PACE.ProtocolID(keyAgreement: domain.keyAgreement, mapping: kind, keyType: keyType),
                                  parameterId: publishedId, domainParameters: domainParameters))
        }
        enablePACE(infos[0], alternatives: Array(infos.dropFirst()), can: description.can, bacAllowed: access == "both")
        if let cam = infos.first(where: { $0.protocolID.mapping == .chipAuthenticationMapping }) {
            try addChipAuthenticationMappingKey(for: cam, signer: signer)
        } else if caKeyInCardSecurity {
            try publishChipAuthenticationInCardSecurity(signer: signer)
        }
    }

    /// The description's `chipKeyEncoding`, when it has one.
    static func keyEncoding(_ description: PassportDescription) throws(EmulatorError) -> ChipAuthentication.KeyEncoding? {
        guard let name = description.chipKeyEncoding else { return nil }
        guard let encoding = ChipAuthentication.KeyEncoding(rawValue: name) else {
            throw EmulatorError("chipKeyEncoding must be \(ChipAuthentication.KeyEncoding.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name)'")
        }
        return encoding
    }

    /// `access` as given, or `both` when PACE parameters are given, else `bac`.
    static func effectiveAccess(_ description: PassportDescription) -> String {
        (description.access ?? (description.paceMapping != nil || description.paceParameterId != nil ? "both" : "bac")).lowercased()
    }

    /// Whether the description puts the CA key in EF.CardSecurity (`chipAuthenticationKeyIn`).
    static func chipAuthenticationKeyInCardSecurity(_ description: PassportDescription) throws(EmulatorError) -> Bool {
        switch description.chipAuthenticationKeyIn?.uppercased() {
        case nil, "DG14": return false
        case "CARDSECURITY", "EF.CARDSECURITY":
            guard description.chipAuthentication != nil else { throw EmulatorError("chipAuthenticationKeyIn needs chipAuthentication") }
            guard effectiveAccess(description) != "bac", description.paceMapping?.uppercased() != "CAM" else {
                throw EmulatorError("a CA key in EF.CardSecurity needs PACE with GM or IM (PACE-CAM already authenticates the chip)")
            }
            return true
        default:
            throw EmulatorError("chipAuthenticationKeyIn must be DG14 or CardSecurity")
        }
    }

    /// An ID card's way: EF.CardAccess announces CA (ChipAuthenticationInfo), EF.CardSecurity
    /// (signed by `signer`) carries the key; there is no DG14 entry for it.
    mutating func publishChipAuthenticationInCardSecurity(signer: DocumentSigner) throws(EmulatorError) {
        guard let key = chipAuthenticationKey, let id = chipAuthenticationProtocol else { return }
        let entries = ChipAuthentication.securityInfos(protocolID: id, publicKeyInfo: key.subjectPublicKeyInfo(encoding: keyEncoding ?? .standardized))
        masterFiles[Self.efCardAccess] = DER.set(paceSecurityInfos + [entries[0]])
        try writeCardSecurity(paceSecurityInfos + entries, signer: signer)
    }
}
