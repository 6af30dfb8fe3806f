import ChipRead
import CVCertificates
import Foundation
import GBGBridge
import Logging
import MRTD
import SmartCardCore

/// `nfc.read` for GBGBridge hosts: reads ePassport / eID chips through a `CardReaderBackend` and
/// answers with the contract of design.md §4, with live `nfc.read.progress` events.
///
/// One service per process owns the readers: it tracks reader hot-plug (and tells every attached
/// host's journey with `capabilities.changed`), and allows one read at a time (`BUSY` otherwise),
/// whichever page asks. Attach each `BridgeHost` with `attach(to:)`.
@MainActor
public final class NFCReadService {
    public nonisolated static let action = "nfc.read"
    public nonisolated static let progressEvent = "nfc.read.progress"
    public nonisolated static let capabilitiesChangedEvent = "capabilities.changed"
    public nonisolated static let version = "1.0"

    public let backend: any CardReaderBackend
    public var trustStore: TrustStore
    /// An Inspection System's credentials for Terminal Authentication: with them a page may ask
    /// for DG3 (fingerprints) and DG4 (iris) of EAC documents (`constraints.extendedAccessControl`).
    public var terminalCredentials: TerminalCredentials?
    /// How long a read may take once the card is there, for requests without `readTimeoutSeconds`.
    public var defaultReadTimeout: Duration = ReadOptions.defaultReadTimeout
    /// The access keys of a page's last document capture, for `accessKey: {"fromDocumentCapture":
    /// true}`: the candidates read from the photo (best first, at most 3) the chip is tried with,
    /// or why there are none (in words for the page). Taken once: gone after they have been used.
    /// Nil: no document camera reads MRZs here.
    public var documentCaptureMRZ: (@MainActor (BridgeHost) -> Result<[AccessKey], DocumentCaptureMRZUnavailable>)?
    /// The access-control protocols this reader performs (reported in `constraints`).
    public var accessControlProtocols: [String] = ["PACE", "BAC"]

    /// Whether another kind of read (mdoc.read) holds the readers: its action, or nil.
    public var readerBusyElsewhere: (@MainActor () -> String?)?
    /// Told when the readers change (mdoc.read announces its capability from the same readers).
    public var onReadersChanged: (@MainActor ([ReaderInfo]) -> Void)?

    public private(set) var readers: [ReaderInfo] = []
    public private(set) var permissionState: PermissionState = .notApplicable
    /// Whether a read is running.
    public var isBusy: Bool { activeRead != nil }

    private var hosts: [ObjectIdentifier: WeakHost] = [:]
    /// The correlation id of the read in progress.
    private var activeRead: String?
    private var monitor: Task<Void, Never>?
    /// Where reads and reader changes are logged (never an access key or chip data).
    public var logger: Logger
    /// The last reads, phase by phase, for operators (`serve --diagnostics`); nothing of a document.
    public nonisolated let readLog = NFCReadLog()

    struct WeakHost { weak var host: BridgeHost? }

    /// Why a page has no document-capture MRZ to read the chip with.
    public struct DocumentCaptureMRZUnavailable: Error, Sendable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public init(backend: any CardReaderBackend, trustStore: TrustStore = TrustStore(),
                logger: Logger = Logger(label: "gbgbridge.nfc")) {
        self.backend = backend
        self.trustStore = trustStore
        self.logger = logger
    }

    // MARK: Hosts

    /// Registers `nfc.read` on `host`, masks access keys in its message log, and reports the
    /// current reader state in its capabilities.
    public func attach(to host: BridgeHost) {
        hosts[ObjectIdentifier(host)] = WeakHost(host: host)
        host.registerCustomCapability(Self.action, version: Self.version) { [weak self, weak host] request, responder in
            guard let self, let host else {
                responder.fail(.nfcNotAvailable, message: "the host is shutting down", recoverable: true)
                return
            }
            await self.serve(request, responder: responder, host: host)
        }
        let previous = host.logRedactor
        host.logRedactor = { message in NFCReadRequest.redacted(previous?(message) ?? message) }
        updateCapability(on: host)
    }

