import MRTDCrypto
import SmartCardCore

/// Active Authentication run on a card session (ICAO 9303-11 §6.1): INTERNAL AUTHENTICATE with
/// an 8-byte challenge, the chip's signature checked against the DG15 key (RSA with ISO/IEC
/// 9796-2, or ECDSA in the plain format of BSI TR-03111 with the hash DG14 names).
package struct ActiveAuthenticationProtocol {
    package let dg15: DataGroup15
    package let dg14: SecurityInfos?
    package let challenge: [UInt8]
    /// Whether the challenge was the caller's (a backend's nonce) rather than a random one.
    package let challengeFromCaller: Bool

    package init(dg15: DataGroup15, dg14: SecurityInfos?, challenge: [UInt8], challengeFromCaller: Bool) {
        self.dg15 = dg15
        self.dg14 = dg14
        self.challenge = challenge
        self.challengeFromCaller = challengeFromCaller
    }

    package struct Result: Sendable {
        package let outcome: VerificationOutcome
        package let exchange: ActiveAuthenticationRecord?
    }

    package func run(on session: CardSession) async throws(MRTDError) -> Result {
        guard challenge.count == 8 else {
            throw MRTDError(.notSupported, "the Active Authentication challenge must be 8 bytes, not \(challenge.count)")
        }
        session.traceContext.step = "AA"
        let answer = try await session.internalAuthenticate(challenge)
        guard answer.status == .ok, !answer.data.isEmpty else {
            return Result(outcome: VerificationOutcome(status: .invalid,
                detail: "DG15 announces Active Authentication, but the chip refused INTERNAL AUTHENTICATE (\(answer.statusWord.meaning)): it may be a copy"),
                exchange: nil)
        }
        let exchange = ActiveAuthenticationRecord(challenge: challenge, signature: answer.data, challengeFromCaller: challengeFromCaller)
        return Result(outcome: ActiveAuthentication.verify(publicKey: dg15.publicKey, challenge: challenge, signature: answer.data,
                                                           ecdsaDigest: ActiveAuthentication.ecdsaDigest(in: dg14)),
                      exchange: exchange)
    }
}
