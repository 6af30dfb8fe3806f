import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// How long a TCP connection may take before it must have shown it is a real page.
struct ConnectionLimits: Sendable {
    /// A connection must have sent a complete request head (`\r\n\r\n`) this soon after it opened:
    /// idle and slow-header ("slowloris") connections are closed.
    var headerTimeout: TimeAmount
    /// A connection that has not become a WebSocket is closed after this long (keep-alive HTTP
    /// connections reconnect; a slow trickle of requests cannot hold a slot for good).
    var httpLifetime: TimeAmount
}

/// The TCP connections open now, counted where every connection begins and ends.
final class ConnectionCounter: Sendable {
    private let count = Mutex(0)
    func opened() { count.withLock { $0 += 1 } }
    func closed() { count.withLock { $0 -= 1 } }
    var value: Int { count.withLock { $0 } }
}

/// First handler of every connection, ahead of any HTTP parsing: counts the connection until it
/// ends (however it ends), closes it when its request head does not arrive within the header
/// timeout, and closes connections that are still plain HTTP after their lifetime.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let limits: ConnectionLimits
    private let counter: ConnectionCounter
    private let logger: Logger
    private var counted = false
    private var headerSeen = false
    private var upgraded = false
    /// The last bytes of what was read so far, to find `\r\n\r\n` across reads.
    private var tail: [UInt8] = []
    private var headerDeadline: Scheduled<Void>?
    private var lifetimeDeadline: Scheduled<Void>?

    private static let headerEnd: [UInt8] = [13, 10, 13, 10]
    private static let switchingProtocols = Array("HTTP/1.1 101".utf8)

    init(limits: ConnectionLimits, counter: ConnectionCounter, logger: Logger) {
        self.limits = limits
        self.counter = counter
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        counter.opened()
        counted = true
        let channel = context.channel
        let logger = self.logger
        let headerTimeout = limits.headerTimeout
        headerDeadline = context.eventLoop.scheduleTask(in: headerTimeout) {
            logger.debug("closing a connection that sent no request within \(headerTimeout)")
            channel.close(promise: nil)
        }
        let lifetime = limits.httpLifetime
        lifetimeDeadline = context.eventLoop.scheduleTask(in: lifetime) {
            logger.debug("closing an HTTP connection open for \(lifetime)")
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        end()
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    private func end() {
        headerDeadline?.cancel()
        lifetimeDeadline?.cancel()
        headerDeadline = nil
        lifetimeDeadline = nil
        if counted {
            counted = false
            counter.closed()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !headerSeen {
            let buffer = unwrapInboundIn(data)
            let bytes = tail + buffer.readableBytesView
            if bytes.firstRange(of: Self.headerEnd) != nil {
                headerSeen = true
                tail = []
                headerDeadline?.cancel()
                headerDeadline = nil
            } else {
                tail = Array(bytes.suffix(3))
            }
        }
        context.fireChannelRead(data)
    }

    /// Answers a request the HTTP parser refused (a control character in a header, a broken
    /// request line …) with 400 and closes: written here, ahead of the HTTP encoder, because the
    /// request never became one the HTTP layers could answer. Without it the connection would sit
    /// unanswered until the idle timeout.
    func refuseUnparsableRequest(context: ChannelHandlerContext, error: HTTPParserError) {
        guard !upgraded else {
            context.close(promise: nil)
            return
        }
        logger.debug("closing a connection whose request could not be parsed: \(error)")
        let answer = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer(string: answer)))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !upgraded, case .byteBuffer(let buffer) = unwrapOutboundIn(data),
           buffer.readableBytesView.starts(with: Self.switchingProtocols) {
            // The connection became a WebSocket: its page now lives as long as it answers pings.
            upgraded = true
            lifetimeDeadline?.cancel()
            lifetimeDeadline = nil
        }
        context.write(data, promise: promise)
    }
}

/// A server child channel (`HTTP1WebSocketUpgradeChannel`) with a `ConnectionGuard` in front.
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let limits: ConnectionLimits
    let counter: ConnectionCounter

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(limits: limits, counter: counter, logger: logger),
                                                           position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Right behind the HTTP decoder, so that its errors reach us before any upgrade
            // handler can swallow them.
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try operations.addHandler(ParserErrorAnswer(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Sits behind the HTTP request decoder: a parser error is answered 400 by the connection's
/// `ConnectionGuard` (which writes raw bytes at the head of the pipeline) and the connection closed.
final class ParserErrorAnswer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private var answered = false

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        guard !answered else { return }
        answered = true
        guard let guardContext = try? context.pipeline.syncOperations.context(handlerType: ConnectionGuard.self),
              let connectionGuard = guardContext.handler as? ConnectionGuard else {
            context.close(promise: nil)
            return
        }
        connectionGuard.refuseUnparsableRequest(context: guardContext, error: parserError)
    }
}