    /// Stops reporting to `host`.
    public func detach(from host: BridgeHost) {
        hosts.removeValue(forKey: ObjectIdentifier(host))
        host.unregisterCustomCapability(Self.action)
    }

    private var liveHosts: [BridgeHost] {
        hosts = hosts.filter { $0.value.host != nil }
        return hosts.values.compactMap(\.host)
    }

    private var capabilityInfo: (supported: Bool, constraints: [String: JSONValue]) {
        (!readers.isEmpty, [
            "accessControl": .array(accessControlProtocols.map { .string($0) }),
            "readers": .array(readers.map { .string($0.name) }),
            "extendedAccessControl": .bool(terminalCredentials != nil),
        ])
    }

    private func updateCapability(on host: BridgeHost) {
        let info = capabilityInfo
        host.updateCustomCapability(Self.action, supported: info.supported, permissionState: permissionState,
                                    constraints: info.constraints)
    }

    // MARK: Readers

    /// Asks the back end for its readers now and updates every host; returns whether anything changed.
    @discardableResult
    public func refreshReaders() async -> Bool {
        let newReaders: [ReaderInfo]
        let newPermission: PermissionState
        do {
            newReaders = try await backend.readers()
            newPermission = .granted
        } catch where Task.isCancelled || error is CancellationError || (error as? SmartCardError)?.code == .cancelled {
            // Our own task was cancelled (its page went away): that says nothing about the readers.
            return false
        } catch let error as SmartCardError {
            newReaders = []
            newPermission = error.code == .permissionDenied ? .denied : .notApplicable
            if error.code != .serviceUnavailable { logger.warning("listing readers failed: \(error.reason)") }
        } catch {
            newReaders = []
            newPermission = .notApplicable
        }
        return apply(readers: newReaders, permission: newPermission)
    }

    private func apply(readers newReaders: [ReaderInfo], permission: PermissionState) -> Bool {
        let changed = newReaders.map(\.name) != readers.map(\.name) || permission != permissionState
        readers = newReaders
        permissionState = permission
        guard changed else { return false }
        logger.info("readers: \(newReaders.isEmpty ? "none" : newReaders.map(\.name).joined(separator: ", "))")
        NFCReadMetrics.readersConnected(newReaders.count)
        onReadersChanged?(newReaders)
        for host in liveHosts {
            updateCapability(on: host)
            host.send(event: Self.capabilitiesChangedEvent, data: Self.capabilityPayload(host, changed: [Self.action]))
        }
        return true
    }

    static func capabilityPayload(_ host: BridgeHost, changed: [String]) -> [String: JSONValue] {
        var data = host.capabilityQueryData()
        data["changed"] = .array(changed.map { .string($0) })
        return data
    }

    /// Follows reader plug-in and removal until `stopMonitoring()`.
    public func startMonitoring() {
        guard monitor == nil else { return }
        monitor = Task { [weak self] in
            guard let self else { return }
            await self.refreshReaders()
            while !Task.isCancelled {
                do {
                    _ = try await self.backend.waitForReaderChange(timeout: .seconds(60))
                    await self.refreshReaders()
                } catch {
                    // pcscd away or refusing: look again in a while.
                    await self.refreshReaders()
                    try? await Task.sleep(for: .seconds(2))
                }
            }
        }
    }

    public func stopMonitoring() {
        monitor?.cancel()
        monitor = nil
    }

    // MARK: Reading

