import SmartCardCore

/// Opening the chip: EF.CardAccess on the MF, then PACE with the best offer this reader runs, or
/// BAC where PACE is not offered (or fails for a reason BAC gets around) and the key allows it —
/// with the fallbacks field chips need, and the same opening again after a dropped session or
/// after the card came back.
extension ReadContext {
    /// Opens the chip (ICAO 9303-11 §4.2: PACE first when EF.CardAccess offers it).
    func openChip() async throws(MRTDError) {
        var offers = options.accessControl == .bacOnly ? [] : try await readCardAccess(bySelect: false)
        if offers.isEmpty, cardAccessNotFound, !key.opensWithBAC || options.accessControl == .paceOnly {
            // Only PACE can open this chip: a 6A82 to the read by short EF identifier may mean the
            // chip does not support them. Look for EF.CardAccess by file identifier.
            offers = try await readCardAccess(bySelect: true)
        }
        if try await openWithPACE(offers) { return }
        if options.accessControl == .paceOnly {
            throw MRTDError(.notSupported, offers.isEmpty ? "the chip does not offer PACE" + (cardAccessNote.map { " (\($0))" } ?? "")
                                                          : (accessControlNote ?? "PACE is not possible"))
        }
        guard key.opensWithBAC else {
            throw MRTDError(.notSupported, "a CAN needs PACE, and \(offers.isEmpty ? "the chip does not offer PACE" : (accessControlNote ?? "PACE was not possible"))")
        }
        do {
            try await openWithBAC()
        } catch where error.code == .notSupported && cardAccessNotFound && options.accessControl != .bacOnly {
            // A chip that opens with PACE only, whose EF.CardAccess was not found by short EF
            // identifier: it may not support them. Look for it by file identifier.
            let again = try await readCardAccess(bySelect: true)
            guard try await openWithPACE(again) else { throw error }
            return
        }
        if accessControlNote == nil, let cardAccessNote { accessControlNote = cardAccessNote + "; used BAC" }
    }

    /// Reads EF.CardAccess (plain, on the MF) and returns its PACE offers; empty when there is
    /// none. The first read doubles as the extended-length probe; 6A82 by short EF identifier (the
    /// normal answer of a BAC-only chip) costs nothing more (`cardAccessNotFound` lets a chip that
    /// then refuses BAC be looked at again by file identifier).
    func readCardAccess(bySelect: Bool) async throws(MRTDError) -> [PACEInfo] {
        cardAccessNotFound = false
        session.traceContext.step = nil
        let request = CardSession.FileRequest(.cardAccess, .plain, bySelect: bySelect, notFoundIsFinal: true, isFirstContact: !bySelect)
        let outcome: FileOutcome
        do {
            outcome = try await session.readFile(request, recovery: nil)
        } catch where error.code == .unexpectedStatus || error.code == .malformedData {
            cardAccessNote = "EF.CardAccess could not be read (\(error.statusWord?.meaning ?? error.reason))"
            return []
        }
        switch outcome {
        case .absent(.notPresent):
            cardAccessNotFound = true
            return []
        case .absent(let why):
            cardAccessNote = "EF.CardAccess is on the chip but could not be read (\(why))"
            return []
        case .content(let bytes):
            guard !bytes.isEmpty else { return [] }
            cardAccess = bytes
            guard let infos = try? SecurityInfos(bytes: bytes) else {
                cardAccessNote = "EF.CardAccess could not be parsed"
                return []
            }
            return PACEInfo.all(in: infos)
        }
    }

    /// Opens the chip with the best PACE offer this reader runs. `false` (with a note why) when
    /// there is none, or PACE failed for a reason BAC may get around.
    func openWithPACE(_ offers: [PACEInfo]) async throws(MRTDError) -> Bool {
        let usable = offers.filter(PACEProtocol.canPerform).sorted { $0.preference > $1.preference }
        guard let best = usable.first else {
            if !offers.isEmpty {
                accessControlNote = "the chip offers \(offers.map(\.description).joined(separator: ", ")), which this reader does not perform; used BAC"
            }
            return false
        }
        do {
            try await runPACE(best, firstTime: true)
            try await session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
            opening = .pace(best)
            return true
        } catch {
            // A wrong key, a departed card or a cancellation ends here; PACE broken for another
            // reason (an unsupported step, a chip quirk) falls back to BAC, and the result says so.
            // A protected answer whose MAC does not verify is never got around: it may be an attack.
            let fatal: Set<MRTDError.Code> = [.accessDenied, .cardRemoved, .cancelled, .communicationFailure, .secureMessagingFailure, .timeout]
            if fatal.contains(error.code) || options.accessControl == .paceOnly { throw error }
            accessControlNote = "PACE (\(best.protocolID)) failed: \(error.reason); used BAC"
            return false
        }
    }

