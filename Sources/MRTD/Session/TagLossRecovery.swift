import SmartCardCore

/// Tag loss: the document leaves the reader's field in the middle of a read (a hand moves, a
/// passport slides on the glass), or the link to a card that is still there fails. With a
/// `reconnect` closure the read waits for the card and goes on where it stopped: the session gets
/// the new connection, the session steps that had been established run again from their recorded
/// outputs (`SessionStep.restore`: the same access control, Chip Authentication with the same key,
/// Terminal Authentication), the file being read is selected again, and the read continues at its
/// offset. Before the chip is first open, the step that was running starts again. Bounded:
/// `maxReconnections` losses per read, `maxLinkFailures` of a link that fails with the card still
/// there, `maxReauthentications` dropped sessions. Without the closure, or when it gives up, the
/// read fails: never a half-read file.
final class TagLossRecovery: SessionRecovery {
    static let maxReconnections = 8
    static let maxLinkFailures = 2
    static let maxReauthentications = 24
    /// What a journey can show while the read waits for the document to come back.
    static let cardRemovedMessage = "The document moved away from the reader. Put it back on the reader to continue reading."

    /// Where the recovery is.
    private struct State {
        /// Whether access control has opened the chip (a loss after this re-opens it in place).
        var accessEstablished = false
        var recovering = false
        /// A new connection after tag loss, the chip not yet opened on it.
        var linkUnsettled = false
    }

    /// What the recovery has cost, for its bounds and the statistics.
    struct Counts {
        var attempts = 0
        var linkFailures = 0
        var reconnections = 0
        var reauthentications = 0
    }

    /// A session step that ran, and how to establish it again.
    private struct Established {
        let step: ObjectIdentifier
        let restore: (StepScope, SessionLoss) async throws(MRTDError) -> Void
    }

    private let environment: ReadEnvironment
    private let reconnect: PassportReader.Reconnect?
    private var established: [Established] = []
    private var state = State()
    private(set) var counts = Counts()

    init(environment: ReadEnvironment, reconnect: PassportReader.Reconnect?) {
        self.environment = environment
        self.reconnect = reconnect
    }

    private var scope: StepScope { StepScope(environment: environment, recovery: self) }

    /// A session step ended: it is established again, in this order, after a loss. A step that
    /// runs again (access control after a second look for PACE) replaces its earlier entry.
    func established<S: SessionStep>(_ step: S) {
        let ledger = environment.ledger
        let entry = Established(step: ObjectIdentifier(S.self)) { scope, loss throws(MRTDError) in
            guard let done = ledger[S.self] else { return }
            ledger.record(try await step.restore(done, after: loss, scope), of: S.self)
        }
        if let index = established.firstIndex(where: { $0.step == entry.step }) {
            established[index] = entry
        } else {
            established.append(entry)
        }
    }

    /// Access control has opened the chip: a loss from now on re-opens it in place.
    func chipOpened() {
        settle()
        state.accessEstablished = true
    }

    /// Whether `error` is the card leaving (or a link failure this read may get around).
    private func isLoss(_ error: MRTDError) -> Bool {
        switch error.code {
        case .cardRemoved: return true
        case .communicationFailure: return state.linkUnsettled || counts.linkFailures < Self.maxLinkFailures
        default: return false
        }
    }

    /// Runs `body`. Once the chip is open, a loss makes it open again and `body` run again; before
    /// that, `body` (the opening, or a file read before it) starts from the beginning.
    func surviving(_ body: () async throws(MRTDError) -> Void) async throws(MRTDError) {
        while true {
            do {
                try await body()
                return
            } catch where reconnect != nil && !state.recovering && isLoss(error) && !state.accessEstablished {
                // Gone before the chip was open: open it from the start once it is back.
                guard error.code == .cardRemoved || state.linkUnsettled else { throw error }
                try await awaitCard(after: error)
                environment.meter.report(.authenticating)
            } catch {
                guard try await recover(from: error, on: environment.session) else { throw error }
            }
        }
    }

    func reestablishSecureMessaging(on session: CardSession) async throws(MRTDError) {
        counts.reauthentications += 1
        guard counts.reauthentications <= Self.maxReauthentications else {
            throw MRTDError(.communicationFailure, "the chip keeps dropping secure messaging")
        }
        try await restore(after: .droppedSession)
    }

    func recover(from error: MRTDError, on session: CardSession) async throws(MRTDError) -> Bool {
        guard reconnect != nil, state.accessEstablished, !state.recovering, isLoss(error) else { return false }
        state.recovering = true
        defer { state.recovering = false }
        var loss = error
        while true {
            if loss.code == .communicationFailure, !state.linkUnsettled { counts.linkFailures += 1 }
            try await awaitCard(after: loss)
            environment.meter.report(.authenticating)
            do {
                try await restore(after: .cardReturned)
                settle()
                environment.meter.report(.reading, file: session.traceContext.file)
                return true
            } catch where isLoss(error) {
                loss = error
            }
        }
    }

    /// The established session steps again, in order.
    private func restore(after loss: SessionLoss) async throws(MRTDError) {
        let scope = scope
        for entry in established { try await entry.restore(scope, loss) }
    }

    /// The chip was opened again after the card came back: the reconnection counts.
    private func settle() {
        guard state.linkUnsettled else { return }
        state.linkUnsettled = false
        counts.reconnections += 1
    }

    /// Reports `waitingForCard`, lets go of the lost connection and takes the one `reconnect`
    /// gives once the card is back. The chip starts closed: no secure messaging.
    private func awaitCard(after loss: MRTDError) async throws(MRTDError) {
        guard let reconnect else { throw loss }
        counts.attempts += 1
        guard counts.attempts <= Self.maxReconnections else {
            if loss.code == .communicationFailure {
                throw MRTDError(.communicationFailure, "the link to the card kept failing during reading: \(loss.reason)")
            }
            throw MRTDError(.cardRemoved, "the card left the reader \(counts.attempts) times during reading; hold the document still on the reader")
        }
        if state.linkUnsettled {
            // Back but gone again before the chip was open: give the card (and the back end) a moment.
            do {
                try await Task.sleep(for: .milliseconds(250))
            } catch {
                throw MRTDError(.cancelled, "reading was cancelled")
            }
        } else {
            environment.meter.report(.waitingForCard, reason: ReadProgress.cardRemovedReason, message: Self.cardRemovedMessage)
            environment.options.trace?.note("cardRemoved", ["reason": loss.reason])
        }
        let session = environment.session
        session.secureMessaging = nil
        await session.connection.disconnect()
        let connection = try await waitForCard(reconnect, session: session)
        session.replace(connection: connection)
        environment.options.trace?.note("cardBack", ["reader": connection.readerName, "atr": APDUTrace.hex(connection.atr)])
        state.linkUnsettled = true
        environment.meter.report(.cardDetected)
    }

    /// The connection `reconnect` gives, within the read's deadline; its failures as read errors.
    private func waitForCard(_ reconnect: @escaping PassportReader.Reconnect, session: CardSession) async throws(MRTDError) -> any CardConnection {
        do {
            // Waiting for the card is part of the read: it ends with the read's deadline.
            if let deadline = session.budget.deadline {
                return try await withTimeLimit(until: deadline) { try await reconnect() }
            }
            return try await reconnect()
        } catch let error as MRTDError {
            throw error
        } catch let error as SmartCardError where error.code == .timeout && session.budget.deadline.map({ ContinuousClock.now >= $0 }) == true {
            throw session.deadlineError()
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
    }
}