    /// Serves one `nfc.read` inside the host's task for the request: when the host cancels the
    /// request (its page went away), the read is cancelled with it.
    private func serve(_ request: BridgeMessage, responder: BridgeResponder, host: BridgeHost) async {
        let parsed: NFCReadRequest
        do {
            parsed = try NFCReadRequest(request.payload.data)
        } catch {
            responder.fail(.invalidRequest, message: error.message, recoverable: false)
            return
        }
        guard activeRead == nil else {
            responder.fail(.busy, message: "another nfc.read is in progress", recoverable: true)
            return
        }
        if let other = readerBusyElsewhere?() {
            responder.fail(.busy, message: "\(other) is using the reader", recoverable: true)
            return
        }
        var parsedRequest = parsed
        if parsedRequest.accessKey == nil {
            // The key from this page's last document capture (held briefly, taken once, never logged).
            guard let provider = documentCaptureMRZ else {
                responder.fail(.invalidRequest, message: "accessKey.fromDocumentCapture: this host reads no MRZ from document captures", recoverable: false)
                return
            }
            switch provider(host) {
            case .failure(let reason):
                responder.fail(.invalidRequest, message: "accessKey.fromDocumentCapture: \(reason.description)", recoverable: false)
                return
            case .success(let keys):
                guard let first = keys.first else {
                    responder.fail(.invalidRequest, message: "accessKey.fromDocumentCapture: the captured MRZ holds no access key", recoverable: false)
                    return
                }
                parsedRequest.accessKey = first
                parsedRequest.keyCandidates = Array(keys.prefix(ReadJob.maximumKeys))
            }
        }
        activeRead = request.correlationId
        defer { activeRead = nil }
        await perform(parsedRequest, requestId: request.correlationId, responder: responder, host: host)
    }

    private func perform(_ request: NFCReadRequest, requestId: String, responder: BridgeResponder, host: BridgeHost) async {
        let timeline = readLog.begin()
        await refreshReaders()
        guard !Task.isCancelled else {
            logger.info("nfc.read \(LogText.clip(requestId)): CANCELLED (the request was cancelled before the read began)")
            Self.finished(timeline, in: readLog, outcome: BridgeErrorCode.cancelled.rawValue)
            responder.fail(.cancelled, message: "the read was cancelled", recoverable: true)
            return
        }
        let matching = readers.filter { reader in request.reader.map { reader.name.localizedCaseInsensitiveContains($0) } ?? true }
        guard !matching.isEmpty else {
            let message = readers.isEmpty ? "no NFC reader is connected"
                : "no reader matches '\(LogText.clip(request.reader ?? ""))' (readers: \(readers.map { LogText.clip($0.name) }.joined(separator: ", ")))"
            Self.finished(timeline, in: readLog, outcome: BridgeErrorCode.nfcNotAvailable.rawValue)
            responder.respond(status: .unsupported, data: nil, error: BridgeErrorPayload(.nfcNotAvailable, message: message, recoverable: false))
            return
        }
        // Progress goes through one ordered stream so events never overtake each other or the response.
        let (events, sink) = AsyncStream.makeStream(of: ReadProgress.self, bufferingPolicy: .unbounded)
        let forwarder = Task { @MainActor [weak host] in
            var last: (ReadProgress.Phase, String?, Int, String?)?
            for await progress in events {
                let key = (progress.phase, progress.file, progress.percent, progress.reason)
                if let last, last == key { continue }
                last = key
                host?.send(event: Self.progressEvent, data: Self.progressData(progress, requestId: requestId))
            }
        }
        var request = request
        if request.readTimeout == nil { request.readTimeout = defaultReadTimeout }
        let outcome = await Self.read(request, backend: backend, trustStore: trustStore, terminal: terminalCredentials, progress: sink,
                                      timeline: (readLog, timeline))
        sink.finish()
        await forwarder.value
        switch outcome {
        case .success(let (report, evidence)):
            do {
                var data = try JSONValue.object(encoding: report)
                if let evidence { data["evidence"] = try JSONValue(encoding: evidence) }
                responder.succeed(data)
                logger.info("nfc.read \(LogText.clip(requestId)): read \(report.dataGroupsRead.joined(separator: ",")), passive \(report.verification.passive.status.rawValue)")
            } catch {
                responder.fail(.chipError, message: "the result could not be encoded", recoverable: true)
            }
        case .failure(let failure):
            logger.info("nfc.read \(LogText.clip(requestId)): \(failure.code.rawValue) (\(LogText.clip(failure.message, to: 300)))")
            responder.fail(failure.code, message: failure.message, recoverable: failure.recoverable)
        }
    }

