import CGBGBridgeServerShim
import Foundation
import GBGBridge
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif


/// A problem starting the server.
public struct BridgeServerError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// Serves the bridge to browsers on this machine: `/gbg-bridge.js` (bootstrap and the
/// `window.webkit.messageHandlers.gbgBridge` shim), optional static files, and a WebSocket per
/// page that carries bridge messages to a `BridgeHost` of its own.
///
/// Secure by default: loopback only; a WebSocket is accepted only from an allowed `Origin`, with
/// a `Host` of this machine on this port (DNS-rebinding defence) and this process's random
/// token. Hostile pages are bounded: connections (count, header and idle timeouts), pages,
/// message size and rate, what is queued for a page that does not read, and every page's host
/// (see `BridgeConfiguration`). When a page goes away its host's requests are cancelled (an
/// `nfc.read` stops and frees the reader).
public final class BridgeServer: Sendable {
    public typealias HostSetup = @MainActor @Sendable (BridgeHost) -> Void

    static let webSocketPath = BridgeScript.webSocketPath

    public let configuration: BridgeServerConfiguration
    /// The per-process secret the served script carries and the WebSocket must present.
    public let token: String
    private let setUpHost: HostSetup
    private let tearDownHost: HostSetup
    let logger: Logger
    private let state = Mutex(State())
    private let connections = ConnectionCounter()
    /// The open `/diagnostics/events` streams (capped: `maxDiagnosticsStreams`).
    let diagnosticsStreams: DiagnosticsStreams
    /// Tokens the diagnostics page's own requests carry (`OperatorAccess`).
    let operatorPageTokens = OperatorPageTokens()

    private struct State {
        var port: Int?
        /// The operators' listener's port, once bound.
        var operatorPort: Int?
        var announced = false
        var pages = 0
        var hostsCreated = 0
        var group: ServiceGroup?
        var stopRequested = false
        /// The pages being served, so a stop reaches them at once.
        var live: [Int: LivePage] = [:]
    }

    private struct LivePage {
        let host: BridgeHost
        let closer: PageCloser
    }

