import MRTDCrypto
import SmartCardCore

/// INTERNAL AUTHENTICATE with the caller's challenge (a backend's nonce) or a random one, checked
/// against DG15. Without DG15, `ReadVerification` says whether that is a chip without Active
/// Authentication or one hiding the DG15 its EF.SOD lists.
struct ActiveAuthenticationStep: ReadStep {
    typealias Output = ActiveAuthenticationProtocol.Result?

    var name: String { "active authentication" }
    var phase: ReadProgress.Phase? { .verifying }

    func plannedBytes(_ scope: StepScope) -> Int { scope.options.verifyActive ? 256 : 0 }

    func run(_ scope: StepScope) async throws(MRTDError) -> Output {
        guard scope.options.verifyActive,
              let dg15 = scope.files.parsed(.dataGroup(15), { bytes throws(MRTDError) in try DataGroup15(bytes: bytes) }) else { return nil }
        let dg14 = scope.files.parsed(.dataGroup(14)) { bytes throws(MRTDError) in try SecurityInfos(bytes: bytes) }
        let challenge = scope.options.activeAuthenticationChallenge ?? secureRandomBytes(8)
        return try await ActiveAuthenticationProtocol(dg15: dg15, dg14: dg14, challenge: challenge,
                                                      challengeFromCaller: scope.options.activeAuthenticationChallenge != nil).run(on: scope.session)
    }
}
