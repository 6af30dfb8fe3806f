import MRTDCrypto
import SmartCardCore

/// The end of a read: the files parsed, the outcomes of the steps before gathered, and everything
/// the files prove (`ReadVerification`, shared with saved dumps and backends' evidence). No APDU.
struct VerificationStep: ReadStep {
    var name: String { "verification" }
    var phase: ReadProgress.Phase? { .verifying }

    func plannedBytes(_ scope: StepScope) -> Int { 0 }

    func run(_ scope: StepScope) async throws(MRTDError) -> PassportReadResult {
        let access = scope.results[AccessControlStep.self]
        let objects = scope.results[SecurityObjectsStep.self]
        var result = PassportReadResult(accessControl: access?.name ?? "BAC", files: scope.files.contents, absent: scope.files.absent,
                                        com: objects?.com, sod: objects?.sod, parseErrors: scope.files.parseErrors)
        if case .pace(let info) = access?.opening {
            result.paceMapping = info.protocolID.mapping.rawValue
            result.paceProtocol = info.protocolID.description
        }
        result.accessControlNote = access?.note
        ReadVerification.parse(into: &result)
        if let chip = scope.results[ChipAuthenticationStep.self], var outcome = chip.outcome {
            if outcome.status == .valid, scope.session.chipAuthentication.refuted {
                // MSE and GENERAL AUTHENTICATE went through, but the chip could not go on with the keys.
                outcome = VerificationOutcome(status: .invalid, detail: "the chip answered Chip Authentication but could not continue secure messaging with the agreed keys: it does not hold the \(chip.keySource ?? .dg14) chip key (it may be a copy)")
            }
            result.chip = outcome
            result.chipAuthenticationPerformed = true
            result.chipKeySource = (chip.keySource ?? .dg14).rawValue
        }
        if let terminal = scope.results[TerminalAuthenticationStep.self] { result.terminal = terminal.outcome }
        if let active = scope.results[ActiveAuthenticationStep.self] ?? nil {
            result.activeAuthenticationPerformed = true
            result.active = active.outcome
            result.activeAuthenticationExchange = active.exchange
        }
        ReadVerification.verify(&result, passive: scope.options.verifyPassive, chip: scope.options.verifyChip,
                                active: scope.options.verifyActive, trustStore: scope.options.trustStore)
        return result
    }
}
