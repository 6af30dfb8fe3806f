import MRTDCrypto
import SmartCardCore

extension PassportReader {
    /// INTERNAL AUTHENTICATE with a random challenge, checked against DG15.
    func performActiveAuthentication(_ result: inout PassportReadResult) async throws(MRTDError) {
        guard options.verifyActive else { return }
        guard let dg15 = result.dg15 else {
            // No DG15: `PassportReader.verify` says whether that is a chip without AA or one that
            // hides the DG15 its EF.SOD lists.
            return
        }
        let challenge = options.activeAuthenticationChallenge ?? secureRandomBytes(8)
        guard challenge.count == 8 else {
            throw MRTDError(.notSupported, "the Active Authentication challenge must be 8 bytes, not \(challenge.count)")
        }
        let command = CommandAPDU(ins: 0x88, p1: 0, p2: 0, data: challenge, ne: channel.extendedLength ? 65_536 : 256)
        let response = try await channel.secure(command)
        result.activeAuthenticationPerformed = true
        guard response.statusWord == .success, !response.data.isEmpty else {
            result.active = VerificationOutcome(status: .invalid,
                                                detail: "DG15 announces Active Authentication, but the chip refused INTERNAL AUTHENTICATE (\(response.statusWord.meaning)): it may be a copy")
            return
        }
        result.activeAuthenticationExchange = ActiveAuthenticationRecord(challenge: challenge, signature: response.data,
                                                                         challengeFromCaller: options.activeAuthenticationChallenge != nil)
        result.active = ActiveAuthentication.verify(publicKey: dg15.publicKey, challenge: challenge, signature: response.data,
                                                    ecdsaDigest: ActiveAuthentication.ecdsaDigest(in: result.dg14))
    }
}
