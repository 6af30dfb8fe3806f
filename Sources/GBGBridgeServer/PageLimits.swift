import Foundation
import GBGBridge
import NIOCore
import NIOWebSocket
import Synchronization
import HummingbirdWebSocket

/// Collects a page's WebSocket data frames into messages, enforcing RFC 6455 and the bridge's
/// rules: messages are UTF-8 text (close 1003 for binary, 1007 for invalid UTF-8), a
/// fragmented message is not interleaved with another (1002) and stays within the size limit (1009).
struct MessageAssembler {
    enum Outcome: Equatable {
        case message(String)
        case needMore
        case close(WebSocketErrorCode, String)
    }

    let maxBytes: Int
    private var partial: ByteBuffer?

    init(maxBytes: Int) { self.maxBytes = maxBytes }

    mutating func add(opcode: WebSocketDataFrame.Opcode, data: ByteBuffer, fin: Bool) -> Outcome {
        switch opcode {
        case .binary:
            return .close(.unacceptableData, "bridge messages are JSON text")
        case .text:
            guard partial == nil else {
                return .close(.protocolError, "a new message began inside a fragmented one")
            }
            guard data.readableBytes <= maxBytes else { return tooLarge }
            guard fin else {
                partial = data
                return .needMore
            }
            return finish(data)
        case .continuation:
            guard var buffer = partial else {
                return .close(.protocolError, "a continuation frame without a message to continue")
            }
            guard buffer.readableBytes + data.readableBytes <= maxBytes else {
                partial = nil
                return tooLarge
            }
            var data = data
            buffer.writeBuffer(&data)
            guard fin else {
                partial = buffer
                return .needMore
            }
            partial = nil
            return finish(buffer)
        }
    }

    private var tooLarge: Outcome { .close(.messageTooLarge, "messages are limited to \(maxBytes) bytes") }

    private func finish(_ buffer: ByteBuffer) -> Outcome {
        guard let text = String(validating: buffer.readableBytesView, as: UTF8.self) else {
            return .close(.dataInconsistentWithMessage, "a text message that is not valid UTF-8")
        }
        return .message(text)
    }
}

/// A token bucket: `rate` messages a second on average, bursts of `burst`. `delay()` says how long
/// to wait before the next message may be taken (the reader then simply stops reading, so TCP
/// pushes back on the page and nothing is dropped).
struct TokenBucket {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant

    init(rate: Int, burst: Int) {
        self.rate = Double(max(1, rate))
        self.burst = Double(max(1, burst))
        self.tokens = self.burst
        self.last = .now
    }

    /// Takes a token if there is one (for callers that drop instead of waiting).
    mutating func tryTake(now: ContinuousClock.Instant = .now) -> Bool {
        refill(now: now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    private mutating func refill(now: ContinuousClock.Instant) {
        let elapsed = now - last
        last = now
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(burst, tokens + rate * seconds)
    }

    /// Takes a token; returns how long to wait first, or `nil` to go on at once.
    mutating func take(now: ContinuousClock.Instant = .now) -> Duration? {
        refill(now: now)
        tokens -= 1
        guard tokens < 0 else { return nil }
        return .nanoseconds(Int64(-tokens / rate * 1e9))
    }
}

/// The host → page queue of one WebSocket, bounded in bytes: a page that does not read what it is
/// sent is cut off (`onOverflow`) instead of growing the host without limit.
final class PageOutbox: Sendable {
    let limit: Int
    let messages: AsyncStream<String>
    private let sink: AsyncStream<String>.Continuation
    private struct State {
        var queuedBytes = 0
        var overflowed = false
    }
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
        (messages, sink) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
    }

    /// Queues `text`; returns `false` (and queues nothing more, ever) when the queue would pass
    /// its limit.
    func enqueue(_ text: String) -> Bool {
        let size = text.utf8.count
        let accepted = state.withLock { state -> Bool in
            guard !state.overflowed else { return false }
            guard state.queuedBytes + size <= limit else {
                state.overflowed = true
                return false
            }
            state.queuedBytes += size
            return true
        }
        if accepted { sink.yield(text) } else { sink.finish() }
        return accepted
    }

    /// Marks `text` as written to the socket.
    func written(_ text: String) {
        let size = text.utf8.count
        state.withLock { $0.queuedBytes -= size }
    }

    var queuedBytes: Int { state.withLock { $0.queuedBytes } }
    var overflowed: Bool { state.withLock { $0.overflowed } }

    func finish() { sink.finish() }
}

/// Delivers host messages into a page's outbox; cuts the page off when it overflows.
@MainActor
final class WebSocketTransport: BridgeTransport {
    let outbox: PageOutbox
    let onOverflow: @MainActor () -> Void
    private var cutOff = false

    init(outbox: PageOutbox, onOverflow: @escaping @MainActor () -> Void) {
        self.outbox = outbox
        self.onOverflow = onOverflow
    }

    func deliver(_ json: String) {
        guard !cutOff else { return }
        if !outbox.enqueue(json) {
            cutOff = true
            onOverflow()
        }
    }
}

extension WebSocketErrorCode {
    /// 1013, "try again later" (RFC 6455 registry): the server is at its page limit.
    static let tryAgainLater = WebSocketErrorCode(codeNumber: 1013)
}