    public init(configuration: BridgeServerConfiguration, logger: Logger = Logger(label: "gbgbridge.server"),
                setUpHost: @escaping HostSetup, tearDownHost: @escaping HostSetup = { _ in }) throws {
        guard ["127.0.0.1", "::1", "localhost"].contains(configuration.host) || configuration.host.hasPrefix("127.") else {
            throw BridgeServerError(description: "the bridge listens on loopback only (127.0.0.1, ::1, localhost), not '\(LogText.clip(configuration.host))'")
        }
        for origin in configuration.allowedOrigins {
            // ws:// and wss:// origins are what non-browser WebSocket clients (test rigs) send.
            guard let url = URL(string: origin), let scheme = url.scheme, ["http", "https", "ws", "wss"].contains(scheme), url.host != nil,
                  url.path.isEmpty || url.path == "/", url.query == nil else {
                throw BridgeServerError(description: "'\(LogText.clip(origin))' is not an origin (scheme://host[:port], nothing after)")
            }
        }
        guard configuration.maxConnections > 0, configuration.maxDiagnosticsStreams > 0,
              configuration.maxOpenConnections >= configuration.maxConnections + configuration.maxDiagnosticsStreams,
              configuration.maxMessageBytes > 0, configuration.maxOutboundBytes > 0, configuration.maxMessagesPerSecond > 0 else {
            throw BridgeServerError(description: "the server's limits must be positive, and maxOpenConnections at least maxConnections + maxDiagnosticsStreams")
        }
        self.configuration = configuration
        self.diagnosticsStreams = DiagnosticsStreams(cap: configuration.maxDiagnosticsStreams)
        self.token = Self.randomToken()
        self.setUpHost = setUpHost
        self.tearDownHost = tearDownHost
        self.logger = logger
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The port actually bound, once running.
    public var port: Int? { state.withLock { $0.port } }
    /// The operators' listener's port (`/metrics`, `/diagnostics`), once running; nil when the
    /// server has neither metrics nor diagnostics.
    public var operatorPort: Int? { state.withLock { $0.operatorPort } }
    /// Whether the operators' listener runs (metrics or diagnostics are configured).
    var hasOperatorListener: Bool { configuration.metricsExposition != nil || configuration.diagnostics != nil }
    /// Pages (WebSockets) connected now.
    public var connectionCount: Int { state.withLock { $0.pages } }
    /// TCP connections open now, pages included.
    public var openConnectionCount: Int { connections.value }
    /// Pages served since the start.
    public var pagesServed: Int { state.withLock { $0.hostsCreated } }

    /// The origins pages may come from: the configured ones plus this server's own.
    var allowedOrigins: Set<String> {
        let port = self.port ?? configuration.port
        var origins = Set(configuration.allowedOrigins.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        for name in ["127.0.0.1", "localhost", "[::1]"] { origins.insert("http://\(name):\(port)") }
        return origins
    }

    /// Whether `host` (the Host header) names this machine on this server's port.
    func isLocalHostHeader(_ host: String?) -> Bool {
        guard let host, let port = self.port else { return false }
        return ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"].contains(host.lowercased())
    }

    /// Runs until `shutdown()` (or until the task is cancelled, which shuts down the same way);
    /// `onRunning` is called with the bound port.
    public func run(onRunning: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let router = Router(context: BridgeRequestContext.self)
        router.add(middleware: RequestHygieneMiddleware())
        router.add(middleware: HostCheckMiddleware(server: self))
        let script = BridgeScript.javaScript(token: token, configuration: configuration.bridge)
        router.get("gbg-bridge.js") { [self] request, _ -> Response in
            // A cross-site page may include the script only if its origin is allowed.
            if request.headers.secFetchSite == "cross-site" {
                let referer = request.headers[.referer].flatMap(URL.init(string:)).flatMap(Self.origin(of:))
                guard let referer, self.allowedOrigins.contains(referer) else {
                    return Response(status: .forbidden)
                }
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/javascript; charset=utf-8"
            headers[.cacheControl] = "no-store"
            headers[.xContentTypeOptions] = "nosniff"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: script)))
        }
        for (path, endpoint) in configuration.jsonEndpoints {
            router.post(RouterPath(path)) { [self] request, _ -> Response in
                // Only the journey's own pages (or allowed origins) may call it, never a cross-site page.
                guard let origin = request.headers[.origin], self.allowedOrigins.contains(origin),
                      request.headers.secFetchSite != "cross-site" else {
                    return Response(status: .forbidden)
                }
                let body: ByteBuffer
                do {
                    body = try await request.body.collect(upTo: configuration.maxMessageBytes)
                } catch {
                    return Response(status: .contentTooLarge)
                }
                let (status, answer) = await endpoint(Array(buffer: body))
                var headers = HTTPFields()
                headers[.contentType] = "application/json; charset=utf-8"
                headers[.cacheControl] = "no-store"
                headers[.xContentTypeOptions] = "nosniff"
                return Response(status: HTTPResponse.Status(code: status), headers: headers,
                                body: .init(byteBuffer: ByteBuffer(bytes: answer)))
            }
        }
        if let directory = configuration.staticDirectory {
            router.add(middleware: FileMiddleware(directory, searchForIndexHtml: true, logger: logger))
        }

        let limits = ConnectionLimits(headerTimeout: .init(configuration.headerTimeout),
                                      httpLifetime: .init(configuration.httpConnectionLifetime))
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: .init(configuration.idleTimeout)),
            ws: .init(maxFrameSize: configuration.maxMessageBytes, autoPing: .enabled(timePeriod: .seconds(20)),
                      closeTimeout: configuration.closeTimeout, validateUTF8: false))
        let counter = connections
        let server = HTTPServerBuilder { [self] responder in
            GuardedChildChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: channelConfiguration) { head, channel, _ in
                    self.shouldUpgrade(head, channel: channel)
                },
                limits: limits, counter: counter)
        }
        let app = Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil,
                                 availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxOpenConnections, logger: logger)),
            onServerRunning: { [self] channel in
                let bound = channel.localAddress?.port ?? configuration.port
                state.withLock { $0.port = bound }
                announceWhenListening(onRunning)
            },
            logger: logger
        )
        var services: [any Service] = [app]
        if hasOperatorListener {
            services.append(operatorApplication(onBound: { [self] bound in
                state.withLock { $0.operatorPort = bound }
                announceWhenListening(onRunning)
            }))
        }
        var groupConfiguration = ServiceGroupConfiguration(services: services,
                                                           gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        // A graceful stop that takes longer (a page that ignores our close) is escalated to a cancellation.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(3)
        let group = ServiceGroup(configuration: groupConfiguration)
        let stopNow = state.withLock { state -> Bool in
            state.group = group
            return state.stopRequested
        }
        if stopNow { await group.triggerGracefulShutdown() }
        // Cancelling `run` stops the server gracefully too: the group runs in a task of its own, so
        // the cancellation reaches it only as a graceful shutdown (pages closed with a close frame,
        // their requests cancelled), not as an abrupt cancellation of every connection.
        let running = Task { try await group.run() }
        try await withTaskCancellationHandler {
            try await running.value
        } onCancel: {
            Task { await group.triggerGracefulShutdown() }
        }
    }

    /// Calls `onRunning` once, when the journey's listener and (when there is one) the operators'
    /// are both bound.
    private func announceWhenListening(_ onRunning: @Sendable (Int) -> Void) {
        let port = state.withLock { state -> Int? in
            guard let port = state.port, !state.announced, !hasOperatorListener || state.operatorPort != nil else { return nil }
            state.announced = true
            return port
        }
        if let port { onRunning(port) }
    }

    /// Stops the server gracefully: no new connections; every page is closed (its requests
    /// cancelled, `nfc.read` included); `run` returns once the connections are gone.
    public func shutdown() async {
        let (group, pages) = state.withLock { state -> (ServiceGroup?, [LivePage]) in
            state.stopRequested = true
            return (state.group, Array(state.live.values))
        }
        // Every page's requests (a read waiting for a card included) are cancelled now, not when the
        // page gets round to answering our close frame; a page that never answers is reset a second later.
        await MainActor.run {
            for page in pages { page.host.cancelInFlightRequests(reason: Self.stoppingReason) }
        }
        for page in pages { page.closer.close(code: .goingAway, reason: Self.stoppingReason) }
        await group?.triggerGracefulShutdown()
    }

    static let stoppingReason = "the host is stopping"

    /// Whether `shutdown()` has begun.
    var isStopping: Bool { state.withLock { $0.stopRequested } }

    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme, let host = url.host else { return nil }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return url.port.map { "\(scheme)://\(hostPart):\($0)" } ?? "\(scheme)://\(hostPart)"
    }

    // MARK: Pages

    private func shouldUpgrade(_ head: HTTPRequest, channel: any Channel)
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let target = head.path ?? ""
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        guard path == Self.webSocketPath else { return .dontUpgrade }
        guard isLocalHostHeader(head.authority) else {
            logger.warning("WebSocket refused: Host \(LogText.clip(head.authority ?? "(none)")) is not this machine (DNS rebinding?)")
            return .dontUpgrade
        }
        let origins = head.headerFields[values: .origin]
        guard origins.count == 1, let origin = origins.first, allowedOrigins.contains(origin) else {
            logger.warning("WebSocket refused: origin \(LogText.clip(origins.joined(separator: ", ").isEmpty ? "(none)" : origins.joined(separator: ", "))) is not allowed")
            return .dontUpgrade
        }
        let query = target.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
        let presented = URLComponents(string: "?" + query)?.queryItems?.first { $0.name == "token" }?.value
        guard let presented, Self.constantTimeEqual(presented, token) else {
            logger.warning("WebSocket refused from \(LogText.clip(origin)): missing or wrong token")
            return .dontUpgrade
        }
        guard connectionCount < configuration.maxConnections else {
            logger.warning("WebSocket refused from \(LogText.clip(origin)): \(configuration.maxConnections) pages are connected already")
            return .dontUpgrade
        }
        return .upgrade([:]) { [self] inbound, outbound, _ in
            await self.servePage(inbound: inbound, outbound: outbound, channel: channel, origin: origin)
        }
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// One page: a host of its own, messages both ways, clean-up on every way it can end.
    private func servePage(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel,
                           origin: String) async {
        // Counted here, where the page begins, and released by the defer below on every way it
        // ends: an upgrade the client aborted never gets here, so it can never leak a slot.
        let number = state.withLock { state -> Int? in
            guard state.pages < configuration.maxConnections else { return nil }
            state.pages += 1
            state.hostsCreated += 1
            return state.hostsCreated
        }
        guard let number else {
            try? await outbound.close(.tryAgainLater, reason: "\(configuration.maxConnections) pages are connected already")
            return
        }
        Self.pagesConnected(state.withLock { $0.pages })
        defer {
            Self.pagesConnected(state.withLock { state in
                state.pages -= 1
                return state.pages
            })
        }
        let outbox = PageOutbox(limit: configuration.maxOutboundBytes)
        let closer = PageCloser(channel: channel)
        let page = await MainActor.run { () -> BridgedPage in
            let transport = WebSocketTransport(outbox: outbox) { [logger] in
                logger.warning("page \(number) does not read its messages (\(outbox.limit) bytes queued); disconnecting it")
                closer.close(code: .policyViolation, reason: "the page does not read its messages")
            }
            return BridgedPage(configuration.pageSettings, transport: transport, origin: origin, via: "websocket",
                               setUpHost: setUpHost, tearDownHost: tearDownHost)
        }
        let stopping = state.withLock { state -> Bool in
            state.live[number] = LivePage(host: page.host, closer: closer)
            return state.stopRequested
        }
        defer { state.withLock { _ = $0.live.removeValue(forKey: number) } }
        if stopping { closer.close(code: .goingAway, reason: Self.stoppingReason) }
        logger.info("page \(number) connected from \(LogText.clip(origin)) (\(connectionCount) open)")
        let writer = Task {
            for await text in outbox.messages {
                do {
                    try await outbound.write(.text(text))
                } catch {
                    break
                }
                outbox.written(text)
            }
        }
        var assembler = MessageAssembler(maxBytes: configuration.maxMessageBytes)
        var bucket = TokenBucket(rate: configuration.maxMessagesPerSecond, burst: configuration.maxMessagesPerSecond * 2)
        var ending = "the page went away"
        do {
            frames: for try await frame in inbound {
                switch assembler.add(opcode: frame.opcode, data: frame.data, fin: frame.fin) {
                case .needMore:
                    continue
                case .close(let code, let reason):
                    ending = reason
                    logger.info("page \(number): closing (\(code)): \(reason)")
                    try? await outbound.close(code, reason: reason)
                    break frames
                case .message(let text):
                    if let wait = bucket.take() { try? await Task.sleep(for: wait) }
                    await MainActor.run { page.receive(text) }
                }
            }
        } catch {
            logger.debug("page \(number): \(LogText.clip(String(describing: error), to: 300))")
        }
        if outbox.overflowed { ending = "the page did not read its messages" }
        await MainActor.run { page.end(reason: ending) }
        outbox.finish()
        writer.cancel()
        _ = await writer.value
        logger.info("page \(number) disconnected")
        // Give the memory of a page that sent large messages back to the system.
        CGBGBridgeServerShim_release_free_heap()
    }
}

