import MRTDCrypto
import SmartCardCore

/// Where the chip key Chip Authentication used came from.
package enum ChipKeySource: String, Sendable, Hashable, CustomStringConvertible {
    /// DG14, signed by EF.SOD (passports).
    case dg14 = "DG14"
    /// EF.CardSecurity, signed itself (ID cards; PACE-CAM).
    case cardSecurity = "EF.CardSecurity"

    package var description: String { rawValue }
}

/// What Chip Authentication established: the protocol, the chip's static key and the terminal's
/// ephemeral key pair (Terminal Authentication signs over the compressed ephemeral public key),
/// and the outcome — `valid` stands only while the next protected exchange works under the new
/// keys (`CardSession.chipAuthentication.refuted`).
package struct ChipAuthenticationResult: Sendable {
    package let offer: ChipAuthentication.Offer
    package let source: ChipKeySource
    package let ephemeralPublicKey: [UInt8]
    package let ephemeralPrivateKey: [UInt8]
    package let outcome: VerificationOutcome

    package var chipPublicKey: ChipAuthentication.ChipKey { offer.publicKey }
}

/// Chip Authentication run on a card session (ICAO 9303-11 §6.2, BSI TR-03110-2 §3.4): the
/// chip proves it holds the private half of its published key by agreeing new secure-messaging
/// keys with the terminal's ephemeral key. Version 1 (3DES): MSE:Set KAT with the ephemeral key;
/// version 2 (AES): MSE:Set AT, then GENERAL AUTHENTICATE with it. Runs under secure messaging.
package struct ChipAuthenticationProtocol {
    package let offer: ChipAuthentication.Offer
    package let source: ChipKeySource

    package init(offer: ChipAuthentication.Offer, source: ChipKeySource) {
        self.offer = offer
        self.source = source
    }

    /// Runs CA. A chip that refuses is an `invalid` outcome (the session is then over: the caller
    /// opens a new one); on success the session continues under the new keys.
    package func run(on session: CardSession) async throws(MRTDError) -> ChipAuthenticationResult {
        let id = offer.protocolID
        session.traceContext.step = "CA"
        session.traceContext.detail = nil
        let agreement: (ephemeralPrivateKey: [UInt8], ephemeralPublicKey: [UInt8], sharedSecret: [UInt8])
        do {
            agreement = try offer.publicKey.agree()
        } catch {
            return result(agreement: nil, VerificationOutcome(status: .invalid, detail: "CA key agreement failed: \(error.reason)"))
        }
        let keyReference: [UInt8] = offer.keyId.map { [0x84, 0x01, UInt8(truncatingIfNeeded: $0)] } ?? []
        if id.usesKeyAgreementTemplate {
            // Version 1 (3DES): MSE:Set KAT carries the ephemeral key itself.
            let kat = BERTLV.encode(tag: 0x91, value: agreement.ephemeralPublicKey) + keyReference
            let mse = try await session.manageSecurityEnvironment(.chipAuthenticationKeyAgreement, kat, .secure)
            guard mse.status == .ok else {
                return result(agreement: agreement, VerificationOutcome(status: .invalid,
                    detail: "the chip failed Chip Authentication (MSE:Set KAT: \(mse.statusWord.meaning))"))
            }
        } else {
            let mse = try await session.manageSecurityEnvironment(.chipAuthentication, CardSession.mechanismReference(id.oid) + keyReference, .secure)
            guard mse.status == .ok else {
                return result(agreement: agreement, VerificationOutcome(status: .invalid,
                    detail: "the chip refused Chip Authentication (\(mse.statusWord.meaning))"))
            }
            let answer = try await session.generalAuthenticate(BERTLV.encode(tag: 0x80, value: agreement.ephemeralPublicKey), last: true,
                                                               step: "key agreement", .secure)
            if case .refused(let refusal) = answer {
                return result(agreement: agreement, VerificationOutcome(status: .invalid,
                    detail: "the chip failed Chip Authentication (\(refusal.statusWord.meaning))"))
            }
        }
        let keys = PACE.sessionKeys(sharedSecret: agreement.sharedSecret, type: id.keyType)
        session.secureMessaging = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: id.keyType)
        session.chipAuthentication.pending = true
        let implied = offer.impliedByKeyOnly ? ", implied by a \(source) without ChipAuthenticationInfo" : ""
        return result(agreement: agreement, VerificationOutcome(status: .valid,
            detail: "the chip proved it holds the \(source) key (\(id), \(offer.publicKey)\(implied))"))
    }

    private func result(agreement: (ephemeralPrivateKey: [UInt8], ephemeralPublicKey: [UInt8], sharedSecret: [UInt8])?,
                        _ outcome: VerificationOutcome) -> ChipAuthenticationResult {
        ChipAuthenticationResult(offer: offer, source: source, ephemeralPublicKey: agreement?.ephemeralPublicKey ?? [],
                                 ephemeralPrivateKey: agreement?.ephemeralPrivateKey ?? [], outcome: outcome)
    }
}
