import SmartCardCore

/// Tag loss: the document leaves the reader's field in the middle of a read (a hand moves, a
/// passport slides on the glass), or the link to a card that is still there fails. With a
/// `reconnect` closure the read waits for the card and goes on where it stopped: the session gets
/// the new connection, the chip is opened again (`ReadContext.reopen`: the same access control,
/// Chip Authentication with the same key), the file being read is selected again, and the read
/// continues at its offset. Before the chip is first open, the whole opening starts again. Bounded:
/// `maxReconnections` losses per read, and `maxLinkFailures` of a link that fails with the card
/// still there. Without the closure, or when it gives up, the read fails: never a half-read file.
final class TagLossRecovery: SessionRecovery {
    static let maxReconnections = 8
    static let maxLinkFailures = 2
    /// What a journey can show while the read waits for the document to come back.
    static let cardRemovedMessage = "The document moved away from the reader. Put it back on the reader to continue reading."

    private unowned let context: ReadContext
    private let reconnect: PassportReader.Reconnect?
    /// Whether access control has opened the chip (a loss after this re-opens it in place).
    var accessEstablished = false
    private var recovering = false
    /// A new connection after tag loss, the chip not yet opened on it.
    private var linkUnsettled = false
    private var attempts = 0
    private var linkFailures = 0
    private(set) var reconnections = 0

    init(context: ReadContext, reconnect: PassportReader.Reconnect?) {
        self.context = context
        self.reconnect = reconnect
    }

    /// Whether `error` is the card leaving (or a link failure this read may get around).
    private func isLoss(_ error: MRTDError) -> Bool {
        switch error.code {
        case .cardRemoved: return true
        case .communicationFailure: return linkUnsettled || linkFailures < Self.maxLinkFailures
        default: return false
        }
    }

    /// Runs `body`. Once the chip is open, a loss makes it open again and `body` run again; before
    /// that, the opening itself is `body` and starts from the beginning.
    func surviving(_ body: () async throws(MRTDError) -> Void) async throws(MRTDError) {
        while true {
            do {
                try await body()
                return
            } catch where reconnect != nil && !recovering && isLoss(error) && !accessEstablished {
                // Gone before the chip was open: open it from the start once it is back.
                guard error.code == .cardRemoved || linkUnsettled else { throw error }
                try await awaitCard(after: error)
                context.report(.authenticating, percent: context.lastPercent)
            } catch {
                guard try await recover(from: error, on: context.session) else { throw error }
            }
        }
    }

    func reestablishSecureMessaging(on session: CardSession) async throws(MRTDError) {
        try await context.reauthenticate()
    }

    func recover(from error: MRTDError, on session: CardSession) async throws(MRTDError) -> Bool {
        guard reconnect != nil, accessEstablished, !recovering, isLoss(error) else { return false }
        recovering = true
        defer { recovering = false }
        var loss = error
        while true {
            if loss.code == .communicationFailure, !linkUnsettled { linkFailures += 1 }
            try await awaitCard(after: loss)
            context.report(.authenticating, percent: context.lastPercent)
            do {
                try await context.reopen()
                settle()
                context.report(.reading, file: session.traceContext.file, percent: context.lastPercent)
                return true
            } catch where isLoss(error) {
                loss = error
            }
        }
    }

    /// The chip was opened again after the card came back: the reconnection counts.
    func settle() {
        guard linkUnsettled else { return }
        linkUnsettled = false
        reconnections += 1
    }

    /// Reports `waitingForCard`, lets go of the lost connection and takes the one `reconnect`
    /// gives once the card is back. The chip starts closed: no secure messaging.
    private func awaitCard(after loss: MRTDError) async throws(MRTDError) {
        guard let reconnect else { throw loss }
        attempts += 1
        guard attempts <= Self.maxReconnections else {
            if loss.code == .communicationFailure {
                throw MRTDError(.communicationFailure, "the link to the card kept failing during reading: \(loss.reason)")
            }
            throw MRTDError(.cardRemoved, "the card left the reader \(attempts) times during reading; hold the document still on the reader")
        }
        if linkUnsettled {
            // Back but gone again before the chip was open: give the card (and the back end) a moment.
            do {
                try await Task.sleep(for: .milliseconds(250))
            } catch {
                throw MRTDError(.cancelled, "reading was cancelled")
            }
        } else {
            context.report(.waitingForCard, percent: context.lastPercent, reason: ReadProgress.cardRemovedReason,
                           message: Self.cardRemovedMessage)
            context.options.trace?.note("cardRemoved", ["reason": loss.reason])
        }
        let session = context.session
        session.secureMessaging = nil
        await session.connection.disconnect()
        let connection: any CardConnection
        do {
            // Waiting for the card is part of the read: it ends with the read's deadline.
            if let deadline = session.budget.deadline {
                connection = try await withTimeLimit(until: deadline) { try await reconnect() }
            } else {
                connection = try await reconnect()
            }
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
        session.replace(connection: connection)
        context.options.trace?.note("cardBack", ["reader": connection.readerName, "atr": APDUTrace.hex(connection.atr)])
        linkUnsettled = true
        context.report(.cardDetected, percent: context.lastPercent)
    }
}
