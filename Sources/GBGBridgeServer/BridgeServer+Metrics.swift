import CoreMetrics
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension BridgeServer {
    static func pagesConnected(_ count: Int) {
        Gauge(label: "gbgbridge_pages_connected").record(count)
    }

    /// `GET /metrics`: the exposition, for scrapers only — a request carrying an `Origin` (a page,
    /// the journey's or any other) or fetched from another site is refused.
    static func metricsResponse(_ request: Request, _ exposition: @Sendable () -> [UInt8]) -> Response {
        guard isOperatorRequest(request) else { return Response(status: .forbidden) }
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[.xContentTypeOptions] = "nosniff"
        for (name, value) in [("Cross-Origin-Opener-Policy", "same-origin"), ("Cross-Origin-Resource-Policy", "same-origin")] {
            if let name = HTTPField.Name(name) { headers[name] = value }
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: exposition())))
    }

    /// Serves only `GET /metrics` on `host:port` (`serve --metrics-listen`), for a fleet's
    /// Prometheus on another interface; everything else is 404. Runs until cancelled.
    public static func serveMetrics(host: String, port: Int, logger: Logger, exposition: @escaping @Sendable () -> [UInt8],
                                    onRunning: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: RequestHygieneMiddleware())
        router.get("metrics") { request, _ -> Response in metricsResponse(request, exposition) }
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil),
                              onServerRunning: { channel in onRunning(channel.localAddress?.port ?? port) }, logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }
}
