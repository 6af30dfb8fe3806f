import Foundation
import Observation

/// The central coordinator of the bridge: decodes what the page posts, routes requests to
/// capabilities, tracks pending requests, and delivers responses and events through a
/// `BridgeTransport` (the Linux stand-in for the iOS `WKWebView`).
///
/// Routing order for a request: typed slots (`documentCapture`, `selfieCapture`) → custom
/// capabilities → registered `BridgeCapabilityHandler`s → `pendingRequests` plus the delegate's
/// `unhandledRequest`. Responses and events from the page are logged and given to the delegate,
/// never routed. Handlers run in tasks of their own; their answers come back on the main actor.
///
/// A page cannot make a host hold without bound: the message log is bounded in count and bytes,
/// requests in flight are bounded in count and bytes, and a request whose `correlationId` is
/// still in flight is refused (`INVALID_REQUEST`), so the first keeps its responder.
@MainActor
@Observable
open class BridgeHost: NSObject {
    /// A message crossing the bridge, as the `messages` stream reports it.
    public struct Traffic: Sendable, Hashable {
        public enum Direction: String, Sendable, Hashable { case received, sent }
        public var direction: Direction
        public var message: BridgeMessage
    }

    /// Which `capability.query` provider a host uses (Linux addition).
    public enum QueryProvider: Sendable {
        /// Built on every query from the typed slots and custom capabilities (as `init(hostVersion:)`).
        case rich
        /// The configured capabilities, as `capabilities` says which are supported (as `init(configuration:)`).
        case configured
    }

    /// Messages received from the web journey, oldest first. The log is bounded: at most
    /// `receivedMessagesLimit` messages and `configuration.receivedMessagesByteLimit` bytes; a message
    /// over `configuration.loggedMessageByteLimit` is kept with its `data` elided.
    public var receivedMessages: [BridgeMessage] = []
    /// Requests that no slot, custom capability or handler took, in arrival order, until answered
    /// with `respond(to:status:data:error:)`.
    public var pendingRequests: [BridgeMessage] = []
    /// Capability id → supported. From the configuration for `init(configuration:)` (and what the
    /// query reports); kept up to date from the slots and custom capabilities for `init(hostVersion:)`.
    public var capabilities: [String: Bool] = [:]
    /// The most recent error: undecodable input, no transport attached, a message that could not
    /// be encoded, an answer to an unknown request. `clearError()` resets it.
    public var lastError: String?

    /// The typed slot for document capture (`camera.document`, action `camera.document.capture`).
    public let documentCapture = CaptureCapability(id: "camera.document", actionId: "camera.document.capture")
    /// The typed slot for selfie capture (`camera.selfie`, action `camera.selfie.capture`).
    public let selfieCapture = CaptureCapability(id: "camera.selfie", actionId: "camera.selfie.capture")

    /// Notified of every incoming message and of unhandled requests.
    @ObservationIgnored public weak var delegate: BridgeHostDelegate?
    /// The configuration passed at initialization.
    public private(set) var configuration: BridgeConfiguration

    /// The cap on `receivedMessages` (Linux addition; negative values count as 0); lowering it
    /// drops the oldest entries at once.
    public var receivedMessagesLimit: Int {
        didSet { trimLog() }
    }
    /// Rewrites a received message before it is logged or streamed (Linux addition, used to mask
    /// secrets such as an access key); routing always sees the original.
    @ObservationIgnored public var logRedactor: (@Sendable (BridgeMessage) -> BridgeMessage)?

    /// A request being served or waiting: what it holds and how to end it.
    struct OpenRequest {
        enum Kind {
            case handler(HostResponder, Task<Void, Never>)
            case slot(CaptureCapability)
            case pending
        }
        var kind: Kind
        var request: BridgeMessage
        var bytes: Int
        var sequence: Int
    }

    @ObservationIgnored let queryProvider: QueryProvider
    @ObservationIgnored weak var transport: BridgeTransport?
    @ObservationIgnored var handlers: [String: any BridgeCapabilityHandler] = [:]
    @ObservationIgnored var customCapabilities: [String: CustomCapability] = [:]
    @ObservationIgnored var open: [String: OpenRequest] = [:]
    @ObservationIgnored var openBytes = 0
    @ObservationIgnored var sequence = 0
    @ObservationIgnored private var logSizes: [Int] = []
    @ObservationIgnored private var logBytes = 0
    @ObservationIgnored private var queryHandler: CapabilityQueryHandler?
    @ObservationIgnored private var messageSubscribers: [UUID: AsyncStream<Traffic>.Continuation] = [:]
    @ObservationIgnored private var errorSubscribers: [UUID: AsyncStream<String>.Continuation] = [:]

