import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore

/// The content and behaviour of one virtual passport chip: its files, its access key and its
/// limits. Build one from a description (files are generated and EF.SOD is signed) or from a
/// directory of EF dumps.
public struct EmulatedPassport: Sendable {
    /// Files on the master file (EF.CardAccess 011C, EF.ATR/INFO 2F01, EF.CardSecurity 011D).
    public var masterFiles: [UInt16: [UInt8]]
    /// Files of the eMRTD application (EF.COM 011E, EF.SOD 011D, DG1–DG16 0101–0110).
    public var applicationFiles: [UInt16: [UInt8]]
    /// Document number, date of birth and date of expiry with check digits (the BAC key input).
    public var mrzKeyInformation: String
    /// Whether the chip accepts extended-length APDUs.
    public var extendedLength: Bool
    /// The most bytes one READ BINARY returns.
    public var maxReadLength: Int
    /// Field behaviours the chip reproduces (`ChipQuirks`); checked when the chip is made.
    public var quirks = ChipQuirks()
    /// PACE as the chip offers it (`nil`: BAC only).
    public var pace: PACEInfo?
    /// Further PACE protocols the chip accepts (e.g. IM beside GM, as the French ID card 2024);
    /// EF.CardAccess lists them after `pace` (see `enablePACE`).
    public private(set) var alternativePACE: [PACEInfo] = []
    /// How chip keys' SubjectPublicKeyInfos name their domain parameters (`nil`: as documents do —
    /// explicit parameters in DG14, standardised ids in EF.CardSecurity).
    public var keyEncoding: ChipAuthentication.KeyEncoding?
    /// Whether BAC opens the chip (false for PACE-only chips such as ID cards).
    public var bacAllowed = true
    /// The card access number, when the document has one.
    public var can: String?
    /// The private key INTERNAL AUTHENTICATE signs with (Active Authentication).
    public var activeAuthenticationKey: PrivateKey?
    /// The hash the chip signs Active Authentication challenges with (ECDSA).
    public var activeAuthenticationDigest: DigestAlgorithm = .sha256
    /// The Chip Authentication key and protocol.
    public var chipAuthenticationKey: ChipAuthenticationKey?
    public var chipAuthenticationProtocol: ChipAuthentication.ProtocolID?

    /// The static key behind PACE-CAM (its public half is in EF.CardSecurity).
    public var chipAuthenticationMappingKey: PrivateKey?

    /// Offers PACE-CAM: EF.CardAccess with `info`, EF.CardSecurity signed by `signer` with the
    /// chip's static public key on the PACE curve.
    public mutating func enableChipAuthenticationMapping(_ info: PACEInfo, signer: DocumentSigner, can: String? = nil,
                                                         bacAllowed: Bool = true) throws(EmulatorError) {
        enablePACE(info, can: can, bacAllowed: bacAllowed)
        try addChipAuthenticationMappingKey(for: info, signer: signer)
    }

    /// The PACE-CAM key for `info` (one of `paceOffers`), published in EF.CardSecurity.
    mutating func addChipAuthenticationMappingKey(for info: PACEInfo, signer: DocumentSigner) throws(EmulatorError) {
        guard info.protocolID.mapping == .chipAuthenticationMapping, case .ec(let curve)? = info.domain else {
            throw EmulatorError("PACE-CAM needs an ECDH CAM protocol on a standardised curve")
        }
        let key: PrivateKey
        do {
            key = try PrivateKey.generateEC(curveName: curve.openSSLName)
        } catch {
            throw EmulatorError("generating the PACE-CAM key failed: \(error.reason)")
        }
        // As ID cards carry it (the German eID's EF.CardSecurity): a ChipAuthenticationPublicKeyInfo,
        // id-PK-ECDH, the curve named by its TR-03110 parameter id. No ChipAuthenticationInfo: that
        // would announce the separate CA protocol, which PACE-CAM does not need (ICAO 9303-11 §4.4.3.5).
        // The key id is the parameter id, as on the German and Finnish ID cards (../shared/fixtures/real-sod).
        let keyInfo = ChipAuthenticationKey.ec(key).subjectPublicKeyInfo(encoding: keyEncoding ?? .standardized)
        let entries = [ChipAuthentication.securityInfos(protocolID: ChipAuthentication.ProtocolID(keyAgreement: .ecdh, keyType: info.protocolID.keyType),
                                                        publicKeyInfo: keyInfo, keyId: info.parameterId ?? 1, keyOnly: true)[0]]
        try writeCardSecurity(paceSecurityInfos + entries, signer: signer)
        chipAuthenticationMappingKey = key
    }

