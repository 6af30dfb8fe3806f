import Foundation
import GBGBridge

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
    /// How many pages (WebSockets) may be connected at once.
    public var maxConnections = 16
    /// How many TCP connections may be open at once, pages included; beyond that the server
    /// stops accepting until one closes.
    public var maxOpenConnections = 128
    /// A new connection must send its request head within this time.
    public var headerTimeout: Duration = .seconds(10)
    /// A keep-alive HTTP connection idle this long is closed.
    public var idleTimeout: Duration = .seconds(30)
    /// A connection still plain HTTP after this long is closed (pages reconnect).
    public var httpConnectionLifetime: Duration = .seconds(120)
    /// Messages a page may send per second on average (bursts of twice that); a faster page is
    /// read more slowly, so TCP pushes back on it.
    public var maxMessagesPerSecond = 200
    /// Bytes the host may hold queued for a page that does not read them; past that the page is
    /// disconnected (close 1008) and its requests are cancelled.
    public var maxOutboundBytes = 32 << 20
    /// How long a WebSocket may take to answer our close before it is dropped.
    public var closeTimeout: Duration = .seconds(2)
    /// Requests for actions no capability handles are answered `unsupported` at once (a server
    /// has no app code that could answer `pendingRequests` later). Set `false` to handle them in
    /// `setUpHost` (a delegate and `respond(to:…)`).
    public var answerUnhandledRequests = true
    /// The bridge configuration each page's host gets (version, bootstrap script, bounds).
    public var bridge = BridgeConfiguration(hostVersion: "1.0", capabilities: [:])
    /// JSON endpoints beside the bridge, by path (e.g. `/demo/verify-evidence`): POST only, from
    /// an allowed origin only, a body of at most `maxMessageBytes`. For demos and rigs (a stand-in
    /// backend on the kiosk); a real backend lives elsewhere.
    public var jsonEndpoints: [String: JSONEndpoint] = [:]

    /// The metrics in the Prometheus text exposition format (0.0.4), served as `GET /metrics` on
    /// the operators' listener when set. Refused (403) to any request that carries an `Origin`:
    /// scrapers send none, pages do.
    public var metricsExposition: (@Sendable () -> [UInt8])?

    /// Operators' live view (`gbgbridge serve --diagnostics`): when set, `GET /diagnostics` (a page),
    /// `/diagnostics.json` (this JSON document, made anew for each request) and `/diagnostics/events`
    /// (the same as server-sent events, one a second), on the operators' listener. Like `/metrics`,
    /// refused (403) to any request carrying an `Origin` or fetched from another site.
    public var diagnostics: (@Sendable () async -> [UInt8])?

    /// Where `/metrics` and `/diagnostics*` are served (issue 49): a listener of their own, on
    /// another port than the journey's, so that no journey origin — its service workers included —
    /// ever shares a scope with them; the journey's port answers them 404. `nil` port: the
    /// journey's port + 1 (a free one when the journey's is 0). Loopback by default.
    public var operatorHost: String = "127.0.0.1"
    public var operatorPort: Int?
    /// TCP connections the operators' listener keeps open at once.
    public var maxOperatorConnections = 32
    /// `/diagnostics/events` streams open at once; a new one ends the oldest. Each holds a
    /// connection, so the cap keeps them from taking the connections pages need.
    public var maxDiagnosticsStreams = 8
    /// How long one `/diagnostics/events` stream lasts (the page's EventSource then reconnects).
    public var diagnosticsStreamLifetime: Duration = .seconds(60)
    /// A stream whose snapshot has not changed gets a keep-alive comment this often.
    public var diagnosticsKeepAlive: Duration = .seconds(15)

    /// Follows every page this server bridges (`lastError`, recent messages, open requests) for
    /// `diagnostics`.
    public var pages: PageDiagnostics?

    /// Answers a POSTed JSON body with an HTTP status and a JSON body.
    public typealias JSONEndpoint = @Sendable (_ body: [UInt8]) async -> (status: Int, body: [UInt8])

    public init() {}
}
