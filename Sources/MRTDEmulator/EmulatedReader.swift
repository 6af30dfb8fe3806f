import Dispatch
import SmartCardCore
import Synchronization

/// An in-process reader holding a virtual card (a passport chip, an mdoc holder), for fast tests
/// and demos without pcscd. It implements the same `CardReaderBackend` as PC/SC, so reader code
/// cannot tell the difference.
public final class EmulatedReaderBackend: CardReaderBackend {
    public let backendName = "emulator"
    public let readerName: String
    private let slot: Mutex<(any VirtualCard)?>

    public init(chip: (any VirtualCard)? = nil, readerName: String = "GBGBridge Emulated Reader") {
        self.readerName = readerName
        self.slot = Mutex(chip)
    }

    /// Puts a card in the field (replacing any other).
    public func insert(_ chip: any VirtualCard) {
        chip.reset()
        slot.withLock { $0 = chip }
    }

    /// Takes the chip away.
    public func remove() {
        slot.withLock { $0 = nil }
    }

    /// The passport chip in the field, if the card is one.
    public var chip: VirtualPassportChip? { slot.withLock { $0 } as? VirtualPassportChip }

    private func presentChip() -> (any VirtualCard)? {
        guard let chip = slot.withLock({ $0 }), !chip.isRemoved else { return nil }
        return chip
    }

    private func info() -> ReaderInfo {
        let chip = presentChip()
        return ReaderInfo(backend: backendName, name: readerName, cardPresent: chip != nil, atr: chip?.atr)
    }

    public func readers() async throws -> [ReaderInfo] { [info()] }

    public func waitForCard(readerMatching: String?, timeout: Duration?) async throws -> ReaderInfo {
        if let filter = readerMatching, !filter.isEmpty, !readerName.localizedCaseInsensitiveContains(filter) {
            throw SmartCardError(.readerNotFound, "no reader matches '\(filter)'")
        }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            if presentChip() != nil { return info() }
            if let deadline, ContinuousClock.now >= deadline {
                throw SmartCardError(.timeout, "no card was presented before the timeout")
            }
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                throw SmartCardError(.cancelled, "waiting for a card was cancelled")
            }
        }
    }

    public func waitForReaderChange(timeout: Duration?) async throws -> [ReaderInfo] {
        // The emulated reader never goes away.
        do {
            try await Task.sleep(for: timeout ?? .seconds(3600))
        } catch {
            throw SmartCardError(.cancelled, "waiting for readers was cancelled")
        }
        return [info()]
    }

    public func connect(reader: String) async throws -> any CardConnection {
        guard reader == readerName else { throw SmartCardError(.readerNotFound, "no reader named '\(reader)'") }
        guard let chip = presentChip() else { throw SmartCardError(.noCard, "no card is in the reader") }
        return EmulatedCardConnection(chip: chip, readerName: readerName)
    }
}

/// A connection to a virtual chip in the same process.
public final class EmulatedCardConnection: CardConnection {
    public let readerName: String
    public let chip: any VirtualCard
    private let open = Mutex(true)

    public init(chip: any VirtualCard, readerName: String = "GBGBridge Emulated Reader") {
        self.chip = chip
        self.readerName = readerName
    }

    public var atr: [UInt8] { chip.atr }

    /// None of its own: the chip computes on this process's threads, so a busy process is not a
    /// chip that stopped answering (the read's deadline still applies).
    public var exchangeTimeLimit: Duration? { nil }

    public func transmit(raw: [UInt8]) async throws -> [UInt8] {
        guard open.withLock({ $0 }) else { throw SmartCardError(.cardRemoved, "the connection was closed") }
        // The card computes off the cooperative pool, as a real card computes elsewhere: a hostile
        // card's costly answer (a 20 MB response encrypted) never holds the pool's few threads.
        let chip = self.chip
        let output = await withCheckedContinuation { (continuation: CheckedContinuation<VirtualCardOutput, Never>) in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: chip.process(raw)) }
        }
        switch output {
        case .response(let bytes):
            let delay = chip.answerDelay(commandBytes: raw.count, responseBytes: bytes.count)
            if delay > .zero { try? await Task.sleep(for: delay) }
            return bytes
        case .removed: throw SmartCardError(.cardRemoved, "the card was removed from the reader")
        case .stall:
            // A chip that stopped answering: nothing comes back until the caller gives up.
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3_600)) }
            throw SmartCardError(.cancelled, "the exchange was cancelled (the chip never answered)")
        }
    }

    public func isCardPresent() async -> Bool { !chip.isRemoved && open.withLock { $0 } }

    public func disconnect() async { open.withLock { $0 = false } }
}
