import MRTDCrypto
import SmartCardCore

extension ChipAuthentication.ChipKey {
    /// An ephemeral key pair in the same group and the shared secret with this key (the
    /// terminal's side of Chip Authentication).
    ///
    /// Terminal Authentication signs Comp(PK_PCD) of this key: the x coordinate (EC) or the SHA-1
    /// of the public value (DH), a field element of the field's length (BSI TR-03111 FE2OS).
    /// OpenPACE's `Comp` (and its DH public value) drops leading zero bytes, so a chip built on it
    /// checks the signature over a shorter value once in 256 keys and refuses it. A key whose
    /// encoding starts with a zero byte is drawn again (at most `draws` times): either way of
    /// reading it then gives the same bytes.
    package func agree() throws(CryptoError) -> (ephemeralPrivateKey: [UInt8], ephemeralPublicKey: [UInt8], sharedSecret: [UInt8]) {
        let draws = 8
        switch self {
        case .ec(let curve, let point):
            var ephemeral = try curve.generateKeyPair()
            for _ in 1..<draws where try curve.xCoordinate(ephemeral.publicKey).first == 0 {
                ephemeral = try curve.generateKeyPair()
            }
            return (ephemeral.privateKey, ephemeral.publicKey, try curve.xCoordinate(try curve.multiply(ephemeral.privateKey, point: point)))
        case .dh(let group, let value):
            guard group.isValidPublicKey(value) else { throw CryptoError(.invalidInput, "the chip's DH key is not in its group") }
            var ephemeral = try group.generateKeyPair()
            for _ in 1..<draws where ephemeral.publicKey.first == 0 {
                ephemeral = try group.generateKeyPair()
            }
            return (ephemeral.privateKey, ephemeral.publicKey, try group.power(value, ephemeral.privateKey))
        }
    }
}

extension PACE {
    /// PACE-CAM's check (ICAO 9303-11 §4.4.3.5.2): decrypt the chip authentication data A_IC
    /// (tag 8A of the last GENERAL AUTHENTICATE answer; CBC with IV = E(KS_Enc, −1)) to CA_IC and
    /// check PK_Map,IC = CA_IC · PK_IC, PK_IC being the chip key on `curve` in EF.CardSecurity.
    /// The signature of EF.CardSecurity is passive authentication's business, not this check's.
    package static func verifyChipAuthenticationMapping(encryptedData: [UInt8], chipMapKey: [UInt8], cardSecurity: [UInt8],
                                                       curve: EllipticCurve, encryptionKey: [UInt8],
                                                       type: KeyDerivation.KeyType) -> VerificationOutcome {
        guard let infos = ChipAuthentication.cardSecurityInfos(cardSecurity) else {
            return VerificationOutcome(status: .invalid, detail: "PACE-CAM: EF.CardSecurity is not a signed security object")
        }
        let chipKey = ChipAuthentication.chipKeys(in: infos).lazy.compactMap { entry -> [UInt8]? in
            guard case .ec(curve, let point) = entry.key else { return nil }
            return point
        }.first
        guard let chipKey else {
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
