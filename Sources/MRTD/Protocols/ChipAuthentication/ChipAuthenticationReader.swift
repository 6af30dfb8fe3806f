import MRTDCrypto
import SmartCardCore

extension PassportReader {
    /// Runs Chip Authentication when DG14 offers it; on success the session continues with the
    /// new keys. Returns the outcome; `valid` stands only if the next protected exchange works
    /// with the new keys (`SecureChannel.chipAuthenticationRefuted`, checked when the read ends).
    func performChipAuthentication(dg14 bytes: [UInt8]) async throws(MRTDError) -> VerificationOutcome {
        guard let infos = try? SecurityInfos(bytes: bytes) else {
            return VerificationOutcome(status: .invalid, detail: "DG14 cannot be parsed")
        }
        return try await performChipAuthentication(ChipAuthentication.offer(in: infos), source: "DG14")
    }

    /// Whether EF.CardAccess carries a ChipAuthenticationInfo (the key is then in EF.CardSecurity).
    var cardAccessOffersChipAuthentication: Bool {
        guard let cardAccess, let infos = try? SecurityInfos(bytes: cardAccess) else { return false }
        return infos.entries.contains { ChipAuthentication.ProtocolID(oid: $0.oid) != nil }
    }

    /// Chip Authentication with the key EF.CardSecurity publishes (cards that announce CA in
    /// EF.CardAccess). Call while the MF is current (right after PACE).
    /// `nil` when the card has no EF.CardSecurity or it offers no CA.
    func chipAuthenticationFromCardSecurity() async throws(MRTDError) -> VerificationOutcome? {
        guard case .content(let security) = try await readFile(.cardSecurity, index: 1, of: 4) else { return nil }
        cardSecurity = security
        guard let infos = ChipAuthentication.cardSecurityInfos(security) else {
            return VerificationOutcome(status: .invalid, detail: "EF.CardSecurity is not a signed security object")
        }
        guard let offer = ChipAuthentication.offer(in: infos) else { return nil }
        chipKeyFromCardSecurity = true
        return try await performChipAuthentication(offer, source: "EF.CardSecurity")
    }

    /// Runs the Chip Authentication `source` (DG14 or EF.CardSecurity) offers.
    func performChipAuthentication(_ offer: ChipAuthentication.Offer?, source: String) async throws(MRTDError) -> VerificationOutcome {
        guard let offer else {
            return VerificationOutcome(status: .notSupported, detail: "\(source) offers no Chip Authentication with a key this reader can use")
        }
        let id = offer.protocolID
        channel.traceContext.step = "CA"
        channel.traceContext.detail = nil
        let agreement: (ephemeralPublicKey: [UInt8], sharedSecret: [UInt8])
        do {
            agreement = try offer.publicKey.agree()
        } catch {
            return VerificationOutcome(status: .invalid, detail: "CA key agreement failed: \(error.reason)")
        }
        let keyReference: [UInt8] = offer.keyId.map { [0x84, 0x01, UInt8(truncatingIfNeeded: $0)] } ?? []
        if id.usesKeyAgreementTemplate {
            // Version 1 (3DES): MSE:Set KAT carries the ephemeral key itself.
            let kat = BERTLV.encode(tag: 0x91, value: agreement.ephemeralPublicKey) + keyReference
            let mse = try await channel.secure(CommandAPDU(ins: 0x22, p1: 0x41, p2: 0xA6, data: kat))
            guard mse.statusWord == .success else {
                return VerificationOutcome(status: .invalid, detail: "the chip failed Chip Authentication (MSE:Set KAT: \(mse.statusWord.meaning))")
            }
        } else {
            var setAT = DER.oid(id.oid)
            setAT[0] = 0x80
            let mse = try await channel.secure(CommandAPDU(ins: 0x22, p1: 0x41, p2: 0xA4, data: setAT + keyReference))
            guard mse.statusWord == .success else {
                return VerificationOutcome(status: .invalid, detail: "the chip refused Chip Authentication (\(mse.statusWord.meaning))")
            }
            let ga = try await channel.secure(CommandAPDU(ins: 0x86, p1: 0, p2: 0,
                                                          data: BERTLV.encode(tag: 0x7C, value: BERTLV.encode(tag: 0x80, value: agreement.ephemeralPublicKey)),
                                                          ne: 256))
            guard ga.statusWord == .success else {
                return VerificationOutcome(status: .invalid, detail: "the chip failed Chip Authentication (\(ga.statusWord.meaning))")
            }
        }
        let keys = PACE.sessionKeys(sharedSecret: agreement.sharedSecret, type: id.keyType)
        channel.session = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: id.keyType)
        if !channel.extendedLength { readSize = min(readSize, shortLimit) }
        chipAuthenticated = true
        channel.chipAuthenticationPending = true
        completedChipAuthentication = (offer, source)
        let implied = offer.impliedByKeyOnly ? ", implied by a \(source) without ChipAuthenticationInfo" : ""
        return VerificationOutcome(status: .valid, detail: "the chip proved it holds the \(source) key (\(id), \(offer.publicKey)\(implied))")
    }
}
