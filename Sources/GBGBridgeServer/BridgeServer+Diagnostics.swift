import HTTPTypes
import Hummingbird
import NIOCore

extension BridgeServer {
    /// Whether a request may see operators' surfaces (`/metrics`, `/diagnostics.json`, the
    /// `/diagnostics` page): `OperatorAccess` — not a browser, or a browser's own navigation.
    static func isOperatorRequest(_ request: Request) -> Bool {
        OperatorAccess.judge(request.headers) == .operatorRequest
    }

    /// The diagnostics page's own subresources: an operator request, or a same-origin
    /// subresource with a token the page was handed (`?page=`).
    func isDiagnosticsPageRequest(_ request: Request) -> Bool {
        switch OperatorAccess.judge(request.headers) {
        case .operatorRequest: return true
        case .refused: return false
        case .subresource: return operatorPageTokens.isValid(request.uri.queryParameters.get("page"))
        }
    }

    /// `/diagnostics` (the page, its script and style), `/diagnostics.json` (one snapshot) and
    /// `/diagnostics/events` (the snapshot as server-sent events when it changes, at most once a
    /// second, with a keep-alive comment while it does not; for `diagnosticsStreamLifetime`, after
    /// which the page's EventSource reconnects). At most `maxDiagnosticsStreams` streams are open:
    /// a new one ends the oldest. Refused (403) to a journey's scripts, whatever their origin
    /// (`OperatorAccess`).
    func addDiagnosticsRoutes(to router: Router<BridgeRequestContext>, snapshot: @escaping @Sendable () async -> [UInt8]) {
        router.get("diagnostics") { [self] request, _ -> Response in
            guard Self.isOperatorRequest(request) else { return Response(status: .forbidden) }
            let page = operatorPageTokens.issue()
            return Response(status: .ok, headers: Self.operatorHeaders("text/html; charset=utf-8"),
                            body: .init(byteBuffer: ByteBuffer(string: DiagnosticsPage.html(token: page))))
        }
        func asset(_ path: RouterPath, _ type: String, _ body: String) {
            router.get(path) { [self] request, _ -> Response in
                guard isDiagnosticsPageRequest(request) else { return Response(status: .forbidden) }
                return Response(status: .ok, headers: Self.operatorHeaders(type), body: .init(byteBuffer: ByteBuffer(string: body)))
            }
        }
        asset("diagnostics/app.js", "text/javascript; charset=utf-8", DiagnosticsPage.script)
        asset("diagnostics/app.css", "text/css; charset=utf-8", DiagnosticsPage.style)
        router.get("diagnostics.json") { [self] request, _ -> Response in
            guard isDiagnosticsPageRequest(request) else { return Response(status: .forbidden) }
            let body = await snapshot()
            return Response(status: .ok, headers: Self.operatorHeaders("application/json; charset=utf-8"),
                            body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("diagnostics/events") { [self] request, context -> Response in
            guard isDiagnosticsPageRequest(request) else { return Response(status: .forbidden) }
            let ticket = diagnosticsStreams.open()
            let (lifetime, keepAlive) = (configuration.diagnosticsStreamLifetime, configuration.diagnosticsKeepAlive)
            let channel = context.channel
            let body = ResponseBody { [self] writer in
                defer {
                    diagnosticsStreams.close(ticket)
                    // Ended (lifetime, eviction, stop): the connection goes too, not into keep-alive.
                    channel.close(promise: nil)
                }
                try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                let ends = ContinuousClock.now + lifetime
                var last: [UInt8] = []
                var lastWrite = ContinuousClock.now
                var nextSnapshot = ContinuousClock.now
                while !isStopping, !ticket.isEvicted, ContinuousClock.now < ends {
                    let now = ContinuousClock.now
                    if now >= nextSnapshot {
                        nextSnapshot = now + .seconds(1)
                        let current = await snapshot()
                        if current != last {
                            last = current
                            var event = ByteBuffer(string: "event: snapshot\ndata: ")
                            event.writeBytes(current)
                            event.writeString("\n\n")
                            try await writer.write(event)
                            lastWrite = now
                        } else if now - lastWrite >= keepAlive {
                            try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                            lastWrite = now
                        }
                    }
                    try await Task.sleep(for: DiagnosticsStreams.pollInterval)
                }
                try await writer.finish(nil)
            }
            var headers = Self.operatorHeaders("text/event-stream; charset=utf-8")
            headers[.connection] = "close"  // it is closed when the stream ends (BridgeRequestContext)
            return Response(status: .ok, headers: headers, body: body)
        }
    }

    static func operatorHeaders(_ contentType: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            + "img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        // A same-origin page that opens an operator page in a window gets no handle on it.
        for (name, value) in [("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"), ("Cross-Origin-Opener-Policy", "same-origin"),
                              ("Cross-Origin-Resource-Policy", "same-origin")] {
            if let name = HTTPField.Name(name) { headers[name] = value }
        }
        return headers
    }
}
