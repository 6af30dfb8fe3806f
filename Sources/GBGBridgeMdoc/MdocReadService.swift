import CoreMetrics
import Foundation
import GBGBridge
import Logging
import Mdoc
import MdocNFC
import MdocRead
import SmartCardCore
import TextSanitizing

/// `mdoc.read` for GBGBridge hosts: reads an ISO 18013-5 mdoc (mDL, EU PID) a phone presents at
/// the NFC reader, verifies it against the IACAs trusted, and answers with the elements, the
/// verdicts and the portrait re-encoded in the confined decoder (Docs/mdoc.md). It shares the
/// readers with `nfc.read`: one read at a time, of either kind (`BUSY` otherwise).
@MainActor
public final class MdocReadService {
    public nonisolated static let action = "mdoc.read"
    public nonisolated static let version = "1.0"

    public let backend: any CardReaderBackend
    public var trust: MdocTrust
    /// Reader authentication, when the kiosk has a reader certificate.
    public var readerKey: ReaderAuthenticationKey?
    public var logger: Logger
    /// Whether another read (nfc.read) holds the readers: its action, or nil.
    public var readerBusyElsewhere: (@MainActor () -> String?)?
    /// The readers, as the nfc.read service sees them (nil: ask the back end).
    public var readers: (@MainActor () -> [ReaderInfo])?

    /// Reads a holder's QR engagement with the kiosk's document camera within a time limit
    /// (`qrCode: {"fromCamera": true}`); nil when the kiosk has no camera for it (the document
    /// slot is the drawn stub). Typed errors: `MDOC_TIMEOUT` when no code showed in time,
    /// `MDOC_CAMERA` when the camera failed, the engagement's own refusal for a bad code.
    public var qrCamera: (@Sendable (Duration) async throws(MdocError) -> DeviceEngagement)? {
        didSet { if (qrCamera == nil) != (oldValue == nil) { readersChanged() } }
    }

    public private(set) var activeRead: String?
    /// Whether BLE data retrieval can be offered (a powered adapter BlueZ lists); announced in
    /// capability.query's `transports`.
    public var bluetoothAvailable = false {
        didSet { if bluetoothAvailable != oldValue { readersChanged() } }
    }
    var readLog: [MdocReadRecord] = []
    var readsFinishedCount = 0
    private var hosts: [ObjectIdentifier: WeakHost] = [:]
    struct WeakHost { weak var host: BridgeHost? }

    public init(backend: any CardReaderBackend, trust: MdocTrust, logger: Logger = Logger(label: "gbgbridge.mdoc")) {
        self.backend = backend
        self.trust = trust
        self.logger = logger
    }

    public var isBusy: Bool { activeRead != nil }

    public func attach(to host: BridgeHost) {
        hosts[ObjectIdentifier(host)] = WeakHost(host: host)
        host.registerCustomCapability(Self.action, version: Self.version) { [weak self, weak host] request, responder in
            guard let self, let host else {
                responder.fail(.nfcNotAvailable, message: "the host is shutting down", recoverable: true)
                return
            }
            await self.serve(request, responder: responder, host: host)
        }
        updateCapability(on: host)
    }

    public func detach(from host: BridgeHost) {
        hosts.removeValue(forKey: ObjectIdentifier(host))
        host.unregisterCustomCapability(Self.action)
    }

    /// Re-announces the capability (the readers changed).
    public func readersChanged() {
        hosts = hosts.filter { $0.value.host != nil }
        for host in hosts.values.compactMap(\.host) { updateCapability(on: host) }
    }

    var constraints: [String: JSONValue] {
        [
            "docTypes": .array(MdocDocType.known.map(JSONValue.string)),
            // BLE only while BlueZ has a powered adapter (HostApplication asks at start).
            "transports": .array(([("nfc", true), ("ble", bluetoothAvailable)]).filter(\.1).map { .string($0.0) }),
            "handover": .array([.string("static"), .string("negotiated")]),
            // How a holder may engage: at the NFC reader, or by the QR code the page read (qrCode), which needs BLE.
            "engagement": .array(([("nfc", true), ("qr", bluetoothAvailable)]).filter(\.1).map { .string($0.0) }),
            // qrCode: {"fromCamera": true}: the kiosk's document camera reads the code (and BLE carries the session).
            "qrFromCamera": .bool(bluetoothAvailable && qrCamera != nil),
            "presets": .array(MdocDocType.presetNames.map(JSONValue.string)),
            "readerAuthentication": .bool(readerKey != nil),
            "trustedIssuers": .number(Double(trust.anchors.count)),
        ]
    }

    private func updateCapability(on host: BridgeHost) {
        let present = readers?() ?? []
        host.updateCustomCapability(Self.action, supported: readers == nil || !present.isEmpty, permissionState: .notApplicable, constraints: constraints)
    }