    struct CustomCapability {
        var version: String?
        var handler: @Sendable (BridgeMessage, BridgeResponder) async -> Void
        var supported = true
        var permissionState: PermissionState?
        var constraints: [String: JSONValue]?
    }

    /// A host with typed capability slots: `capability.query` is answered from the slots and
    /// custom capabilities, with permission state.
    public convenience init(hostVersion: String) {
        self.init(configuration: BridgeConfiguration(hostVersion: hostVersion, capabilities: [:]), queryProvider: .rich)
    }

    /// A host whose `capability.query` reports the capabilities declared in `configuration`
    /// (those `capabilities` marks supported). Typed slots exist but are not in the query.
    public init(configuration: BridgeConfiguration) {
        self.configuration = configuration
        self.queryProvider = .configured
        self.receivedMessagesLimit = configuration.receivedMessagesLimit
        super.init()
        setUp()
    }

    /// A host with the full configuration (bounds, bootstrap script) and the chosen query provider
    /// (Linux addition: servers create one host per page from one configuration).
    public init(configuration: BridgeConfiguration, queryProvider: QueryProvider) {
        self.configuration = configuration
        self.queryProvider = queryProvider
        self.receivedMessagesLimit = configuration.receivedMessagesLimit
        super.init()
        setUp()
    }

    private func setUp() {
        let query: CapabilityQueryHandler
        switch queryProvider {
        case .rich:
            query = CapabilityQueryHandler(richCapabilities: { [weak self] in
                MainActor.assumeIsolated { self?.dynamicCapabilities() ?? [:] }
            }, hostVersion: configuration.hostVersion)
        case .configured:
            capabilities = configuration.capabilities.mapValues(\.supported)
            query = CapabilityQueryHandler(richCapabilities: { [weak self] in
                MainActor.assumeIsolated { self?.configuredCapabilities() ?? [:] }
            }, hostVersion: configuration.hostVersion)
        }
        queryHandler = query
        handlers[query.action] = query
        for slot in slots {
            slot.onSupportChange = { [weak self] in self?.refreshCapabilities() }
        }
        refreshCapabilities()
    }

    isolated deinit {
        for entry in open.values {
            if case .handler(_, let task) = entry.kind { task.cancel() }
        }
        messageSubscribers.values.forEach { $0.finish() }
        errorSubscribers.values.forEach { $0.finish() }
    }

    // MARK: Transport (the Linux substitute for attach(webView:) and userContentController)

    /// Associates the page's transport with this host: responses and events are delivered to it.
    /// The host holds it weakly.
    public func attach(transport: BridgeTransport) {
        self.transport = transport
        (transport as? InMemoryBridgeTransport)?.host = self
    }

    /// Disconnects the transport and cancels every request still in flight (Linux addition: the
    /// page is gone).
    public func detachTransport(reason: String = "The page went away") {
        cancelInFlightRequests(reason: reason)
        transport = nil
    }

    /// Whether a transport is attached (Linux addition).
    public var isAttached: Bool { transport != nil }

    /// Takes a message the page posted, as JSON text (what `userContentController(_:didReceive:)`
    /// does on iOS). Undecodable input sets `lastError` to `Failed to decode message: <reason>`
    /// and is neither logged nor routed; when its `correlationId` can still be read and it does
    /// not call itself a response or an event, the page is answered `error` with the reason —
    /// code `INVALID_REQUEST`, or `UNSUPPORTED_VERSION` for a version other than "1.0" — so a
    /// page never waits for an answer that will not come (Linux addition).
    public func receive(_ json: String) {
        let message: BridgeMessage
        do {
            message = try BridgeMessage.decode(json: json)
        } catch {
            report(error.description)
            if error.isAnswerable, let id = error.correlationId {
                deliver(.response(to: id, action: error.action ?? "", status: .error,
                                  error: BridgeErrorPayload(code: error.code, message: error.reason, recoverable: false)))
            }
            return
        }
        let size = json.utf8.count
        record(message, size: size)
        delegate?.bridgeHost(self, didReceive: message)
        if message.type == .request {
            route(message, size: size)
        }
    }

    // MARK: Handlers and capabilities

    /// Registers `handler` for its action, replacing any earlier one.
    public func register(handler: any BridgeCapabilityHandler) {
        handlers[handler.action] = handler
    }

    /// Removes the handler for `action`; later requests for it go to `pendingRequests`.
    public func unregister(action: String) {
        handlers.removeValue(forKey: action)
    }

    /// Registers a capability that `capability.query` reports as supported (version `"1.0"` unless
    /// given) and whose requests (action = `id`) go to `handler`. A typed slot with the same id or
    /// action and a handler takes precedence in both.
    public func registerCustomCapability(_ id: String, version: String? = nil,
                                         handler: @escaping @Sendable (BridgeMessage, BridgeResponder) async -> Void) {
        customCapabilities[id] = CustomCapability(version: version, handler: handler)
        refreshCapabilities()
    }

