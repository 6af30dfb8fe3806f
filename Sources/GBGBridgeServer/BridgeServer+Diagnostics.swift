import HTTPTypes
import Hummingbird
import NIOCore

extension BridgeServer {
    /// Whether a request may see operators' surfaces (`/metrics`, `/diagnostics…`): no `Origin`
    /// (scrapers and a browser's own navigation send none; a journey's scripts, cross-origin or
    /// WebSocket, always do) and not fetched from another site.
    static func isOperatorRequest(_ request: Request) -> Bool {
        guard request.headers[.origin] == nil else { return false }
        if let site = request.headers.secFetchSite, site != "same-origin", site != "none" { return false }
        return true
    }

    /// `/diagnostics` (the page, its script and style), `/diagnostics.json` (one snapshot) and
    /// `/diagnostics/events` (a snapshot a second as server-sent events, for a minute; the page's
    /// EventSource reconnects). All refused (403) to a journey (see `isOperatorRequest`).
    func addDiagnosticsRoutes(to router: Router<BasicRequestContext>, snapshot: @escaping @Sendable () async -> [UInt8]) {
        func asset(_ path: RouterPath, _ type: String, _ body: String) {
            router.get(path) { request, _ -> Response in
                guard Self.isOperatorRequest(request) else { return Response(status: .forbidden) }
                return Response(status: .ok, headers: Self.operatorHeaders(type), body: .init(byteBuffer: ByteBuffer(string: body)))
            }
        }
        asset("diagnostics", "text/html; charset=utf-8", DiagnosticsPage.html)
        asset("diagnostics/app.js", "text/javascript; charset=utf-8", DiagnosticsPage.script)
        asset("diagnostics/app.css", "text/css; charset=utf-8", DiagnosticsPage.style)
        router.get("diagnostics.json") { request, _ -> Response in
            guard Self.isOperatorRequest(request) else { return Response(status: .forbidden) }
            let body = await snapshot()
            return Response(status: .ok, headers: Self.operatorHeaders("application/json; charset=utf-8"),
                            body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("diagnostics/events") { [self] request, _ -> Response in
            guard Self.isOperatorRequest(request) else { return Response(status: .forbidden) }
            let body = ResponseBody { [self] writer in
                try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                for _ in 0..<60 where !isStopping {
                    var event = ByteBuffer(string: "event: snapshot\ndata: ")
                    event.writeBytes(await snapshot())
                    event.writeString("\n\n")
                    try await writer.write(event)
                    try await Task.sleep(for: .seconds(1))
                }
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: Self.operatorHeaders("text/event-stream; charset=utf-8"), body: body)
        }
    }

    static func operatorHeaders(_ contentType: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            + "img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        for (name, value) in [("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer")] {
            if let name = HTTPField.Name(name) { headers[name] = value }
        }
        return headers
    }
}
