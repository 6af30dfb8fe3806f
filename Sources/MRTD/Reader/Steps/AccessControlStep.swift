import SmartCardCore

/// Opening the chip: PACE with the best offer EF.CardAccess (`CardAccessStep`) makes that this
/// reader runs, or BAC where PACE is not offered (or fails for a reason BAC gets around) and the key allows it —
/// with the fallbacks field chips need. The same step runs a second time (`lookingAgainForPACE`)
/// after the security objects when a chip opened with BAC turned out to read no short EF
/// identifiers: its EF.CardAccess may be there after all. Restored after a dropped session or
/// after the card came back (`SessionStep`).
struct AccessControlStep: SessionStep {
    /// The first opening, or the second look for PACE.
    let lookingAgainForPACE: Bool

    init(lookingAgainForPACE: Bool = false) {
        self.lookingAgainForPACE = lookingAgainForPACE
    }

    struct Output {
        enum Opening {
            case bac
            case pace(PACEInfo)
        }
        var opening: Opening
        /// What PACE established (its keys' identifiers for Terminal Authentication).
        var pace: PACEResult?
        /// Why PACE was not used although the chip offers it, or how it came to be (reported, never silent).
        var note: String?
        /// EF.CardAccess answered 6A82 to the read by short EF identifier.
        var cardAccessNotFound: Bool
        /// PACE-CAM's outcome when the chip was first opened (a chip that comes back must match it).
        var mapping: VerificationOutcome?

        /// `PACE` or `BAC`.
        var name: String {
            if case .pace = opening { return "PACE" }
            return "BAC"
        }
    }

    var name: String { "access control" }
    var phase: ReadProgress.Phase? { lookingAgainForPACE ? nil : .authenticating }

    func isNeeded(_ scope: StepScope) -> Bool {
        guard lookingAgainForPACE else { return true }
        // A chip opened with BAC because EF.CardAccess answered 6A82 to the read by short EF
        // identifier, which turned out not to be supported (learnt from the files since). Costs
        // nothing on chips with short-EF-identifier support.
        guard let first = scope.results[AccessControlStep.self], case .bac = first.opening else { return false }
        return first.cardAccessNotFound && scope.session.limits.shortFileIdentifiers == false && scope.options.accessControl == .automatic
    }

    func plannedBytes(_ scope: StepScope) -> Int {
        // Four GENERAL AUTHENTICATE answers; BAC's two answers are less.
        lookingAgainForPACE ? 0 : 256
    }

    /// What the opening learnt on its way.
    private struct Attempt {
        var cardAccessNotFound = false
        var cardAccessNote: String?
        var note: String?
        var pace: PACEResult?
        var mapping: VerificationOutcome?

        func output(_ opening: Output.Opening) -> Output {
            var pace: PACEResult?
            if case .pace = opening { pace = self.pace }
            return Output(opening: opening, pace: pace, note: note, cardAccessNotFound: cardAccessNotFound, mapping: mapping)
        }
    }

    func run(_ scope: StepScope) async throws(MRTDError) -> Output {
        var attempt = Attempt()
        if lookingAgainForPACE, let first = scope.results[AccessControlStep.self] {
            // Looked for by file identifier, once; when it offers PACE, the chip is opened again
            // with PACE (the stronger protocol, and what the signed files promise).
            attempt.note = first.note
            attempt.mapping = first.mapping
            let offers = try await readCardAccess(bySelect: true, scope, &attempt)
            // The plain SELECTs ended the BAC session: PACE, or BAC again.
            if let info = try await openWithPACE(offers, scope, &attempt) {
                attempt.note = "EF.CardAccess was found by file identifier after BAC (the chip reads no short EF identifiers); re-opened with PACE"
                return attempt.output(.pace(info))
            }
            try await openWithBAC(scope)
            return attempt.output(.bac)
        }
        let opening = try await open(scope, &attempt)
        return attempt.output(opening)
    }

    /// Opens the chip (ICAO 9303-11 §4.2: PACE first when EF.CardAccess offers it).
    private func open(_ scope: StepScope, _ attempt: inout Attempt) async throws(MRTDError) -> Output.Opening {
        let options = scope.options
        let key = scope.key
        let cardAccess = scope.results[CardAccessStep.self]
        var offers = cardAccess?.offers ?? []
        attempt.cardAccessNotFound = cardAccess?.notFound ?? false
        attempt.cardAccessNote = cardAccess?.note
        if offers.isEmpty, attempt.cardAccessNotFound, !key.opensWithBAC || options.accessControl == .paceOnly {
            // Only PACE can open this chip: a 6A82 to the read by short EF identifier may mean the
            // chip does not support them. Look for EF.CardAccess by file identifier.
            offers = try await readCardAccess(bySelect: true, scope, &attempt)
        }
        if let info = try await openWithPACE(offers, scope, &attempt) { return .pace(info) }
        if options.accessControl == .paceOnly {
            throw MRTDError(.notSupported, offers.isEmpty ? "the chip does not offer PACE" + (attempt.cardAccessNote.map { " (\($0))" } ?? "")
                                                          : (attempt.note ?? "PACE is not possible"))
        }
        guard key.opensWithBAC else {
            throw MRTDError(.notSupported, "a CAN needs PACE, and \(offers.isEmpty ? "the chip does not offer PACE" : (attempt.note ?? "PACE was not possible"))")
        }
        do {
            try await openWithBAC(scope)
        } catch where error.code == .notSupported && attempt.cardAccessNotFound && options.accessControl != .bacOnly {
            // A chip that opens with PACE only, whose EF.CardAccess was not found by short EF
            // identifier: it may not support them. Look for it by file identifier.
            let again = try await readCardAccess(bySelect: true, scope, &attempt)
            guard let info = try await openWithPACE(again, scope, &attempt) else { throw error }
            return .pace(info)
        }
        if attempt.note == nil, let cardAccessNote = attempt.cardAccessNote { attempt.note = cardAccessNote + "; used BAC" }
        return .bac
    }

