import Cameras
import GBGBridge
import GBGBridgeMdoc
import GBGBridgeNFC
import MRTD

/// What every page's host gets, whoever serves the page (`BridgeServer` over a WebSocket,
/// `KioskBrowser` over the DevTools pipe, `gbgbridge-soak`, the test rigs): the capture slots
/// (a camera, or the drawn placeholders), nfc.read on the shared reader service, and the request
/// counters of `/metrics`.
@MainActor
package final class HostServices {
    package let nfc: NFCReadService
    /// mdoc.read, sharing the readers with nfc.read (one read of either kind at a time).
    package let mdoc: MdocReadService?
    package let document: CameraService
    package let selfie: CameraService
    private let countsRequests: Bool
    private var requestCounters: [ObjectIdentifier: Task<Void, Never>] = [:]
    private var watcher: CameraWatcher?

    /// - Parameters:
    ///   - countsRequests: whether each page's requests are counted for `/metrics`
    ///     (`HostMetrics.bootstrap` must have run: the counters go to the process's metrics system).
    ///   - documentCamera, selfieCamera: the slots' cameras; the drawings unless told (test rigs).
    package init(nfc: NFCReadService, mdoc: MdocReadService? = nil, countsRequests: Bool = true,
                 documentCamera: CameraSettings = CameraSettings(source: .stub, request: .document),
                 selfieCamera: CameraSettings = CameraSettings(source: .stub, request: .selfie)) {
        self.nfc = nfc
        self.mdoc = mdoc
        self.countsRequests = countsRequests
        if let mdoc {
            nfc.readerBusyElsewhere = { [weak mdoc] in mdoc?.isBusy == true ? MdocReadService.action : nil }
            mdoc.readerBusyElsewhere = { [weak nfc] in nfc?.isBusy == true ? NFCReadService.action : nil }
            mdoc.readers = { [weak nfc] in nfc?.readers ?? [] }
            nfc.onReadersChanged = { [weak mdoc] _ in mdoc?.readersChanged() }
        }
        document = CameraService(role: .document, settings: documentCamera)
        selfie = CameraService(role: .selfie, settings: selfieCamera)
        // nfc.read's {"fromDocumentCapture": true}: the MRZ the page's last document capture read.
        let document = self.document
        nfc.documentCaptureMRZ = { host in
            document.takeMRZ(for: host).mapError { NFCReadService.DocumentCaptureMRZUnavailable($0.description) }.map { keys in
                keys.compactMap { key in key.count == 3 ? try? AccessKey.fields(documentNumber: key[0], dateOfBirth: key[1], dateOfExpiry: key[2]) : nil }
            }
        }
    }

    package var cameras: [CameraService] { [document, selfie] }

    /// Looks at the cameras now, then whenever a video device comes, goes or changes owner.
    package func watchCameras() async {
        for camera in cameras { await camera.refresh() }
        guard watcher == nil, cameras.contains(where: { $0.settings.source != .stub }) else { return }
        watcher = CameraWatcher { [weak self] in
            Task { @MainActor in
                guard let self else { return }
                for camera in self.cameras { await camera.refresh() }
            }
        }
    }

    package func stopWatchingCameras() {
        watcher?.stop()
        watcher = nil
    }

    /// Installs the services on a page's host.
    package func setUp(_ host: BridgeHost) {
        document.install(on: host)
        selfie.install(on: host)
        nfc.attach(to: host)
        mdoc?.attach(to: host)
        if countsRequests { requestCounters[ObjectIdentifier(host)] = HostMetrics.countRequests(of: host) }
    }

    /// Takes them off when the page has gone.
    package func tearDown(_ host: BridgeHost) {
        nfc.detach(from: host)
        mdoc?.detach(from: host)
        document.detach(from: host)
        selfie.detach(from: host)
        requestCounters.removeValue(forKey: ObjectIdentifier(host))?.cancel()
    }
}
