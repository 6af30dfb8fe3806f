import MRTDCrypto
import SmartCardCore

/// Basic Access Control run on a card session (ICAO 9303-11 §4.3): GET CHALLENGE, EXTERNAL
/// AUTHENTICATE with E_IFD ‖ M_IFD, the chip's answer checked, 3DES secure messaging with the
/// session keys from K.IFD ⊕ K.IC. Needs the MRZ key; the eMRTD application is selected first by
/// the caller.
package struct BasicAccessControl {
    package let key: AccessKey

    package init(key: AccessKey) {
        self.key = key
    }

    /// Runs BAC and leaves the session under its secure messaging. When the chip's extended-length
    /// support is not known yet, GET CHALLENGE asks with an extended Le: the probe costs nothing
    /// on a chip that takes it and one APDU on a chip that does not.
    package func run(on session: CardSession) async throws(MRTDError) {
        guard let seed = key.bacKeySeed else { throw MRTDError(.notSupported, "BAC needs the MRZ key, not a CAN") }
        let keys = BAC.Keys(keySeed: seed)
        session.secureMessaging = nil
        session.traceContext.step = "BAC"
        var challenge: CardAnswer
        if session.limits.extendedLength == nil, session.limits.transportCarriesExtendedLength {
            challenge = try await session.getChallenge(forceExtended: true, .plain)
            if challenge.status == .ok, challenge.data.count == 8 {
                session.limits.extendedLength = true
            } else {
                session.limits.extendedLength = false
                challenge = try await session.getChallenge(.plain)
            }
        } else {
            challenge = try await session.getChallenge(.plain)
        }
        guard challenge.status == .ok, challenge.data.count == 8 else {
            switch challenge.status {
            case .protected, .unsupported:
                throw MRTDError(.notSupported, "the chip refuses BAC (it opens with PACE only)", statusWord: challenge.statusWord)
            default:
                throw MRTDError(.unexpectedStatus, "GET CHALLENGE failed: \(challenge.statusWord.meaning)", statusWord: challenge.statusWord)
            }
        }
        let rndIFD = secureRandomBytes(8)
        let kIFD = secureRandomBytes(16)
        let data: [UInt8]
        do {
            data = try BAC.authenticationData(keys: keys, rndIFD: rndIFD, rndIC: challenge.data, kIFD: kIFD)
        } catch {
            throw MRTDError(.cryptoFailure, "BAC: \(error.reason)")
        }
        let answer = try await session.externalAuthenticate(data, ne: 40, .plain)
        guard answer.status == .ok else {
            throw MRTDError(.accessDenied, "the chip refused the access key (BAC): \(answer.statusWord.meaning)", statusWord: answer.statusWord)
        }
        let r = try BAC.verifyChipResponse(keys: keys, response: answer.data, rndIFD: rndIFD, rndIC: challenge.data)
        session.secureMessaging = BAC.session(kIFD: kIFD, kIC: Array(r[16..<32]), rndIC: challenge.data, rndIFD: rndIFD)
    }
}
