import MRTDCrypto
import SmartCard

/// Chip Authentication (ICAO 9303-11 §6.2, BSI TR-03110 CA version 2, ECDH): the chip proves it
/// holds the private key of the DG14 public key by agreeing new secure-messaging keys with it.
public enum ChipAuthentication {
    public static let protocolPrefix = "0.4.0.127.0.7.2.2.3."
    public static let ecdhPublicKeyOID = "0.4.0.127.0.7.2.2.1.2"

    /// A CA protocol OID: key agreement and cipher.
    public struct ProtocolID: Sendable, Hashable, CustomStringConvertible {
        public let oid: String
        public let keyAgreement: PACE.KeyAgreement
        public let keyType: KeyDerivation.KeyType

        public init?(oid: String) {
            guard oid.hasPrefix(ChipAuthentication.protocolPrefix) else { return nil }
            let parts = oid.dropFirst(ChipAuthentication.protocolPrefix.count).split(separator: ".").compactMap { Int($0) }
            guard parts.count == 2, [1, 2].contains(parts[0]) else { return nil }
            keyAgreement = parts[0] == 1 ? .dh : .ecdh
            guard let keyType = KeyDerivation.KeyType(oidArc: parts[1]) else { return nil }
            self.keyType = keyType
            self.oid = oid
        }

        public init(keyAgreement: PACE.KeyAgreement, keyType: KeyDerivation.KeyType) {
            let cipher = keyType.oidArc
            self.init(oid: "\(ChipAuthentication.protocolPrefix)\(keyAgreement == .dh ? 1 : 2).\(cipher)")!
        }

        public var description: String {
            "CA-\(keyAgreement.rawValue)-\(keyType == .tripleDES ? "3DES" : "AES-\(keyType.keyLength * 8)")"
        }
    }

    /// What DG14 offers: the protocol and the chip's public key (with its key id, when several).
    public struct Offer: Sendable {
        public let protocolID: ProtocolID
        public let publicKey: PublicKey
        public let keyId: Int?
    }

    static func integer(_ object: TLV?) -> Int? {
        guard let object, object.tag == 0x02, object.value.count <= 4 else { return nil }
        return object.value.reduce(0) { $0 << 8 | Int($1) }
    }

    /// The ECDH Chip Authentication DG14 offers, when there is one.
    public static func offer(in dg14: SecurityInfos) -> Offer? {
        var protocols: [(ProtocolID, Int?)] = []
        var keys: [(PublicKey, Int?)] = []
        for entry in dg14.entries {
            guard let fields = try? BERTLV.parseSingle(entry.der).children() else { continue }
            if let id = ProtocolID(oid: entry.oid), id.keyAgreement == .ecdh {
                protocols.append((id, integer(fields.count > 2 ? fields[2] : nil)))
            } else if entry.oid == ecdhPublicKeyOID, fields.count >= 2, fields[1].tag == 0x30,
                      let key = try? PublicKey(subjectPublicKeyInfo: fields[1].encoded()) {
                keys.append((key, integer(fields.count > 2 ? fields[2] : nil)))
            }
        }
        guard let (id, keyId) = protocols.first else { return nil }
        guard let key = keys.first(where: { keyId == nil || $0.1 == keyId || $0.1 == nil })?.0 else { return nil }
        return Offer(protocolID: id, publicKey: key, keyId: keyId)
    }

    /// The DG14 entries offering CA with `key` (for the emulator).
    public static func securityInfos(protocolID: ProtocolID, publicKeyInfo: [UInt8], keyId: Int = 1) -> [[UInt8]] {
        [DER.sequence(DER.oid(protocolID.oid), DER.integer(2), DER.integer(keyId)),
         DER.sequence(DER.oid(ecdhPublicKeyOID), publicKeyInfo, DER.integer(keyId))]
    }
}

extension PassportReader {
    /// Runs Chip Authentication when DG14 offers it; on success the session continues with the
    /// new keys. Returns the outcome (`valid` is confirmed by the reads that follow).
    func performChipAuthentication(dg14 bytes: [UInt8]) async throws(MRTDError) -> VerificationOutcome {
        guard let infos = try? SecurityInfos(bytes: bytes) else {
            return VerificationOutcome(status: .invalid, detail: "DG14 cannot be parsed")
        }
        guard let offer = ChipAuthentication.offer(in: infos) else {
            return VerificationOutcome(status: .notSupported, detail: "DG14 offers no ECDH Chip Authentication this reader performs")
        }
        guard let (curve, chipKey) = offer.publicKey.ecPoint else {
            return VerificationOutcome(status: .notChecked,
                                       detail: "the chip's CA key is not on a standard curve this reader supports")
        }
        let id = offer.protocolID
        let ephemeral: (privateKey: [UInt8], publicKey: [UInt8])
        let shared: [UInt8]
        do {
            ephemeral = try curve.generateKeyPair()
            shared = try curve.xCoordinate(try curve.multiply(ephemeral.privateKey, point: chipKey))
        } catch {
            return VerificationOutcome(status: .invalid, detail: "CA key agreement failed: \(error.reason)")
        }
        var setAT = DER.oid(id.oid)
        setAT[0] = 0x80
        if let keyId = offer.keyId { setAT += [0x84, 0x01, UInt8(truncatingIfNeeded: keyId)] }
        let mse = try await channel.secure(CommandAPDU(ins: 0x22, p1: 0x41, p2: 0xA4, data: setAT))
        guard mse.statusWord == .success else {
            return VerificationOutcome(status: .invalid, detail: "the chip refused Chip Authentication (\(mse.statusWord.meaning))")
        }
        let ga = try await channel.secure(CommandAPDU(ins: 0x86, p1: 0, p2: 0,
                                                      data: BERTLV.encode(tag: 0x7C, value: BERTLV.encode(tag: 0x80, value: ephemeral.publicKey)),
                                                      ne: 256))
        guard ga.statusWord == .success else {
            return VerificationOutcome(status: .invalid, detail: "the chip failed Chip Authentication (\(ga.statusWord.meaning))")
        }
        let keys = PACE.sessionKeys(sharedSecret: shared, type: id.keyType)
        channel.session = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: id.keyType)
        shortLimit = id.keyType == .tripleDES ? 0xE7 : 0xDF
        if !channel.extendedLength { readSize = min(readSize, shortLimit) }
        chipAuthenticated = true
        return VerificationOutcome(status: .valid, detail: "the chip proved it holds the DG14 key (\(id), \(curve))")
    }
}

