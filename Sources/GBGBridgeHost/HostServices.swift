import GBGBridge
import GBGBridgeNFC
import GBGBridgeStubs

/// What every page's host gets, whoever serves the page (`BridgeServer` over a WebSocket,
/// `KioskBrowser` over the DevTools pipe, `gbgbridge-soak`, the test rigs): the stub cameras,
/// nfc.read on the shared reader service, and the request counters of `/metrics`.
@MainActor
package final class HostServices {
    package let nfc: NFCReadService
    package let document = StubDocumentCamera()
    package let selfie = StubSelfieCamera()
    private let countsRequests: Bool
    private var requestCounters: [ObjectIdentifier: Task<Void, Never>] = [:]

    /// - Parameter countsRequests: whether each page's requests are counted for `/metrics`
    ///   (`HostMetrics.bootstrap` must have run: the counters go to the process's metrics system).
    package init(nfc: NFCReadService, countsRequests: Bool = true) {
        self.nfc = nfc
        self.countsRequests = countsRequests
    }

    /// Installs the services on a page's host.
    package func setUp(_ host: BridgeHost) {
        document.install(on: host)
        selfie.install(on: host)
        nfc.attach(to: host)
        if countsRequests { requestCounters[ObjectIdentifier(host)] = HostMetrics.countRequests(of: host) }
    }

    /// Takes them off when the page has gone.
    package func tearDown(_ host: BridgeHost) {
        nfc.detach(from: host)
        requestCounters.removeValue(forKey: ObjectIdentifier(host))?.cancel()
    }
}
