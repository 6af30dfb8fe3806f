import SmartCardCore

/// Chip Authentication (ICAO 9303-11 §6.2) with the key the chip publishes: PACE-CAM already
/// proved it; an ID card's key is in EF.CardSecurity (read when the chip was opened); a passport's
/// in DG14 (read now). A failed Chip Authentication leaves no usable session: the chip is opened
/// again. Restored on a chip that came back after tag loss: it must prove the same key.
struct ChipAuthenticationStep: SessionStep {
    struct Output {
        /// The outcome (CA, or PACE-CAM); `nil` when not asked for or the chip offers none.
        var outcome: VerificationOutcome?
        /// Where the key the outcome rests on came from.
        var keySource: ChipKeySource?
        /// The Chip Authentication that succeeded (its keys are the session's).
        var established: ChipAuthenticationResult?
    }

    var name: String { "chip authentication" }
    var phase: ReadProgress.Phase? { nil }

    func plannedBytes(_ scope: StepScope) -> Int {
        guard scope.options.verifyChip else { return 0 }
        let dg14 = LDSFile.dataGroup(14)
        return 64 + (scope.results.listedDataGroups.contains(14) && !scope.files.isSettled(dg14) ? dg14.typicalSize : 0)
    }

    func run(_ scope: StepScope) async throws(MRTDError) -> Output {
        guard scope.options.verifyChip else { return Output() }
        if let mapping = scope.results[AccessControlStep.self]?.mapping {
            return Output(outcome: mapping, keySource: .cardSecurity)
        }
        switch try await scope.chipKeyLookup() {
        case .offer(let offer, let source):
            let result = try await ChipAuthenticationProtocol(offer: offer, source: source).run(on: scope.session)
            guard result.outcome.status == .valid else {
                try await scope.reestablishSecureMessaging()
                return Output(outcome: result.outcome, keySource: source)
            }
            return Output(outcome: result.outcome, keySource: source, established: result)
        case .unusable(let outcome, let source):
            return Output(outcome: outcome, keySource: source)
        case .none:
            return Output()
        }
    }

    func restore(_ done: Output, after loss: SessionLoss, _ scope: StepScope) async throws(MRTDError) -> Output {
        guard loss == .cardReturned, let established = done.established else { return done }
        var again = done
        again.established = try await Self.repeatAuthentication(established, scope)
        return again
    }

    /// Chip Authentication with the key the chip proved before it left, confirmed at once by a
    /// protected SELECT of the application under the new keys (a chip without the key passes MSE
    /// and GENERAL AUTHENTICATE; it fails here).
    static func repeatAuthentication(_ done: ChipAuthenticationResult, _ scope: StepScope) async throws(MRTDError) -> ChipAuthenticationResult {
        let again = try await ChipAuthenticationProtocol(offer: done.offer, source: done.source).run(on: scope.session)
        guard again.outcome.status == .valid else {
            throw MRTDError(.differentChip, "the document that came back is not the chip that left: it does not prove the \(done.source) key (\(again.outcome.detail))")
        }
        do {
            try await scope.session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
        } catch where error.code == .secureMessagingDropped || error.code == .secureMessagingFailure {
            throw MRTDError(.differentChip, "the document that came back is not the chip that left: it cannot use the keys of the \(done.source) chip key")
        }
        return again
    }
}

/// Where the chip's key for Chip Authentication is, or why it cannot be used.
enum ChipKeyLookup {
    case offer(ChipAuthentication.Offer, ChipKeySource)
    /// The file that should publish it is broken or offers nothing usable: the outcome to report.
    case unusable(VerificationOutcome, ChipKeySource)
    /// The chip offers no Chip Authentication.
    case none
}

extension StepScope {
    /// The chip's Chip Authentication key: an ID card's in EF.CardSecurity (read when the chip was
    /// opened), a passport's in DG14 (read now, once).
    func chipKeyLookup() async throws(MRTDError) -> ChipKeyLookup {
        if files.cardAccessOffersChipAuthentication, let security = files[.cardSecurity] {
            guard let infos = ChipAuthentication.cardSecurityInfos(security) else {
                return .unusable(VerificationOutcome(status: .invalid, detail: "EF.CardSecurity is not a signed security object"), .cardSecurity)
            }
            let (offer, refusals) = ChipAuthentication.examine(infos)
            if let offer { return .offer(offer, .cardSecurity) }
            if !refusals.isEmpty {
                return .unusable(VerificationOutcome(status: .invalid, detail: "EF.CardSecurity's chip key is refused: \(refusals.joined(separator: "; "))"), .cardSecurity)
            }
        }
        guard results.listedDataGroups.contains(14), case .content(let bytes) = try await read(.dataGroup(14)) else { return .none }
        guard let infos = try? SecurityInfos(bytes: bytes) else {
            return .unusable(VerificationOutcome(status: .invalid, detail: "DG14 cannot be parsed"), .dg14)
        }
        let (offer, refusals) = ChipAuthentication.examine(infos)
        guard let offer else {
            if !refusals.isEmpty {
                return .unusable(VerificationOutcome(status: .invalid, detail: "DG14's chip key is refused: \(refusals.joined(separator: "; "))"), .dg14)
            }
            return .unusable(VerificationOutcome(status: .notSupported, detail: "DG14 offers no Chip Authentication with a key this reader can use"), .dg14)
        }
        return .offer(offer, .dg14)
    }
}