    /// Removes a custom capability (Linux addition).
    public func unregisterCustomCapability(_ id: String) {
        customCapabilities.removeValue(forKey: id)
        refreshCapabilities()
    }

    /// Updates what `capability.query` reports for a custom capability (Linux addition: hardware
    /// such as an NFC reader comes and goes). Returns `false` for an unknown id.
    @discardableResult
    public func updateCustomCapability(_ id: String, supported: Bool, permissionState: PermissionState? = nil,
                                       constraints: [String: JSONValue]? = nil) -> Bool {
        guard var capability = customCapabilities[id] else { return false }
        capability.supported = supported
        capability.permissionState = permissionState
        capability.constraints = constraints
        customCapabilities[id] = capability
        refreshCapabilities()
        return true
    }

    /// The `data` a `capability.query` response carries now (Linux addition, e.g. for a
    /// `capabilities.changed` event).
    public func capabilityQueryData() -> [String: JSONValue] {
        queryHandler?.responseData() ?? [:]
    }

    private var slots: [CaptureCapability] { [documentCapture, selfieCapture] }

    /// The slot that takes requests for `action`: its own action, unless the slot has no handler
    /// and a custom capability was registered for that action.
    func slot(for action: String) -> CaptureCapability? {
        slots.first { $0.actionId == action && ($0.handler != nil || customCapabilities[action] == nil) }
    }

    /// Whether a slot with a handler claims `id` (as its capability id or action).
    func slotClaims(_ id: String) -> Bool {
        slots.contains { $0.handler != nil && ($0.id == id || $0.actionId == id) }
    }

    private func dynamicCapabilities() -> [String: BridgeCapabilityInfo] {
        var result: [String: BridgeCapabilityInfo] = [:]
        for (id, capability) in customCapabilities where !slotClaims(id) {
            result[id] = BridgeCapabilityInfo(supported: capability.supported, version: capability.version ?? "1.0",
                                              constraints: capability.constraints,
                                              permissionState: capability.permissionState?.rawValue)
        }
        for slot in slots {
            result[slot.id] = slot.buildCapabilityInfo()
        }
        return result
    }

    private func configuredCapabilities() -> [String: BridgeCapabilityInfo] {
        var result: [String: BridgeCapabilityInfo] = [:]
        for (id, supported) in capabilities {
            var info = configuration.capabilities[id] ?? BridgeCapabilityInfo(supported: supported, version: supported ? "1.0" : nil)
            info.supported = supported
            result[id] = info
        }
        return result
    }

    func refreshCapabilities() {
        guard queryProvider == .rich else { return }
        let current = dynamicCapabilities().mapValues(\.supported)
        if current != capabilities { capabilities = current }
    }

    // MARK: Sending

    /// Sends an event to the web journey with a fresh correlation id. Sets `lastError` when no
    /// transport is attached or the data cannot be encoded.
    public func send(event action: String, data: [String: JSONValue]) {
        deliver(.event(action: action, data: data))
    }

    /// Sends an event without data (Linux addition).
    public func send(event action: String) {
        deliver(.event(action: action, data: nil))
    }

    /// Answers a request waiting in `pendingRequests` with its action, and removes it. An id that
    /// is not pending sends nothing and sets `lastError`.
    public func respond(to correlationId: String, status: BridgeResponseStatus, data: [String: JSONValue]? = nil,
                        error: BridgeErrorPayload? = nil) {
        guard let request = pendingRequests.first(where: { $0.correlationId == correlationId }) else {
            report("No pending request with correlationId \(LogText.clip(correlationId))")
            return
        }
        respond(to: correlationId, action: request.payload.action, status: status, data: data, error: error)
    }

    /// Sends a response for `correlationId` with `action` directly, pending or not (a pending
    /// request with that id is removed from `pendingRequests`).
    public func respond(to correlationId: String, action: String, status: BridgeResponseStatus,
                        data: [String: JSONValue]? = nil, error: BridgeErrorPayload? = nil) {
        if let index = pendingRequests.firstIndex(where: { $0.correlationId == correlationId }) {
            pendingRequests.remove(at: index)
            if case .pending = open[correlationId]?.kind { close(correlationId) }
        }
        deliver(.response(to: correlationId, action: action, status: status, data: data, error: error))
    }