    /// EF.CardAccess again, by file identifier (`CardAccessStep.read`), its findings kept.
    private func readCardAccess(bySelect: Bool, _ scope: StepScope, _ attempt: inout Attempt) async throws(MRTDError) -> [PACEInfo] {
        let found = try await CardAccessStep.read(bySelect: bySelect, scope)
        attempt.cardAccessNotFound = found.notFound
        if let note = found.note { attempt.cardAccessNote = note }
        return found.offers
    }

    /// Opens the chip with the best PACE offer this reader runs. `nil` (with a note why) when
    /// there is none, or PACE failed for a reason BAC may get around.
    private func openWithPACE(_ offers: [PACEInfo], _ scope: StepScope, _ attempt: inout Attempt) async throws(MRTDError) -> PACEInfo? {
        let usable = offers.filter(PACEProtocol.canPerform).sorted { $0.preference > $1.preference }
        guard let best = usable.first else {
            if !offers.isEmpty {
                attempt.note = "the chip offers \(offers.map(\.description).joined(separator: ", ")), which this reader does not perform; used BAC"
            }
            return nil
        }
        do {
            try await runPACE(best, scope, &attempt)
            try await scope.session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
            return best
        } catch {
            // A wrong key, a departed card or a cancellation ends here; PACE broken for another
            // reason (an unsupported step, a chip quirk) falls back to BAC, and the result says so.
            // A protected answer whose MAC does not verify is never got around: it may be an attack.
            let fatal: Set<MRTDError.Code> = [.accessDenied, .cardRemoved, .cancelled, .communicationFailure, .secureMessagingFailure, .timeout]
            if fatal.contains(error.code) || scope.options.accessControl == .paceOnly { throw error }
            attempt.note = "PACE (\(best.protocolID)) failed: \(error.reason); used BAC"
            return nil
        }
    }

    /// PACE with `info`. EF.CardSecurity is read while the MF is still current when the chip keeps
    /// its chip key there: for PACE-CAM (checked at once), or when EF.CardAccess announces Chip
    /// Authentication (run by `ChipAuthenticationStep`).
    private func runPACE(_ info: PACEInfo, _ scope: StepScope, _ attempt: inout Attempt) async throws(MRTDError) {
        let result = try await PACEProtocol(info: info, key: scope.key).run(on: scope.session)
        attempt.pace = result
        let needsCardSecurity = result.chipAuthenticationMapping != nil || (scope.options.verifyChip && scope.files.cardAccessOffersChipAuthentication)
        if needsCardSecurity {
            _ = try await scope.files.read(CardSession.FileRequest(.cardSecurity, .secure), on: scope.session, recovery: scope.recovery,
                                           meter: scope.meter, reportAbsence: false)
        }
        if let proof = result.chipAuthenticationMapping {
            attempt.mapping = proof.verify(cardSecurity: scope.files[.cardSecurity])
        }
    }

    /// SELECT of the eMRTD application and BAC.
    private func openWithBAC(_ scope: StepScope) async throws(MRTDError) {
        try await scope.session.selectOrFail(.application(CardSession.eMRTDApplication), .plain)
        try await BasicAccessControl(key: scope.key).run(on: scope.session)
    }

    /// The same opening on a new session: after a dropped session, or on the chip that came back
    /// after tag loss — which, when PACE-CAM had proved the chip, must prove the same mapping.
    func restore(_ done: Output, after loss: SessionLoss, _ scope: StepScope) async throws(MRTDError) -> Output {
        switch done.opening {
        case .pace(let info):
            let pace = try await PACEProtocol(info: info, key: scope.key).run(on: scope.session)
            if loss == .cardReturned, let proof = pace.chipAuthenticationMapping, done.mapping?.status == .valid {
                let now = proof.verify(cardSecurity: scope.files[.cardSecurity])
                guard now.status == .valid else {
                    throw MRTDError(.differentChip, "the document that came back is not the chip that left: PACE-CAM \(now.detail)")
                }
            }
            try await scope.session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
            var again = done
            again.pace = pace
            return again
        case .bac:
            try await openWithBAC(scope)
            return done
        }
    }
}

extension FileShelf {
    /// Whether EF.CardAccess carries a ChipAuthenticationInfo (the key is then in EF.CardSecurity).
    var cardAccessOffersChipAuthentication: Bool {
        guard let cardAccess = self[.cardAccess], let infos = try? SecurityInfos(bytes: cardAccess) else { return false }
        return infos.entries.contains { ChipAuthentication.ProtocolID(oid: $0.oid) != nil }
    }
}
