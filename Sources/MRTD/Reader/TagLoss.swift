import SmartCardCore

/// Tag loss: the document leaves the reader's field in the middle of a read (a hand moves, a
/// passport slides on the glass). With a `reconnect` closure the read waits for it and goes on
/// where it stopped; the rules are in `PassportReader`'s notes.
extension PassportReader {
    /// What a journey can show while the read waits for the document to come back.
    public static let cardRemovedMessage = "The document moved away from the reader. Put it back on the reader to continue reading."

    /// Runs `body`; when the card leaves the field after access control, waits for it, opens the
    /// chip again, re-selects `file` (when given) and runs `body` again. Before access control, and
    /// while a recovery is itself under way, tag loss goes to the caller.
    func surviveTagLoss<T>(reselecting file: LDSFile? = nil, _ body: () async throws(MRTDError) -> T) async throws(MRTDError) -> T {
        while true {
            do {
                return try await body()
            } catch where isTagLoss(error) && reconnect != nil && accessEstablished && !recovering {
                try await recoverFromTagLoss(error, reselecting: file)
            }
        }
    }

    /// Whether `error` means the card left: `cardRemoved`, or a transport failure right after the
    /// card came back (a back end that polls may hand out a connection before the card is steady).
    func isTagLoss(_ error: MRTDError) -> Bool {
        error.code == .cardRemoved || (error.code == .communicationFailure && linkUnsettled)
    }

    /// The chip was opened again after the card came back: the reconnection counts.
    func settleAfterTagLoss() {
        guard linkUnsettled else { return }
        linkUnsettled = false
        reconnections += 1
    }

    /// Reports `waitingForCard`, lets go of the lost connection and takes the one `reconnect`
    /// gives once the card is back. The chip starts closed: no secure messaging.
    func awaitCardAfterTagLoss(_ loss: MRTDError) async throws(MRTDError) {
        guard let reconnect else { throw loss }
        reconnectionAttempts += 1
        guard reconnectionAttempts <= Self.maxReconnections else {
            throw MRTDError(.cardRemoved, "the card left the reader \(reconnectionAttempts) times during reading; hold the document still on the reader")
        }
        if linkUnsettled {
            // Back but gone again before the chip was open: give the card (and the back end) a moment.
            do {
                try await Task.sleep(for: .milliseconds(250))
            } catch {
                throw MRTDError(.cancelled, "reading was cancelled")
            }
        } else {
            report(.waitingForCard, percent: lastPercent, reason: ReadProgress.cardRemovedReason, message: Self.cardRemovedMessage)
            options.trace?.note("cardRemoved", ["reason": loss.reason])
        }
        channel.session = nil
        chipAuthenticated = false
        await channel.connection.disconnect()
        let connection: any CardConnection
        do {
            connection = try await reconnect()
        } catch let error as MRTDError {
            throw error
        } catch let error as SmartCardError {
            switch error.code {
            case .cancelled: throw MRTDError(.cancelled, "reading was cancelled")
            case .timeout: throw MRTDError(.cardRemoved, "the card was removed during reading and was not put back in time")
            default: throw MRTDError(.cardRemoved, "the card was removed during reading and could not be reached again: \(error.reason)")
            }
        } catch {
            if error is CancellationError || Task.isCancelled { throw MRTDError(.cancelled, "reading was cancelled") }
            throw MRTDError(.cardRemoved, "the card was removed during reading and could not be reached again: \(error)")
        }
        channel.connection = connection
        options.trace?.note("cardBack", ["reader": connection.readerName, "atr": APDUTrace.hex(connection.atr)])
        linkUnsettled = true
        report(.cardDetected, percent: lastPercent)
    }

    /// Gets the chip open again after tag loss (as often as it leaves again, within the limit)
    /// and re-selects `file`, so the caller can continue at its offset.
    func recoverFromTagLoss(_ loss: MRTDError, reselecting file: LDSFile?) async throws(MRTDError) {
        recovering = true
        defer { recovering = false }
        var loss = loss
        while true {
            try await awaitCardAfterTagLoss(loss)
            report(.authenticating, percent: lastPercent)
            do throws(MRTDError) {
                try await reopen()
                if let file {
                    let response = try await selectSecurely(.selectFile(file.fid))
                    guard response.statusWord == .success else {
                        throw MRTDError(.unexpectedStatus, "re-selecting \(file) after the card came back failed: \(response.statusWord.meaning)",
                                        statusWord: response.statusWord)
                    }
                }
                settleAfterTagLoss()
                report(.reading, file: file?.name, percent: lastPercent)
                return
            } catch where isTagLoss(error) {
                loss = error
            }
        }
    }

    /// Opens the chip that came back: the access control that opened it first (same PACE
    /// protocol, or BAC) and, when Chip Authentication had succeeded, Chip Authentication with the
    /// same key, so data read from here on comes from the chip that was authenticated.
    func reopen() async throws(MRTDError) {
        let repeated = completedChipAuthentication
        let camWasValid = pace?.protocolID.mapping == .chipAuthenticationMapping && chipOutcome?.status == .valid
        if let pace {
            let before = chipOutcome
            try await performPACE(pace)
            if pace.protocolID.mapping == .chipAuthenticationMapping {
                // PACE-CAM proved the chip again inside PACE.
                let now = chipOutcome
                chipOutcome = before
                if camWasValid, now?.status != .valid {
                    throw MRTDError(.differentChip, "the document that came back is not the chip that left: PACE-CAM \(now?.detail ?? "did not verify")")
                }
            }
            if let repeated, repeated.source == "EF.CardSecurity" {
                try await repeatChipAuthentication(repeated)
            } else {
                try await selectApplicationSecurely()
            }
        } else {
            try await selectApplication()
            try await basicAccessControl()
        }
        if let repeated, repeated.source == "DG14" { try await repeatChipAuthentication(repeated) }
    }

    /// Chip Authentication with the key the chip proved before it left, confirmed at once by a
    /// protected SELECT of the application under the new keys (a chip without the key passes MSE
    /// and GENERAL AUTHENTICATE; it fails here).
    private func repeatChipAuthentication(_ done: (offer: ChipAuthentication.Offer, source: String)) async throws(MRTDError) {
        let outcome = try await performChipAuthentication(done.offer, source: done.source)
        guard outcome.status == .valid else {
            throw MRTDError(.differentChip, "the document that came back is not the chip that left: it does not prove the \(done.source) key (\(outcome.detail))")
        }
        do {
            try await selectApplicationSecurely()
        } catch where error.code == .secureMessagingDropped || error.code == .secureMessagingFailure {
            throw MRTDError(.differentChip, "the document that came back is not the chip that left: it cannot use the keys of the \(done.source) chip key")
        }
    }
}
