import MRTDCrypto
import SmartCardCore

/// The end of a read: the files parsed, Active Authentication, and everything the files prove
/// (`ReadVerification`, shared with saved dumps and backends' evidence).
extension ReadContext {
    /// The result so far: the files as read and parsed, access control, chip authentication.
    func assembleResult() -> PassportReadResult {
        var result = PassportReadResult(accessControl: accessControlName, files: files, absent: absent, com: com, sod: sod,
                                        parseErrors: parseErrors)
        if case .pace(let info) = opening {
            result.paceMapping = info.protocolID.mapping.rawValue
            result.paceProtocol = info.protocolID.description
        }
        result.accessControlNote = accessControlNote
        if let cardAccess { result.files[.cardAccess] = cardAccess }
        if let cardSecurity { result.files[.cardSecurity] = cardSecurity }
        ReadVerification.parse(into: &result)
        if chipOutcome?.status == .valid, session.chipAuthentication.refuted {
            // MSE and GENERAL AUTHENTICATE went through, but the chip could not go on with the keys.
            chipOutcome = VerificationOutcome(status: .invalid, detail: "the chip answered Chip Authentication but could not continue secure messaging with the agreed keys: it does not hold the \(chipKeySource ?? .dg14) chip key (it may be a copy)")
        }
        if let terminalOutcome { result.terminal = terminalOutcome }
        if let chipOutcome {
            result.chip = chipOutcome
            result.chipAuthenticationPerformed = true
            result.chipKeySource = (chipKeySource ?? .dg14).rawValue
        }
        return result
    }

    /// INTERNAL AUTHENTICATE with the caller's challenge (a backend's nonce) or a random one,
    /// checked against DG15. Without DG15, `ReadVerification` says whether that is a chip
    /// without AA or one hiding the DG15 its EF.SOD lists.
    func authenticateActively(dg15: DataGroup15?, dg14: SecurityInfos?) async throws(MRTDError) -> ActiveAuthenticationProtocol.Result? {
        guard options.verifyActive, let dg15 else { return nil }
        let challenge = options.activeAuthenticationChallenge ?? secureRandomBytes(8)
        return try await ActiveAuthenticationProtocol(dg15: dg15, dg14: dg14, challenge: challenge,
                                                      challengeFromCaller: options.activeAuthenticationChallenge != nil).run(on: session)
    }

    func verify(_ result: inout PassportReadResult) {
        ReadVerification.verify(&result, passive: options.verifyPassive, chip: options.verifyChip, active: options.verifyActive,
                                trustStore: options.trustStore)
    }
}
