import SmartCardCore
import Synchronization

/// A connection that keeps every exchange as it went over the air (what an eavesdropper sees):
/// for tests of what leaves the reader, and for the bench's transfer-time model.
public final class RecordingConnection: CardConnection {
    public let inner: any CardConnection
    public let exchanges = Mutex<[(command: [UInt8], response: [UInt8])]>([])

    public init(_ inner: any CardConnection) { self.inner = inner }

    public var readerName: String { inner.readerName }
    public var atr: [UInt8] { inner.atr }
    public var supportsExtendedLength: Bool { inner.supportsExtendedLength }
    public var exchangeTimeLimit: Duration? { inner.exchangeTimeLimit }

    public func transmit(raw: [UInt8]) async throws -> [UInt8] {
        let response = try await inner.transmit(raw: raw)
        exchanges.withLock { $0.append((raw, response)) }
        return response
    }

    public func isCardPresent() async -> Bool { await inner.isCardPresent() }
    public func disconnect() async { await inner.disconnect() }

    /// Every exchange so far.
    public var recorded: [(command: [UInt8], response: [UInt8])] { exchanges.withLock { $0 } }
}
