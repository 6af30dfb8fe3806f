import GBGBridge

/// One journey page bridged to its own `BridgeHost`, whatever carries the page's messages (a
/// WebSocket for `BridgeServer`, the DevTools pipe for `KioskBrowser`): the host is made with the
/// rich capability query and the unsupported-action answer, given the application's services
/// (`setUpHost`) and followed by the operators' diagnostics; `end(reason:)` takes all of that
/// down again, once. The carriers keep only what is theirs: framing, rate limits, delivery.
@MainActor
final class BridgedPage {
    /// What a bridged page is made with; `BridgeServerConfiguration` and `KioskConfiguration` give it.
    struct Settings {
        var bridge: BridgeConfiguration
        var answerUnhandledRequests: Bool
        var pages: PageDiagnostics?
    }

    let host: BridgeHost
    let origin: String
    /// The host holds its transport weakly: the page keeps it for as long as it lives.
    private let transport: any BridgeTransport
    private let settings: Settings
    private let tearDownHost: BridgeServer.HostSetup
    private var ended = false

    init(_ settings: Settings, transport: any BridgeTransport, origin: String, via: String,
         setUpHost: BridgeServer.HostSetup, tearDownHost: @escaping BridgeServer.HostSetup) {
        self.settings = settings
        self.transport = transport
        self.origin = origin
        self.tearDownHost = tearDownHost
        host = BridgeHost(configuration: settings.bridge, queryProvider: .rich)
        host.attach(transport: transport)
        if settings.answerUnhandledRequests { host.delegate = UnsupportedActionResponder.shared }
        setUpHost(host)
        settings.pages?.track(host, origin: origin, via: via)
    }

    /// A message the page sent.
    func receive(_ text: String) { host.receive(text) }

    /// The page has gone (`reason` goes to requests still open); the services are taken off.
    func end(reason: String) {
        guard !ended else { return }
        ended = true
        host.detachTransport(reason: reason)
        settings.pages?.untrack(host)
        tearDownHost(host)
    }
}

extension BridgeServerConfiguration {
    var pageSettings: BridgedPage.Settings { .init(bridge: bridge, answerUnhandledRequests: answerUnhandledRequests, pages: pages) }
}

extension KioskConfiguration {
    var pageSettings: BridgedPage.Settings { .init(bridge: bridge, answerUnhandledRequests: answerUnhandledRequests, pages: pages) }
}
