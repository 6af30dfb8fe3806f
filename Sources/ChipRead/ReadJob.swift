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
