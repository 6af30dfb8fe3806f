import BoundedFiles
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
    /// How the chip attacks the reader (`HostileCard`; set with `makeHostile`). Empty by default.
    public internal(set) var hostile = HostileCard()
    /// PACE as the chip offers it (`nil`: BAC only).
    public var pace: PACEInfo?
    /// Further PACE protocols the chip accepts (e.g. IM beside GM, as the French ID card 2024);
    /// EF.CardAccess lists them after `pace` (see `enablePACE`).
    public private(set) var alternativePACE: [PACEInfo] = []
    /// How chip keys' SubjectPublicKeyInfos name their domain parameters (`nil`: as documents do —
    /// explicit parameters in DG14, standardised ids in EF.CardSecurity).
    package var keyEncoding: ChipAuthentication.KeyEncoding?
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
    /// Extended Access Control: DG3/DG4 behind Terminal Authentication, EF.CVCA naming the trust points.
    public var eac: EACConfiguration?
    /// DG3/DG4 are behind Extended Access Control (as on every EU passport): without `eac` (no
    /// trust point configured) no terminal can open them, and they answer 6982 like a real chip's.
    public var biometricsBehindEAC = false

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
    /// EF.DIR on the MF (ICAO 9303-10 Table 31): the chip's applications, for LDS2 chips.
    public static let efDIR: UInt16 = 0x2F00

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
                return try BoundedFile.read(url.path, ceiling: BoundedFile.Ceiling.image, what: "image")
            } catch {
                throw EmulatorError(error.description)
            }
        }
        var groups: [Int: [UInt8]] = [1: LDSBuilder.dg1(mrz: mrz)]
        if let face = description.faceImage { groups[2] = try LDSBuilder.dg2(faceImage: try load(face)) }
        if let signature = description.signatureImage { groups[7] = LDSBuilder.dg7(image: try load(signature)) }
        if let dg11 = description.dg11 { groups[11] = LDSBuilder.dg11(dg11) }
        if let dg12 = description.dg12 { groups[12] = LDSBuilder.dg12(dg12) }
        if description.biometrics == true {
            groups[3] = LDSBuilder.dg3()
            groups[4] = LDSBuilder.dg4()
        }
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
        if description.biometrics == true {
            // TerminalAuthenticationInfo (ICAO 9303-11 §9.2.6): id-TA, version 1.
            securityInfos.append(DER.sequence(DER.oid(ChipTerminalAuthentication.protocolOID), DER.integer(1)))
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
        biometricsBehindEAC = description.biometrics == true
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
            names = try BoundedFile.list(dumpDirectory.path, what: "directory of EF dumps")
        } catch {
            throw EmulatorError(error.description)
        }
        var application: [UInt16: [UInt8]] = [:]
        var master: [UInt16: [UInt8]] = [:]
        for name in names.sorted() {
            guard let (fid, inMaster) = Self.fileID(forDumpName: name) else { continue }
            let content: [UInt8]
            do {
                // Within the ceiling a chip's file of its kind has (LDSFile.sizeCeiling).
                let ceiling = LDSFile(dumpFileName: name)?.sizeCeiling ?? LDSFile.kibibyte
                content = try BoundedFile.read(dumpDirectory.appendingPathComponent(name).path, ceiling: ceiling, what: "dump file")
            } catch {
                throw EmulatorError(error.description)
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