    /// EF.CardSecurity: `securityInfos` signed by `signer` (CMS over id-SecurityObject).
    mutating func writeCardSecurity(_ securityInfos: [[UInt8]], signer: DocumentSigner) throws(EmulatorError) {
        do {
            masterFiles[0x011D] = try CMSSigner.sign(content: DER.set(securityInfos), contentType: ChipAuthentication.cardSecurityContentType,
                                                     certificate: signer.certificate, key: signer.key)
        } catch {
            throw EmulatorError("building EF.CardSecurity failed: \(error.reason)")
        }
    }

    /// Offers PACE with `info` and any `alternatives` (writing EF.CardAccess), optionally with a
    /// CAN and without BAC.
    public mutating func enablePACE(_ info: PACEInfo, alternatives: [PACEInfo] = [], can: String? = nil, bacAllowed: Bool = true) {
        pace = info
        alternativePACE = alternatives
        self.can = can
        self.bacAllowed = bacAllowed
        masterFiles[Self.efCardAccess] = DER.set(paceSecurityInfos)
    }

    /// Every PACE protocol the chip offers, `pace` first.
    public var paceOffers: [PACEInfo] { (pace.map { [$0] } ?? []) + alternativePACE }

    /// The PACE SecurityInfos of EF.CardAccess (repeated in DG14 and EF.CardSecurity).
    var paceSecurityInfos: [[UInt8]] { paceOffers.flatMap(Self.paceSecurityInfos) }

    /// The PACEInfo, and the PACEDomainParameterInfo when its domain parameters are explicit.
    static func paceSecurityInfos(_ info: PACEInfo) -> [[UInt8]] {
        guard let domain = info.domainParameters, let parameterId = info.parameterId else { return [info.der] }
        return [info.der, PACEInfo.domainParameterInfo(protocolID: info.protocolID, domain: domain, parameterId: parameterId)]
    }

    public static let eMRTDApplicationID: [UInt8] = [0xA0, 0x00, 0x00, 0x02, 0x47, 0x10, 0x01]
    public static let efCOM: UInt16 = 0x011E
    public static let efSOD: UInt16 = 0x011D
    public static let efCardAccess: UInt16 = 0x011C
    public static let efATRInfo: UInt16 = 0x2F01

    public static func dataGroupFID(_ number: Int) -> UInt16 { 0x0100 + UInt16(number) }

    public init(masterFiles: [UInt16: [UInt8]], applicationFiles: [UInt16: [UInt8]], mrzKeyInformation: String,
                extendedLength: Bool = true, maxReadLength: Int? = nil) {
        self.masterFiles = masterFiles
        self.applicationFiles = applicationFiles
        self.mrzKeyInformation = mrzKeyInformation
        self.extendedLength = extendedLength
        self.maxReadLength = maxReadLength ?? (extendedLength ? 65_536 : 256)
        if extendedLength, masterFiles[Self.efATRInfo] == nil {
            self.masterFiles[Self.efATRInfo] = Self.atrInfo(maxCommand: 65_535, maxResponse: self.maxReadLength)
        }
    }

    /// EF.ATR/INFO announcing extended length (ISO 7816-4 §12.7.1, tag 7F66).
    static func atrInfo(maxCommand: Int, maxResponse: Int) -> [UInt8] {
        func integer(_ value: Int) -> [UInt8] {
            let clamped = min(value, 65_535)
            return BERTLV.encode(tag: 0x02, value: [UInt8(clamped >> 8), UInt8(clamped & 0xFF)])
        }
        return BERTLV.encode(tag: 0x7F66, value: integer(maxCommand) + integer(maxResponse))
    }