/// Closes a page's connection from outside its read loop: a close frame written straight to the
/// channel (it may never leave a socket the page does not read), then, a second later, a reset.
final class PageCloser: Sendable {
    let channel: any Channel
    private let closing = Mutex(false)
    init(channel: any Channel) { self.channel = channel }

    func close(code: WebSocketErrorCode, reason: String) {
        let first = closing.withLock { closing -> Bool in
            defer { closing = true }
            return !closing
        }
        guard first else { return }
        var buffer = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        buffer.write(webSocketErrorCode: code)
        buffer.writeString(reason)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: buffer)
        let channel = self.channel
        channel.writeAndFlush(frame, promise: nil)
        // A page that drains what was queued within a second finds the close frame; then the
        // connection is reset, which also frees what the kernel still holds for a page that never reads.
        channel.eventLoop.scheduleTask(in: .seconds(1)) {
            let reset = (channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                ?? channel.eventLoop.makeSucceededVoidFuture()
            reset.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// Answers requests no capability handles with `unsupported` (code `UNSUPPORTED`), as a host with
/// no app code behind it must.
@MainActor
final class UnsupportedActionResponder: BridgeHostDelegate {
    static let shared = UnsupportedActionResponder()

    func bridgeHost(_ host: BridgeHost, unhandledRequest message: BridgeMessage) {
        host.respond(to: message.correlationId, status: .unsupported, data: nil,
                     error: BridgeErrorPayload(.unsupported,
                                               message: "no capability of this host handles '\(LogText.clip(message.payload.action))'",
                                               recoverable: false))
    }
}

/// Refuses every HTTP request whose Host header is not this machine on this port.
struct HostCheckMiddleware<Context: RequestContext>: RouterMiddleware {
    let server: BridgeServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard server.isLocalHostHeader(request.head.authority) else {
            return Response(status: .misdirectedRequest)
        }
        return try await next(request, context)
    }
}

extension HTTPFields {
    /// The `Sec-Fetch-Site` header (which swift-http-types has no constant for).
    var secFetchSite: String? { first { $0.name.canonicalName == "sec-fetch-site" }?.value }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
