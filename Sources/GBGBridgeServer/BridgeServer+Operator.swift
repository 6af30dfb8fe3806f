#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

extension BridgeServer {
    /// The port the operators' listener binds: the configured one, else the journey's + 1 when
    /// it is free, else (the journey's is 0, the last port, or + 1 is taken) a free one.
    var operatorPortWanted: Int {
        if let port = configuration.operatorPort { return port }
        guard configuration.port != 0, configuration.port < 65_535 else { return 0 }
        return Self.isFree(host: configuration.operatorHost, port: configuration.port + 1) ? configuration.port + 1 : 0
    }

    /// Whether a TCP listener could bind `host:port` now (IPv4 loopback or any address).
    static func isFree(host: String, port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else { return true }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Whether the operators' listener is on loopback (then its Host header must name it: the
    /// DNS-rebinding defence of the journey's listener, for the operators' own).
    var operatorIsLoopback: Bool {
        ["127.0.0.1", "::1", "localhost"].contains(configuration.operatorHost) || configuration.operatorHost.hasPrefix("127.")
    }

    /// The operators' own listener (issue 49): `/metrics`, `/diagnostics`, `/diagnostics.json`,
    /// `/diagnostics/events` and the page's assets, on another port than the journey's, so no
    /// journey origin — nor a service worker it registers — shares a scope with them. Every route
    /// still judges who asks (`OperatorAccess`): a browser's subresource from any site is refused.
    func operatorApplication(onBound: @escaping @Sendable (Int) -> Void) -> some Service {
        let router = Router(context: BridgeRequestContext.self)
        router.add(middleware: RequestHygieneMiddleware())
        router.add(middleware: OperatorHostCheckMiddleware(server: self))
        if let exposition = configuration.metricsExposition {
            router.get("metrics") { request, _ -> Response in Self.metricsResponse(request, exposition) }
        }
        if let snapshot = configuration.diagnostics { addDiagnosticsRoutes(to: router, snapshot: snapshot) }
        let limits = ConnectionLimits(headerTimeout: .init(configuration.headerTimeout),
                                      httpLifetime: .init(configuration.httpConnectionLifetime))
        let counter = ConnectionCounter()
        let idle = TimeAmount(configuration.idleTimeout)
        let server = HTTPServerBuilder { responder in
            GuardedChildChannel(inner: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: idle)),
                                limits: limits, counter: counter)
        }
        if !operatorIsLoopback {
            logger.warning("operators' listener on \(configuration.operatorHost): /diagnostics (console lines a journey printed) is reachable from the network there")
        }
        return Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(configuration.operatorHost, port: operatorPortWanted), serverName: nil,
                                 availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxOperatorConnections, logger: logger)),
            onServerRunning: { channel in onBound(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// Whether `host` (a Host header) names the operators' listener on this machine.
    func isOperatorHostHeader(_ host: String?) -> Bool {
        guard operatorIsLoopback else { return true }
        guard let host, let port = operatorPort else { return false }
        return ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"].contains(host.lowercased())
    }
}

struct OperatorHostCheckMiddleware<Context: RequestContext>: RouterMiddleware {
    let server: BridgeServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard server.isOperatorHostHeader(request.head.authority) else { return Response(status: .misdirectedRequest) }
        return try await next(request, context)
    }
}