    /// PACE with `info`. The first time, EF.CardSecurity is read while the MF is still current
    /// when the chip keeps its chip key there: for PACE-CAM (checked at once), or when EF.CardAccess
    /// announces Chip Authentication (run by the chip-authentication step).
    func runPACE(_ info: PACEInfo, firstTime: Bool) async throws(MRTDError) {
        let result = try await PACEProtocol(info: info, key: key).run(on: session)
        pace = result
        guard firstTime else { return }
        let needsCardSecurity = result.chipAuthenticationMapping != nil || (options.verifyChip && cardAccessOffersChipAuthentication)
        if needsCardSecurity, cardSecurity == nil {
            if case .content(let bytes) = try await readFile(.cardSecurity, index: 0, of: 4) { cardSecurity = bytes }
        }
        if let proof = result.chipAuthenticationMapping {
            mappingOutcome = proof.verify(cardSecurity: cardSecurity)
        }
    }

    /// SELECT of the eMRTD application and BAC.
    func openWithBAC() async throws(MRTDError) {
        try await session.selectOrFail(.application(CardSession.eMRTDApplication), .plain)
        try await BasicAccessControl(key: key).run(on: session)
        opening = .bac
    }

    /// Whether EF.CardAccess carries a ChipAuthenticationInfo (the key is then in EF.CardSecurity).
    var cardAccessOffersChipAuthentication: Bool {
        guard let cardAccess, let infos = try? SecurityInfos(bytes: cardAccess) else { return false }
        return infos.entries.contains { ChipAuthentication.ProtocolID(oid: $0.oid) != nil }
    }

    /// A chip opened with BAC because EF.CardAccess answered 6A82 to the read by short EF
    /// identifier, which turned out not to be supported (learnt from the first file): EF.CardAccess
    /// may be there after all. Looked for by file identifier, once; when it offers PACE, the chip is
    /// opened again with PACE (the stronger protocol, and what the signed files promise). Costs
    /// nothing on chips with short-EF-identifier support.
    func lookAgainForPACE() async throws(MRTDError) {
        guard case .bac = opening, cardAccessNotFound || lookingAgainForPACE, session.limits.shortFileIdentifiers == false,
              options.accessControl == .automatic, !lookedAgainForPACE else { return }
        // Marked done only at the end: the card leaving half-way makes it run again once back.
        lookingAgainForPACE = true
        let offers = try await readCardAccess(bySelect: true)
        // The plain SELECTs ended the BAC session: PACE, or BAC again.
        if try await openWithPACE(offers) {
            accessControlNote = "EF.CardAccess was found by file identifier after BAC (the chip reads no short EF identifiers); re-opened with PACE"
        } else {
            try await openWithBAC()
        }
        lookedAgainForPACE = true
        lookingAgainForPACE = false
    }

    // MARK: Opening again

    /// A new session after the chip dropped secure messaging: the access control that opened it.
    func reauthenticate() async throws(MRTDError) {
        reauthentications += 1
        guard reauthentications <= 24 else { throw MRTDError(.communicationFailure, "the chip keeps dropping secure messaging") }
        switch opening {
        case .pace(let info):
            try await runPACE(info, firstTime: false)
            try await session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
        case .bac, nil:
            try await openWithBAC()
        }
    }

    /// The chip that came back after tag loss, opened again: the same access control and, when
    /// Chip Authentication had succeeded, Chip Authentication with the same key, so data read from
    /// here on comes from the chip that was authenticated. A chip that cannot prove the key (or,
    /// for PACE-CAM, the same mapping) is `differentChip`. Terminal Authentication that had
    /// succeeded is done again, for DG3/DG4 not read yet.
    func reopen() async throws(MRTDError) {
        let repeated = chipAuthentication
        switch opening {
        case .pace(let info):
            try await runPACE(info, firstTime: false)
            if let proof = pace?.chipAuthenticationMapping, mappingOutcome?.status == .valid {
                let now = proof.verify(cardSecurity: cardSecurity)
                guard now.status == .valid else {
                    throw MRTDError(.differentChip, "the document that came back is not the chip that left: PACE-CAM \(now.detail)")
                }
            }
            if let repeated, repeated.source == .cardSecurity {
                try await repeatChipAuthentication(repeated)
            } else {
                try await session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
            }
        case .bac, nil:
            try await openWithBAC()
        }
        if let repeated, repeated.source == .dg14 { try await repeatChipAuthentication(repeated) }
        try await repeatTerminalAuthentication()
    }

    /// Chip Authentication with the key the chip proved before it left, confirmed at once by a
    /// protected SELECT of the application under the new keys (a chip without the key passes MSE
    /// and GENERAL AUTHENTICATE; it fails here).
    private func repeatChipAuthentication(_ done: ChipAuthenticationResult) async throws(MRTDError) {
        let again = try await ChipAuthenticationProtocol(offer: done.offer, source: done.source).run(on: session)
        guard again.outcome.status == .valid else {
            throw MRTDError(.differentChip, "the document that came back is not the chip that left: it does not prove the \(done.source) key (\(again.outcome.detail))")
        }
        chipAuthentication = again
        do {
            try await session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
        } catch where error.code == .secureMessagingDropped || error.code == .secureMessagingFailure {
            throw MRTDError(.differentChip, "the document that came back is not the chip that left: it cannot use the keys of the \(done.source) chip key")
        }
    }
}