extension ChipAuthentication {
    /// The curve and point of an EC SubjectPublicKeyInfo whose parameters are a named-curve OID or
    /// (as TR-03110 documents write it) a standardised domain-parameter id.
    public static func ecPublicKey(subjectPublicKeyInfo der: [UInt8]) -> (curve: EllipticCurve, point: [UInt8])? {
        guard let spki = try? BERTLV.parseSingle(der).children(), spki.count == 2, spki[0].tag == 0x30, spki[1].tag == 0x03,
              let algorithm = try? spki[0].children(), algorithm.count == 2 else { return nil }
        let curve: EllipticCurve?
        switch algorithm[1].tag {
        case 0x06: curve = DER.oidString(algorithm[1].value).flatMap(EllipticCurve.init(oid:))
        case 0x02: curve = PACE.curve(parameterId: algorithm[1].value.reduce(0) { $0 << 8 | Int($1) })
        case 0x30: return EllipticCurve.publicKey(subjectPublicKeyInfo: der)  // explicit domain parameters
        default: curve = nil
        }
        guard let curve, spki[1].value.first == 0x00 else { return nil }
        let point = Array(spki[1].value.dropFirst())
        return curve.isValidPoint(point) ? (curve, point) : nil
    }

    /// id-SecurityObject: the content type of EF.CardSecurity.
    public static let cardSecurityContentType = "0.4.0.127.0.7.3.2.1"
}

extension PACE {
    /// PACE-CAM's check (ICAO 9303-11 §4.4.3.5.2): decrypt the chip authentication data A_IC
    /// (tag 8A of the last GENERAL AUTHENTICATE answer; CBC with IV = E(KS_Enc, −1)) to CA_IC and
    /// check PK_Map,IC = CA_IC · PK_IC, PK_IC being the chip key on `curve` in EF.CardSecurity.
    /// The signature of EF.CardSecurity is passive authentication's business, not this check's.
    public static func verifyChipAuthenticationMapping(encryptedData: [UInt8], chipMapKey: [UInt8], cardSecurity: [UInt8],
                                                       curve: EllipticCurve, encryptionKey: [UInt8],
                                                       type: KeyDerivation.KeyType) -> VerificationOutcome {
        guard let signed = try? CMSSignedData(bytes: cardSecurity), signed.contentType == ChipAuthentication.cardSecurityContentType,
              let content = signed.content, let infos = try? SecurityInfos(bytes: content) else {
            return VerificationOutcome(status: .invalid, detail: "PACE-CAM: EF.CardSecurity is not a signed security object")
        }
        let keys = infos.entries.filter { $0.oid == ChipAuthentication.ecdhPublicKeyOID }.compactMap { entry -> (EllipticCurve, [UInt8])? in
            guard let fields = try? BERTLV.parseSingle(entry.der).children(), fields.count >= 2 else { return nil }
            return ChipAuthentication.ecPublicKey(subjectPublicKeyInfo: fields[1].encoded())
        }
        guard let chipKey = keys.first(where: { $0.0 == curve })?.1 else {
            return VerificationOutcome(status: .invalid, detail: "PACE-CAM: EF.CardSecurity has no chip key on \(curve)")
        }
        do {
            let iv = try type.cipher.ecb(encrypt: true, key: encryptionKey, [UInt8](repeating: 0xFF, count: type.cipher.blockSize))
            guard let data = iso9797Unpad(try type.cipher.cbc(encrypt: false, key: encryptionKey, iv: iv, encryptedData)) else {
                return VerificationOutcome(status: .invalid, detail: "PACE-CAM: the chip authentication data is malformed")
            }
            guard try curve.multiply(data, point: chipKey) == chipMapKey else {
                return VerificationOutcome(status: .invalid, detail: "PACE-CAM: the chip does not hold the EF.CardSecurity key: it may be a copy")
            }
        } catch {
            return VerificationOutcome(status: .invalid, detail: "PACE-CAM: \(error.reason)")
        }
        return VerificationOutcome(status: .valid, detail: "the chip proved it holds the EF.CardSecurity key (PACE-CAM, \(curve))")
    }
}