    /// Builds a chip from a description: generates the data groups, EF.COM and a signed EF.SOD.
    /// Relative image paths resolve against `baseDirectory`.
    public init(description: PassportDescription, baseDirectory: URL, signer: DocumentSigner) throws(EmulatorError) {
        let mrz: MRZ
        do {
            mrz = try MRZ(description.mrz.lines.joined(separator: "\n"))
        } catch {
            throw EmulatorError("the description's MRZ is invalid: \(error.reason)")
        }
        func load(_ path: String) throws(EmulatorError) -> [UInt8] {
            let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : baseDirectory.appendingPathComponent(path)
            do {
                return Array(try Data(contentsOf: url))
            } catch {
                throw EmulatorError("cannot read \(url.path): \(error.localizedDescription)")
            }
        }
        var groups: [Int: [UInt8]] = [1: LDSBuilder.dg1(mrz: mrz)]
        if let face = description.faceImage { groups[2] = try LDSBuilder.dg2(faceImage: try load(face)) }
        if let signature = description.signatureImage { groups[7] = LDSBuilder.dg7(image: try load(signature)) }
        if let dg11 = description.dg11 { groups[11] = LDSBuilder.dg11(dg11) }
        if let dg12 = description.dg12 { groups[12] = LDSBuilder.dg12(dg12) }
        var activeKey: PrivateKey?
        var activeDigest = DigestAlgorithm.sha256
        var securityInfos: [[UInt8]] = []
        if let kind = description.activeAuthentication {
            let (key, dg15, aaInfo, digest) = try Self.activeAuthentication(kind, clone: description.clone ?? false,
                                                                             x962Identifier: description.activeAuthenticationX962Identifier ?? false)
            activeKey = key
            activeDigest = digest
            groups[15] = dg15
            if let aaInfo { securityInfos.append(aaInfo) }
        } else if description.clone == true, description.chipAuthentication == nil {
            throw EmulatorError("clone needs activeAuthentication or chipAuthentication (a cloned chip is one whose AA or CA fails)")
        }
        var caKey: ChipAuthenticationKey?
        var caProtocol: ChipAuthentication.ProtocolID?
        let keyInCardSecurity = try Self.chipAuthenticationKeyInCardSecurity(description)
        let keyEncoding = try Self.keyEncoding(description)
        if let setting = description.chipAuthentication {
            let (key, id, keyOnly) = try Self.chipAuthentication(setting)
            caProtocol = id
            if !keyInCardSecurity {
                // Passports' DG14 carry the key with explicit domain parameters (id-PK-ECDH over
                // id-ecPublicKey + ECParameters, as the German 2008 test passport; X9.42 for DH).
                securityInfos += ChipAuthentication.securityInfos(protocolID: id, publicKeyInfo: key.subjectPublicKeyInfo(encoding: keyEncoding ?? .explicit),
                                                                  keyOnly: keyOnly)
            }
            // A copy holds a key of its own; DG14 (copied, signed) publishes the genuine chip's.
            caKey = description.clone == true && !keyInCardSecurity ? try Self.chipAuthentication(setting).0 : key
        }
        let digestName = description.chip?.sodDigest ?? "SHA-256"
        guard let digest = DigestAlgorithm(rawValue: digestName.uppercased()) else {
            throw EmulatorError("unknown sodDigest '\(digestName)'; use SHA-1, SHA-224, SHA-256, SHA-384 or SHA-512")
        }
        let extended = description.chip?.extendedLength ?? true
        if let max = description.chip?.maxReadLength, !(1...65_536).contains(max) {
            throw EmulatorError("chip.maxReadLength must be between 1 and 65536")
        }
        self.init(masterFiles: [:], applicationFiles: [:], mrzKeyInformation: mrz.keyInformation,
                  extendedLength: extended, maxReadLength: description.chip?.maxReadLength)
        if let quirks = description.quirks {
            _ = try quirks.resolved()
            self.quirks = quirks
        }
        self.keyEncoding = keyEncoding
        activeAuthenticationKey = activeKey
        activeAuthenticationDigest = activeDigest
        chipAuthenticationKey = caKey
        chipAuthenticationProtocol = caProtocol
        try configureAccess(description, caKeyInCardSecurity: keyInCardSecurity, signer: signer)
        // DG14 repeats the SecurityInfos of EF.CardAccess for PACE, so a reader can check the
        // unsigned file against signed data (ICAO 9303-11 §9.2; EF.CardSecurity does the same, Doc
        // 9303-10 §3.11.4) — unless the description asks for a chip that does not (a quirk).
        if pace != nil, description.quirks?.dg14WithoutCardAccessInfos != true {
            securityInfos += paceSecurityInfos
        }
        if !securityInfos.isEmpty { groups[14] = BERTLV.encode(tag: 0x6E, value: DER.set(securityInfos)) }
        var files: [UInt16: [UInt8]] = [:]
        for (number, content) in groups { files[Self.dataGroupFID(number)] = content }
        let ldsVersion = description.chip?.ldsVersion ?? "0107"
        guard ["0107", "0108"].contains(ldsVersion) else { throw EmulatorError("chip.ldsVersion must be 0107 or 0108, not '\(ldsVersion)'") }
        files[Self.efCOM] = LDSBuilder.com(dataGroups: Array(groups.keys), ldsVersion: ldsVersion)
        files[Self.efSOD] = try LDSBuilder.sod(dataGroups: groups, digest: digest, signer: signer, ldsVersion: ldsVersion)
        applicationFiles = files
    }

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

    /// Loads a passport description file and builds its chip, signing with `signer`.
    public static func load(descriptionAt url: URL, signer: DocumentSigner) throws(EmulatorError) -> EmulatedPassport {
        try EmulatedPassport(description: try PassportDescription.load(from: url),
                             baseDirectory: url.deletingLastPathComponent(), signer: signer)
    }