    /// Cancels every request still open — handlers running, capture slots busy, pending requests —
    /// in arrival order (Linux addition). Each is answered `cancelled` with code `CANCELLED`; handler
    /// tasks are cancelled, and a later answer from them has no effect.
    public func cancelInFlightRequests(reason: String = "The request was cancelled") {
        let entries = open.values.sorted { $0.sequence < $1.sequence }
        open.removeAll()
        openBytes = 0
        let cancelled = BridgeErrorPayload(.cancelled, message: reason, recoverable: true)
        for entry in entries {
            let request = entry.request
            switch entry.kind {
            case .handler(let responder, let task):
                task.cancel()
                guard responder.claim() else { continue }
            case .slot(let slot):
                slot.cancelActive(reason: reason)
            case .pending:
                guard pendingRequests.contains(where: { $0.correlationId == request.correlationId }) else { continue }
            }
            deliver(.response(to: request.correlationId, action: request.payload.action, status: .cancelled,
                              error: cancelled))
        }
        pendingRequests.removeAll()
    }

    /// Resets `lastError` to `nil`.
    public func clearError() {
        lastError = nil
    }

    // MARK: Streams (Linux additions; Combine's publishers on iOS)

    /// A new stream of every message received or sent from now on; ends when the host goes away.
    public var messages: AsyncStream<Traffic> {
        let (stream, continuation) = AsyncStream.makeStream(of: Traffic.self, bufferingPolicy: .bufferingNewest(1_000))
        let key = UUID()
        messageSubscribers[key] = continuation
        continuation.onTermination = { @Sendable _ in
            Task { @MainActor [weak self] in self?.messageSubscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// A new stream of every `lastError` set from now on.
    public var errors: AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(100))
        let key = UUID()
        errorSubscribers[key] = continuation
        continuation.onTermination = { @Sendable _ in
            Task { @MainActor [weak self] in self?.errorSubscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// How many requests are open now (Linux addition): handlers running, capture slots busy and
    /// pending requests.
    public var openRequestCount: Int { open.count }

    // MARK: Delivery and the log

    func deliver(_ message: BridgeMessage) {
        guard let transport else {
            report("WebView not attached")
            return
        }
        let json: String
        do {
            json = try message.jsonString()
        } catch {
            report("Failed to encode message '\(LogText.clip(message.payload.action))': \(error)")
            return
        }
        transport.deliver(json)
        delegate?.bridgeHost(self, didSend: message)
        publish(Traffic(direction: .sent, message: message))
    }

    private func record(_ message: BridgeMessage, size: Int) {
        var logged = logRedactor?(message) ?? message
        var loggedSize = size
        if size > configuration.loggedMessageByteLimit {
            logged = Self.elided(logged, originalBytes: size)
            loggedSize = (try? logged.jsonString().utf8.count) ?? 256
        }
        syncLogSizes()
        receivedMessages.append(logged)
        logSizes.append(loggedSize)
        logBytes += loggedSize
        trimLog()
        publish(Traffic(direction: .received, message: logged))
    }

    /// A message too large to keep in the log whole: its `data` replaced with a note of its size,
    /// and an overlong correlation id or action shortened.
    static func elided(_ message: BridgeMessage, originalBytes: Int) -> BridgeMessage {
        var copy = message
        if copy.payload.data != nil {
            copy.payload.data = ["elided": .bool(true), "originalBytes": .number(Double(originalBytes))]
        }
        copy.correlationId = LogText.clip(copy.correlationId, to: 256)
        copy.payload.action = LogText.clip(copy.payload.action, to: 256)
        if let error = copy.payload.error {
            copy.payload.error?.message = LogText.clip(error.message, to: 1_024)
            copy.payload.error?.code = LogText.clip(error.code, to: 256)
        }
        return copy
    }

    /// Measures the log again when the app changed `receivedMessages` itself.
    private func syncLogSizes() {
        guard logSizes.count != receivedMessages.count else { return }
        logSizes = receivedMessages.map { (try? $0.jsonString().utf8.count) ?? 0 }
        logBytes = logSizes.reduce(0, +)
    }

    /// Drops the oldest messages beyond the count and byte bounds (the newest is always kept).
    private func trimLog() {
        syncLogSizes()
        var excess = max(0, receivedMessages.count - max(0, receivedMessagesLimit))
        var bytes = logBytes - logSizes.prefix(excess).reduce(0, +)
        while bytes > configuration.receivedMessagesByteLimit, excess < logSizes.count - 1 {
            bytes -= logSizes[excess]
            excess += 1
        }
        guard excess > 0 else { return }
        receivedMessages.removeFirst(excess)
        logSizes.removeFirst(excess)
        logBytes = bytes
    }

    private func publish(_ traffic: Traffic) {
        messageSubscribers.values.forEach { $0.yield(traffic) }
    }

    func report(_ error: String) {
        lastError = error
        errorSubscribers.values.forEach { $0.yield(error) }
        delegate?.bridgeHost(self, didEncounterError: error)
    }
}
