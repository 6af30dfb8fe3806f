import MRTD
import SmartCardCore

/// One read of a document, as both `gbgbridge read` and nfc.read run it: wait for a card on the
/// reader asked for → connect → read (waiting for the card again if it leaves the field, within
/// the same wait) → disconnect. Progress starts at `waitingForCard` 0 and `cardDetected` 1; the
/// reader's own percentages follow. The caller reports the outcome its own way.
package struct ReadJob: Sendable {
    /// A reader name (or a unique part of one); `nil` for the first with a card.
    package var reader: String?
    package var accessKey: AccessKey
    package var options: ReadOptions
    /// How long to wait for the card, and for it to come back after it left mid-read.
    package var cardTimeout: Duration

    package init(reader: String?, accessKey: AccessKey, options: ReadOptions, cardTimeout: Duration) {
        self.reader = reader
        self.accessKey = accessKey
        self.options = options
        self.cardTimeout = cardTimeout
    }

    package enum Outcome: Sendable {
        /// The chip was read (its verification is in the result).
        case read(PassportReadResult, reader: String, waitForCard: Duration)
        /// No card came, or the reader could not connect to it: nothing was sent to a chip.
        case noCard(SmartCardError)
        /// The read began and failed after `apdus` exchanges.
        case failed(MRTDError, apdus: Int, reader: String, waitForCard: Duration)
    }

    /// Runs the read on `backend`. `connected` sees the reader and its connection (for a trace's
    /// first line) before any APDU is sent.
    package func run(on backend: any CardReaderBackend, progress: @escaping PassportReader.ProgressHandler,
                     connected: @Sendable (ReaderInfo, any CardConnection) -> Void = { _, _ in }) async -> Outcome {
        progress(ReadProgress(phase: .waitingForCard, percent: 0))
        let started = ContinuousClock.now
        let card: ReaderInfo
        let connection: any CardConnection
        do {
            card = try await backend.waitForCard(readerMatching: reader, timeout: cardTimeout)
            progress(ReadProgress(phase: .cardDetected, file: card.name, percent: 1))
            connection = try await backend.connect(reader: card.name)
        } catch let error as SmartCardError {
            return .noCard(error)
        } catch {
            return .noCard(SmartCardError(.communicationFailure, "\(error)"))
        }
        let waitForCard = ContinuousClock.now - started
        connected(card, connection)
        let readerName = card.name
        let timeout = cardTimeout
        let passportReader = PassportReader(connection: connection, accessKey: accessKey, options: options, progress: progress,
                                            reconnect: { try await backend.reconnect(reader: readerName, until: .now + timeout) })
        do {
            let result = try await passportReader.read()
            await passportReader.connection.disconnect()
            return .read(result, reader: readerName, waitForCard: waitForCard)
        } catch {
            await passportReader.connection.disconnect()
            return .failed(error, apdus: passportReader.apduCount, reader: readerName, waitForCard: waitForCard)
        }
    }
}

extension ReadJob {
    /// Which of the keys tried opened the chip (issue 50): `used` its index (nil: none did), `tried`
    /// how many were tried.
    package struct KeyTrial: Sendable, Hashable {
        package var used: Int?
        package var tried: Int
    }

    /// The read with each of `keys` in turn (access keys read from a photo, best first): the chip
    /// decides which, if any, is right. A key the chip refuses (ACCESS_DENIED) moves on to the
    /// next, on the same card, within one deadline for them all (`options.readTimeout`); any other
    /// outcome ends the trial. At most `MRZ` candidates' worth: never more than three keys.
    package func run(on backend: any CardReaderBackend, keys: [AccessKey], progress: @escaping PassportReader.ProgressHandler,
                     connected: @escaping @Sendable (ReaderInfo, any CardConnection) -> Void = { _, _ in }) async -> (Outcome, KeyTrial) {
        let keys = Array(keys.prefix(Self.maximumKeys))
        guard !keys.isEmpty else {
            return (.failed(MRTDError(.invalidAccessKey, "no access key to try"), apdus: 0, reader: reader ?? "", waitForCard: .zero), KeyTrial(used: nil, tried: 0))
        }
        let deadline = options.readTimeout.map { ContinuousClock.now + $0 }
        var last: Outcome?
        for (index, key) in keys.enumerated() {
            var attempt = self
            attempt.accessKey = key
            if let deadline {
                let remaining = deadline - ContinuousClock.now
                guard remaining > .zero else { break }
                attempt.options.readTimeout = remaining
            }
            let outcome = await attempt.run(on: backend, progress: progress, connected: index == 0 ? connected : { _, _ in })
            switch outcome {
            case .failed(let error, _, _, _) where error.code == MRTDError.Code.accessDenied && index + 1 < keys.count:
                last = outcome
                continue
            case .read:
                return (outcome, KeyTrial(used: index, tried: index + 1))
            default:
                return (outcome, KeyTrial(used: nil, tried: index + 1))
            }
        }
        return (last ?? .failed(MRTDError(.timeout, "the read's time ran out before a key could be tried"), apdus: 0, reader: reader ?? "",
                                waitForCard: .zero), KeyTrial(used: nil, tried: keys.count))
    }

    /// The most keys one read tries.
    package static let maximumKeys = 3
}