    /// The read itself, off the main actor; its phases go to `timeline` (and the metrics) as they happen.
    nonisolated static func read(_ request: NFCReadRequest, backend: any CardReaderBackend, trustStore: TrustStore,
                                 terminal: TerminalCredentials? = nil, progress: AsyncStream<ReadProgress>.Continuation,
                                 timeline: (log: NFCReadLog, read: ReadTimeline)? = nil) async -> Result<(ReadReport, ChipEvidence?), Failure> {
        let report = { @Sendable (step: ReadProgress) in
            timeline?.read.note(step)
            progress.yield(step)
        }
        func finish(_ outcome: String, waitForCard: Duration? = nil, result: PassportReadResult? = nil) {
            NFCReadMetrics.finished(outcome: outcome, waitForCard: waitForCard, result: result)
            if let timeline { timeline.log.finish(timeline.read, outcome: outcome, result: result) }
        }
        var options = ReadOptions(dataGroups: request.dataGroups, verifyPassive: request.verifyPassive,
                                  verifyChip: request.verifyChip, verifyActive: request.verifyActive, trustStore: trustStore)
        options.activeAuthenticationChallenge = request.activeAuthenticationChallenge
        options.terminal = terminal
        options.readTimeout = request.readTimeout ?? ReadOptions.defaultReadTimeout
        guard let accessKey = request.accessKey else {
            return .failure(Failure(code: .invalidRequest, message: "accessKey is required", recoverable: false))
        }
        let job = ReadJob(reader: request.reader, accessKey: accessKey, options: options, cardTimeout: request.timeout)
        let cardFound = { @Sendable (step: ReadProgress) in
            if step.phase == .cardDetected, let name = step.file { timeline?.read.cardFound(on: name) }
            report(step)
        }
        // Keys read from a photo: the chip decides which, if any, is right (issue 50).
        let outcome: ReadJob.Outcome
        var trial: ReadJob.KeyTrial?
        if request.keyCandidates.isEmpty {
            outcome = await job.run(on: backend, progress: cardFound)
        } else {
            let (tried, keys) = await job.run(on: backend, keys: request.keyCandidates, progress: cardFound)
            (outcome, trial) = (tried, keys)
        }
        switch outcome {
        case .noCard(let error):
            let failed = failure(error)
            finish(failed.code.rawValue)
            return .failure(failed)
        case .failed(let error, let apdus, _, let waitForCard):
            var failed = failure(error)
            if let trial, error.code == .accessDenied {
                failed = Failure(code: .accessDenied, message: "the chip refused every key read from the photo: tried \(trial.tried) keys read from the photo; "
                                 + "give the MRZ or the CAN (typed), or capture the data page again", recoverable: true)
            }
            timeline?.read.apdus(apdus)
            finish(failed.code.rawValue, waitForCard: waitForCard)
            return .failure(failed)
        case .read(let result, _, let waitForCard):
            finish("success", waitForCard: waitForCard, result: result)
            var made = await ReadReport.make(result)
            if let trial, let used = trial.used { made.accessKeyFrom = ReadReport.AccessKeyFrom(source: "photo", candidate: used + 1, tried: trial.tried) }
            return .success((made, request.evidence ? ChipEvidence(result) : nil))
        }
    }

    /// A read that ended before it reached a card reader.
    nonisolated static func finished(_ timeline: ReadTimeline, in log: NFCReadLog, outcome: String) {
        NFCReadMetrics.finished(outcome: outcome, waitForCard: nil, result: nil)
        log.finish(timeline, outcome: outcome, result: nil)
    }

    nonisolated static func progressData(_ progress: ReadProgress, requestId: String) -> [String: JSONValue] {
        var data: [String: JSONValue] = [
            "requestId": .string(requestId), "phase": .string(progress.phase.rawValue), "percent": .number(Double(progress.percent)),
        ]
        if let file = progress.file, progress.phase == .reading { data["file"] = .string(file) }
        if let read = progress.bytesRead { data["bytesRead"] = .number(Double(read)) }
        if let total = progress.bytesTotal { data["bytesTotal"] = .number(Double(total)) }
        if let reason = progress.reason { data["reason"] = .string(reason) }
        if let message = progress.message { data["message"] = .string(message) }
        return data
    }
}
