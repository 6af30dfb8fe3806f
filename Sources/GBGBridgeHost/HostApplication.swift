import CVCertificates
import Foundation
import GBGBridgeRead
import GBGBridge
import GBGBridgeMdoc
import MdocBLE
import GBGBridgeNFC
import MdocRead
import GBGBridgeServer
import Logging
import MRTD
import SmartCard

/// The host as `serve` and `demo` run it, wired from its settings: the reader service (with the
/// read deadline and the Terminal Authentication credentials), the services every page gets, the
/// bridge server's configuration (origins, static journey, metrics, diagnostics), the kiosk
/// browser's, and the separate metrics listener. Built in process by tests; `run` is
/// `HostServer.run` with all of it.
@MainActor
package final class HostApplication {
    package let nfc: NFCReadService
    package let services: HostServices
    /// What the bridge server runs with; a caller may add to it (`demo`'s JSON endpoints) before `run`.
    package var configuration: BridgeServerConfiguration
    package let kiosk: KioskConfiguration?
    package let diagnostics: HostDiagnostics?
    private let metricsListen: ListenAddress?
    /// Reloads the trust store when it changes on disk (`trust refresh`, `trust import`) or on SIGHUP.
    package let trustWatcher: TrustWatcher?
    private let monitorsReaders: Bool
    private let logger: Logger

    /// - Parameters:
    ///   - backend: the readers; `nil` for the kiosk's own (PC/SC, plus libnfc when configured).
    ///   - terminal: Terminal Authentication credentials; `nil` loads those the settings name.
    ///   - countsRequests: count each page's requests for `/metrics` (`HostMetrics.bootstrap` has run).
    ///   - monitorsReaders: watch the readers come and go (real readers), or list them once (a
    ///     fixed in-process reader).
    package init(settings: HostSettings, trust: TrustStore, backend: (any CardReaderBackend)? = nil, terminal: TerminalCredentials? = nil,
                 mdocTrust: MdocTrust? = nil, countsRequests: Bool = true, monitorsReaders: Bool = true, logger: Logger) throws(HostServer.Failure) {
        let readers = backend ?? (settings.libnfcDevice.isEmpty && !settings.libnfcDiscover
            ? PCSCBackend() : CombinedReaderBackend.standard(libnfcDevices: settings.libnfcDevice, libnfcDiscovery: settings.libnfcDiscover))
        nfc = NFCReadService(backend: readers, trustStore: trust, logger: logger)
        let testAnchors = trust.certificates.filter(DoctorChecks.isTestAnchor)
        if !testAnchors.isEmpty {
            logger.warning("trusting \(testAnchors.count) TEST CSCA certificate\(testAnchors.count == 1 ? "" : "s") (\(testAnchors.map(\.subject).joined(separator: "; "))): documents signed with a published test key verify as valid; never on a kiosk that reads real documents")
        }
        nfc.defaultReadTimeout = .seconds(settings.readTimeout)
        if let terminal {
            nfc.terminalCredentials = terminal
        } else if let key = settings.terminalKey {
            do {
                let credentials = try TerminalKey.credentials(certificatePaths: settings.terminalCertificates, key: key)
                nfc.terminalCredentials = credentials
                logger.info("Terminal Authentication as \(credentials.terminals.map(\.holderReference).joined(separator: ", ")) (\(credentials.certificates.count) certificates): DG3/DG4 of EAC documents can be read")
            } catch {
                throw HostServer.Failure(exitCode: 2, description: "terminal credentials: \(error)")
            }
        }
        // mdoc.read trusts the IACAs of the trust stores' iaca/ directories (never their CSCAs).
        let issuers = mdocTrust ?? MdocTrust(storePaths: settings.trust)
        let mdoc = MdocReadService(backend: readers, trust: issuers, logger: logger)
        if !issuers.anchors.isEmpty { logger.info("mdoc.read trusts \(issuers.anchors.count) IACA certificate\(issuers.anchors.count == 1 ? "" : "s")") }
        // BLE after an NFC engagement needs a powered adapter: asked once at start (doctor says why not).
        Task { @MainActor [weak mdoc] in
            let availability = await MdocBluetoothAvailability.probe()
            mdoc?.bluetoothAvailable = availability.isAvailable
        }
        mdoc.qrCamera = CameraQR.engagement(from: settings.documentCamera.source)
        services = HostServices(nfc: nfc, mdoc: mdoc, countsRequests: countsRequests, documentCamera: settings.documentCamera, selfieCamera: settings.selfieCamera)
        var configuration = BridgeServerConfiguration()
        configuration.port = settings.port
        configuration.allowedOrigins = settings.allowOrigin
        configuration.staticDirectory = settings.staticDirectory
        configuration.bridge = BridgeConfiguration(hostVersion: GBGBridgeVersion.current, capabilities: [:])
        configuration.metricsExposition = HostMetrics.exposition
        if let operators = settings.operatorListen { (configuration.operatorHost, configuration.operatorPort) = (operators.host, operators.port) }
        diagnostics = settings.diagnostics ? HostDiagnostics(nfc: nfc, mdoc: mdoc, cameras: services.cameras, trustPaths: settings.trust) : nil
        configuration.diagnostics = diagnostics?.source()
        configuration.maxDiagnosticsStreams = settings.diagnosticsStreams
        configuration.pages = diagnostics?.pages
        if let journey = settings.kiosk, let url = URL(string: journey) {
            var kiosk = KioskConfiguration(journeyURL: url)
            kiosk.allowedOrigins = settings.allowOrigin
            kiosk.headless = settings.headless
            kiosk.userDataDirectory = settings.kioskProfile.map { URL(fileURLWithPath: $0) }
            kiosk.bridge = configuration.bridge
            kiosk.pages = diagnostics?.pages
            kiosk.inspect = settings.inspect
            self.kiosk = kiosk
        } else {
            kiosk = nil
        }
        self.configuration = configuration
        trustWatcher = settings.trust.isEmpty ? nil : TrustWatcher(paths: settings.trust, nfc: nfc, logger: logger)
        trustWatcher?.mdoc = mdoc
        metricsListen = settings.metricsListen
        self.monitorsReaders = monitorsReaders
        self.logger = logger
    }

    /// Serves until `stop` returns (SIGINT/SIGTERM by default); the readers are watched meanwhile.
    package func run(until stop: @escaping @Sendable () async -> Void = HostServer.termination,
                     onRunning: @escaping @Sendable (HostPorts) -> Void) async throws(HostServer.Failure) {
        if monitorsReaders { nfc.startMonitoring() } else { await nfc.refreshReaders() }
        trustWatcher?.start()
        defer { trustWatcher?.stop() }
        await services.watchCameras()
        defer { services.stopWatchingCameras() }
        for camera in services.cameras {
            let probe = camera.status.probe
            logger.info("\(camera.status.slot): \(camera.settings.source) → \(probe.state.rawValue)\(probe.device.map { " \($0)" } ?? "")\(probe.format.map { " \($0)" } ?? "")\(probe.resolution.map { " \($0)" } ?? "")\(probe.message.map { " (\($0))" } ?? "")")
        }
        var metricsServer: Task<Void, Never>?
        if let metricsListen {
            let (host, port, logger) = (metricsListen.host, metricsListen.port, logger)
            metricsServer = Task {
                do {
                    try await BridgeServer.serveMetrics(host: host, port: port, logger: logger, exposition: HostMetrics.exposition) { bound in
                        logger.info("metrics on http://\(host):\(bound)/metrics")
                    }
                } catch {
                    logger.error("--metrics-listen \(host):\(port): \(error)")
                }
            }
        }
        defer { metricsServer?.cancel() }
        try await HostServer.run(configuration, services: services, logger: logger, kiosk: kiosk, until: stop, onRunning: onRunning)
    }
}
