import Foundation
import GBGBridge
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization

/// Settings of a `BridgeServer`. Everything defaults to the safe choice.
public struct BridgeServerConfiguration: Sendable {
    /// Where to listen: loopback only (`127.0.0.1`, `::1` or `localhost`).
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (see `BridgeServer.port`).
    public var port: Int = 8450
    /// Page origins allowed to open the bridge, matched exactly (`https://journey.example.com`).
    /// The server's own origins are always allowed.
    public var allowedOrigins: [String] = []
    /// Static files to serve at `/` (for example a journey), or `nil`.
    public var staticDirectory: String?
    /// The largest message a page may send (a 5 MB image, base64-encoded, fits).
    public var maxMessageBytes = 8 << 20
    /// How many pages may be connected at once.
    public var maxConnections = 16
    /// The bridge configuration each page's host gets (version, bootstrap script).
    public var bridge = BridgeConfiguration(hostVersion: "1.0", capabilities: [:])

    public init() {}
}

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
/// token; messages are size-limited and connections bounded. When a page goes away its host's
/// requests are cancelled (an `nfc.read` stops and frees the reader).
public final class BridgeServer: Sendable {
    public typealias HostSetup = @MainActor @Sendable (BridgeHost) -> Void

    public let configuration: BridgeServerConfiguration
    /// The per-process secret the served script carries and the WebSocket must present.
    public let token: String
    private let setUpHost: HostSetup
    private let tearDownHost: HostSetup
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var port: Int?
        var connections = 0
        var hostsCreated = 0
    }

    public init(configuration: BridgeServerConfiguration, logger: Logger = Logger(label: "gbgbridge.server"),
                setUpHost: @escaping HostSetup, tearDownHost: @escaping HostSetup = { _ in }) throws {
        guard ["127.0.0.1", "::1", "localhost"].contains(configuration.host) || configuration.host.hasPrefix("127.") else {
            throw BridgeServerError(description: "the bridge listens on loopback only (127.0.0.1, ::1, localhost), not '\(configuration.host)'")
        }
        for origin in configuration.allowedOrigins {
            // ws:// and wss:// origins are what non-browser WebSocket clients (test rigs) send.
            guard let url = URL(string: origin), let scheme = url.scheme, ["http", "https", "ws", "wss"].contains(scheme), url.host != nil,
                  url.path.isEmpty || url.path == "/", url.query == nil else {
                throw BridgeServerError(description: "'\(origin)' is not an origin (scheme://host[:port], nothing after)")
            }
        }
        self.configuration = configuration
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
    /// Pages connected now.
    public var connectionCount: Int { state.withLock { $0.connections } }

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

    /// Runs until the task is cancelled; `onRunning` is called with the bound port.
    public func run(onRunning: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.add(middleware: HostCheckMiddleware(server: self))
        let script = BridgeScript.javaScript(token: token, configuration: configuration.bridge)
        router.get("gbg-bridge.js") { [self] request, _ -> Response in
            // A cross-site page may include the script only if its origin is allowed.
            if request.headers[.secFetchSite] == "cross-site" {
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
        if let directory = configuration.staticDirectory {
            router.add(middleware: FileMiddleware(directory, searchForIndexHtml: true, logger: logger))
        }

        let webSocketRouter = Router(context: BasicWebSocketRequestContext.self)
        webSocketRouter.ws(RouterPath(stringLiteral: String(BridgeScript.webSocketPath.dropFirst()))) { [self] request, _ in
            self.shouldUpgrade(request)
        } onUpgrade: { [self] inbound, outbound, _ in
            try await self.serve(inbound: inbound, outbound: outbound)
        }

        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(
                webSocketRouter: webSocketRouter,
                configuration: .init(ws: .init(maxFrameSize: configuration.maxMessageBytes, autoPing: .enabled(timePeriod: .seconds(20))))),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { [self] channel in
                let bound = channel.localAddress?.port ?? configuration.port
                state.withLock { $0.port = bound }
                onRunning(bound)
            },
            logger: logger
        )
        try await app.run()
    }

    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme, let host = url.host else { return nil }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return url.port.map { "\(scheme)://\(hostPart):\($0)" } ?? "\(scheme)://\(hostPart)"
    }

    private func shouldUpgrade(_ request: Request) -> RouterShouldUpgrade {
        guard isLocalHostHeader(request.head.authority) else {
            logger.warning("WebSocket refused: Host is not this machine (DNS rebinding?)")
            return .dontUpgrade
        }
        guard let origin = request.headers[.origin], allowedOrigins.contains(origin) else {
            logger.warning("WebSocket refused: origin \(request.headers[.origin] ?? "(none)") is not allowed")
            return .dontUpgrade
        }
        guard let presented = request.uri.queryParameters.get("token"), presented == token else {
            logger.warning("WebSocket refused from \(origin): missing or wrong token")
            return .dontUpgrade
        }
        let admitted = state.withLock { state -> Bool in
            guard state.connections < configuration.maxConnections else { return false }
            state.connections += 1
            return true
        }
        guard admitted else {
            logger.warning("WebSocket refused from \(origin): \(configuration.maxConnections) pages are connected already")
            return .dontUpgrade
        }
        return .upgrade([:])
    }

    /// One page: a host of its own, messages both ways, clean-up when it goes.
    private func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (outgoing, sink) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        let transport = await MainActor.run { WebSocketTransport(sink: sink) }
        let host = await MainActor.run { () -> BridgeHost in
            let host = BridgeHost(configuration: configuration.bridge, queryProvider: .rich)
            host.attach(transport: transport)
            setUpHost(host)
            return host
        }
        let number = state.withLock { state -> Int in
            state.hostsCreated += 1
            return state.hostsCreated
        }
        logger.info("page \(number) connected (\(connectionCount) open)")
        defer {
            state.withLock { $0.connections -= 1 }
        }
        let writer = Task {
            for await text in outgoing {
                try await outbound.write(.text(text))
            }
        }
        do {
            for try await message in inbound.messages(maxSize: configuration.maxMessageBytes) {
                guard case .text(let text) = message else {
                    try await outbound.close(.unacceptableData, reason: "bridge messages are JSON text")
                    break
                }
                await MainActor.run { host.receive(text) }
            }
        } catch {
            logger.info("page \(number): \(error)")
        }
        await MainActor.run {
            host.detachTransport(reason: "the page went away")
            tearDownHost(host)
            _ = transport
        }
        sink.finish()
        writer.cancel()
        logger.info("page \(number) disconnected")
    }
}

/// Delivers host messages to the page's WebSocket.
@MainActor
final class WebSocketTransport: BridgeTransport {
    let sink: AsyncStream<String>.Continuation
    init(sink: AsyncStream<String>.Continuation) { self.sink = sink }
    func deliver(_ json: String) { sink.yield(json) }
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

extension HTTPField.Name {
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let origin = HTTPField.Name("Origin")!
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}