    /// Builds a chip from a directory of EF dumps as readers save them: `EF_COM.bin`, `EF_SOD.bin`,
    /// `DG1.bin` … (also `Datagroup1.bin`, `EF_DG1.bin`, or by file id: `ef0101.bin`, `011E.bin`).
    /// The BAC key comes from DG1's MRZ unless `mrz` is given.
    public init(dumpDirectory: URL, mrz overrideMRZ: String? = nil, extendedLength: Bool = true,
                maxReadLength: Int? = nil) throws(EmulatorError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: dumpDirectory.path)
        } catch {
            throw EmulatorError("cannot list \(dumpDirectory.path): \(error.localizedDescription)")
        }
        var application: [UInt16: [UInt8]] = [:]
        var master: [UInt16: [UInt8]] = [:]
        for name in names.sorted() {
            guard let (fid, inMaster) = Self.fileID(forDumpName: name) else { continue }
            let content: [UInt8]
            do {
                content = Array(try Data(contentsOf: dumpDirectory.appendingPathComponent(name)))
            } catch {
                throw EmulatorError("cannot read \(name): \(error.localizedDescription)")
            }
            if inMaster { master[fid] = content } else { application[fid] = content }
        }
        guard application[Self.efCOM] != nil || application[Self.efSOD] != nil || application[Self.dataGroupFID(1)] != nil else {
            throw EmulatorError("\(dumpDirectory.path) holds no EF.COM, EF.SOD or DG1 dump")
        }
        let keyInformation: String
        do {
            if let overrideMRZ {
                keyInformation = try MRZ(overrideMRZ).keyInformation
            } else {
                guard let dg1 = application[Self.dataGroupFID(1)] else {
                    throw EmulatorError("the dump has no DG1; give the MRZ explicitly")
                }
                let mrzBytes = try BERTLV.parseSingle(dg1).child(0x5F1F)?.value ?? []
                keyInformation = try MRZ(String(decoding: mrzBytes, as: UTF8.self)).keyInformation
            }
        } catch let error as EmulatorError {
            throw error
        } catch {
            throw EmulatorError("cannot derive the access key from the dump's MRZ: \(error)")
        }
        self.init(masterFiles: master, applicationFiles: application, mrzKeyInformation: keyInformation,
                  extendedLength: extendedLength, maxReadLength: maxReadLength)
    }

    /// Maps a dump file name to a file id and whether it lives on the master file.
    static func fileID(forDumpName name: String) -> (UInt16, Bool)? {
        LDSFile(dumpFileName: name).map { ($0.fid, $0.isOnMasterFile) }
    }
}

/// A chip's Chip Authentication key: an EC key, or a DH key in an RFC 5114 group.
public enum ChipAuthenticationKey: Sendable {
    case ec(PrivateKey)
    case dh(group: DiffieHellmanGroup, privateKey: [UInt8], publicKey: [UInt8])

    /// The SubjectPublicKeyInfo as OpenSSL writes it (named curve; X9.42 for DH).
    public var subjectPublicKeyInfo: [UInt8] {
        switch self {
        case .ec(let key): return key.subjectPublicKeyInfo
        case .dh(let group, _, let publicKey): return ChipAuthentication.dhSubjectPublicKeyInfo(group: group, publicValue: publicKey)
        }
    }

    /// The public half as a reader sees it.
    public var publicKey: ChipAuthentication.ChipKey? {
        switch self {
        case .ec(let key): return key.ecKey.map { .ec($0.curve, point: $0.point) }
        case .dh(let group, _, let publicKey): return .dh(group, publicValue: publicKey)
        }
    }

    /// The SubjectPublicKeyInfo with its domain parameters named as `encoding` says (falls back to
    /// OpenSSL's encoding for a group without a standardised id).
    public func subjectPublicKeyInfo(encoding: ChipAuthentication.KeyEncoding) -> [UInt8] {
        publicKey.flatMap { ChipAuthentication.subjectPublicKeyInfo($0, encoding: encoding) } ?? subjectPublicKeyInfo
    }

    /// The shared secret with the terminal's ephemeral key, or nil when that key is not valid.
    public func sharedSecret(with terminalKey: [UInt8]) -> [UInt8]? {
        switch self {
        case .ec(let key):
            guard let (curve, scalar, _) = key.ecKey, curve.isValidPoint(terminalKey) else { return nil }
            return try? curve.xCoordinate(try curve.multiply(scalar, point: terminalKey))
        case .dh(let group, let privateKey, _):
            guard group.isValidPublicKey(terminalKey) else { return nil }
            return try? group.power(terminalKey, privateKey)
        }
    }
}