    private func serve(_ message: BridgeMessage, responder: BridgeResponder, host: BridgeHost) async {
        let parsed: MdocReadRequest
        do {
            parsed = try MdocReadRequest(message.payload.data)
        } catch {
            responder.fail(.invalidRequest, message: error.message, recoverable: false)
            return
        }
        if parsed.qrFromCamera, qrCamera == nil {
            responder.fail(.unsupported, message: "qrCode.fromCamera: this kiosk has no document camera to read a QR code with (its document slot is the drawn stub); give the code's text as qrCode", recoverable: false)
            return
        }
        // A QR engagement needs no NFC reader: another read at the reader does not stand in its way.
        if !parsed.engagesByQR, let other = readerBusyElsewhere?() {
            responder.fail(.busy, message: "\(other) is using the reader", recoverable: true)
            return
        }
        guard activeRead == nil else {
            responder.fail(.busy, message: "another mdoc.read is in progress", recoverable: true)
            return
        }
        activeRead = message.correlationId
        defer { activeRead = nil }
        let started = ContinuousClock.now
        var options = MdocReadOptions(requests: [parsed.request], readerKey: readerKey, timeout: parsed.readTimeout)
        options.handover = parsed.handover == .automatic ? .automatic : parsed.handover == .static ? .static : .negotiated
        options.transport = parsed.transport
        let job = MdocReadJob(reader: parsed.reader, options: options, cardTimeout: parsed.timeout, trust: trust)
        let backend = self.backend
        let camera = parsed.qrFromCamera ? qrCamera : nil
        let outcome: Result<MdocReadJob.Result, MdocError> = await Task.detached {
            do throws(MdocError) {
                if let camera {
                    guard let carrier = await MdocReadJob.bluetooth(for: job.options) else {
                        throw MdocError(.unsupported, "a QR engagement needs BLE, which this kiosk cannot use now: BLE needs a powered Bluetooth adapter (doctor's bluetooth check says why)")
                    }
                    var job = job
                    job.options.alternative = carrier
                    // The holder has timeoutSeconds to show the code, as to present the phone at the reader.
                    let shown = ContinuousClock.now
                    let engagement = try await camera(parsed.timeout)
                    return .success(try await job.run(qrEngagement: engagement, engagementTime: ContinuousClock.now - shown))
                }
                if let engagement = parsed.qrEngagement { return .success(try await job.run(qrEngagement: engagement)) }
                return .success(try await job.run(on: backend))
            } catch {
                return .failure(error)
            }
        }.value
        let id = LogText.clip(message.correlationId)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var entry = MdocReadRecord(id: LogText.clip(message.correlationId, to: 64), reader: parsed.reader, finished: Self.finishedNow(),
                                   seconds: (seconds * 1000).rounded() / 1000, outcome: "")
        switch outcome {
        case .success(let result):
            entry.reader = result.reader
            guard let report = result.reports.first else {
                entry.outcome = BridgeErrorCode.documentUnavailable.rawValue
                record(entry)
                responder.fail(.documentUnavailable, message: "the holder returned no document", recoverable: true)
                return
            }
            entry.outcome = report.verified ? "verified" : "unverified"
            entry.docType = report.docType
            entry.issuer = report.issuer.rawValue
            entry.device = report.device.rawValue
            entry.transport = report.transport?.carrier
            entry.handover = report.transport?.handover
            entry.apdus = report.transport?.apdus
            entry.elements = report.elements.values.map(\.count).reduce(0, +)
            entry.withheld = report.withheld.count
            record(entry)
            guard case .object(var data) = report.jsonValue else { return }
            data["reader"] = .string(result.reader)
            Counter(label: "gbgbridge_mdoc_reads_total", dimensions: [("outcome", report.verified ? "verified" : "unverified")]).increment()
            Timer(label: "gbgbridge_mdoc_read_seconds").recordNanoseconds(Int64((ContinuousClock.now - started).components.seconds * 1_000_000_000
                                                                                + (ContinuousClock.now - started).components.attoseconds / 1_000_000_000))
            logger.info("mdoc.read \(id): \(report.docType), issuer \(report.issuer.rawValue), device \(report.device.rawValue), \(report.elements.values.map(\.count).reduce(0, +)) elements, \(report.withheld.count) withheld")
            responder.succeed(data)
        case .failure(let error):
            let (code, recoverable) = Self.bridgeCode(error)
            entry.outcome = code.rawValue
            entry.mdocCode = error.code.rawValue
            record(entry)
            Counter(label: "gbgbridge_mdoc_reads_total", dimensions: [("outcome", code.rawValue)]).increment()
            logger.info("mdoc.read \(id): \(code.rawValue) [\(error.code.rawValue)] (\(LogText.clip(error.reason, to: 300)))")
            responder.fail(code, message: error.reason, recoverable: recoverable)
        }
    }

    /// The page's error code for a failed read.
    nonisolated static func bridgeCode(_ error: MdocError) -> (BridgeErrorCode, Bool) {
        switch error.code {
        case .timeout: return (.cardTimeout, true)
        case .noDocument, .sessionTerminated: return (.documentUnavailable, true)
        case .invalidRequest: return (.invalidRequest, false)
        case .unsupported: return (.unsupported, true)
        case .transport: return (error.reason.contains("pcscd") || error.reason.contains("SERVICE_UNAVAILABLE") ? .nfcNotAvailable : .communicationError, true)
        case .readerKey: return (.communicationError, false)
        case .cameraUnavailable: return (.cameraError, true)
        default: return (.chipError, true)
        }
    }
}
