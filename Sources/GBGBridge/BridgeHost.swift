import Foundation
import Observation

/// The native end of the bridge: decodes what the page posts, routes requests to capabilities,
/// and delivers responses and events back through a `BridgeTransport`.
///
/// Routing order for a request: typed slots (`documentCapture`, `selfieCapture`) → custom
/// capabilities → registered `BridgeCapabilityHandler`s → `pendingRequests` plus the delegate's
/// `unhandledRequest`. Responses and events from the page are logged and given to the delegate,
/// never routed.
@MainActor
@Observable
public final class BridgeHost {
    /// A message crossing the bridge, as the `messages` stream reports it.
    public struct Traffic: Sendable, Hashable {
        public enum Direction: String, Sendable, Hashable { case received, sent }
        public var direction: Direction
        public var message: BridgeMessage
    }

    /// A custom capability's handler: called on the main actor with the request and its responder.
    public typealias CustomCapabilityHandler = @MainActor (BridgeMessage, BridgeResponder) -> Void

    struct CustomCapability {
        var version: String
        var handler: CustomCapabilityHandler
        var supported = true
        var permissionState: PermissionState? = .notApplicable
        var constraints: [String: JSONValue]?
    }

    public let configuration: BridgeConfiguration
    /// Messages received from the page, oldest first, at most `receivedMessagesLimit`.
    public private(set) var receivedMessages: [BridgeMessage] = []
    /// Requests no capability took, by correlation id, until answered with `respond(to:…)`.
    public private(set) var pendingRequests: [String: BridgeMessage] = [:]
    /// The latest problem (undecodable input, no transport, an unknown correlation id).
    public private(set) var lastError: String?
    /// The cap on `receivedMessages` (negative values count as 0); lowering it drops the oldest
    /// entries at once.
    public var receivedMessagesLimit: Int {
        didSet { trimLog() }
    }

    public let documentCapture = CaptureCapability(id: "camera.document", actionId: "camera.document.capture")
    public let selfieCapture = CaptureCapability(id: "camera.selfie", actionId: "camera.selfie.capture")

    @ObservationIgnored public weak var delegate: BridgeHostDelegate?
    /// Rewrites a received message before it is logged or streamed (used to mask secrets such as
    /// an access key); routing always sees the original.
    @ObservationIgnored public var logRedactor: (@Sendable (BridgeMessage) -> BridgeMessage)?

    @ObservationIgnored private weak var transport: BridgeTransport?
    @ObservationIgnored private var handlers: [String: BridgeCapabilityHandler] = [:]
    @ObservationIgnored private var customCapabilities: [String: CustomCapability] = [:]
    @ObservationIgnored private var inFlight: [String: BridgeResponder] = [:]
    @ObservationIgnored private var queryHandler: CapabilityQueryHandler!
    @ObservationIgnored private var messageSubscribers: [UUID: AsyncStream<Traffic>.Continuation] = [:]
    @ObservationIgnored private var errorSubscribers: [UUID: AsyncStream<String>.Continuation] = [:]
    /// Bumped whenever the capability map may have changed, so observers of `capabilities` update.
    private var capabilityRevision = 0

    /// A host whose `capability.query` answer is built from its slots and custom capabilities.
    public convenience init(hostVersion: String = "1.0") {
        self.init(configuration: BridgeConfiguration(hostVersion: hostVersion), richQuery: true)
    }

    /// A host whose `capability.query` answer is `configuration.capabilities`, as configured.
    public convenience init(configuration: BridgeConfiguration) {
        self.init(configuration: configuration, richQuery: false)
    }

    /// Which `capability.query` provider a host uses.
    public enum QueryProvider: Sendable {
        /// Built on every query from the slots and custom capabilities (as `init(hostVersion:)`).
        case rich
        /// `configuration.capabilities`, as configured (as `init(configuration:)`).
        case configured
    }

    /// A host with a full configuration (log bound, version) and the chosen query provider
    /// (Linux addition: servers create one host per page from one configuration).
    public convenience init(configuration: BridgeConfiguration, queryProvider: QueryProvider) {
        self.init(configuration: configuration, richQuery: queryProvider == .rich)
    }

    private init(configuration: BridgeConfiguration, richQuery: Bool) {
        self.configuration = configuration
        self.receivedMessagesLimit = configuration.receivedMessagesLimit
        let query: CapabilityQueryHandler
        if richQuery {
            query = CapabilityQueryHandler(hostVersion: configuration.hostVersion) { [weak self] in
                self?.dynamicCapabilities() ?? [:]
            }
        } else {
            query = CapabilityQueryHandler(configuration: configuration)
        }
        queryHandler = query
        handlers[query.action] = query
        for slot in [documentCapture, selfieCapture] {
            slot.onComplete = { [weak self] request, result in
                self?.finishSlotRequest(request, result: result)
            }
        }
    }

    /// What `capability.query` reports now.
    public var capabilities: [String: BridgeCapabilityInfo] {
        _ = capabilityRevision
        return queryHandler.capabilities
    }

    // MARK: Transport

    /// Connects the host to the page. The transport is held weakly.
    public func attach(transport: BridgeTransport) {
        self.transport = transport
        (transport as? InMemoryBridgeTransport)?.host = self
    }

    /// Disconnects the transport and cancels every request still in flight (the page is gone).
    public func detachTransport(reason: String = "The page went away") {
        cancelInFlightRequests(reason: reason)
        transport = nil
    }

    /// Whether a transport is attached.
    public var isAttached: Bool { transport != nil }

    /// Takes a message the page posted, as JSON text.
    public func receive(_ json: String) {
        let message: BridgeMessage
        do {
            message = try BridgeMessage.decode(json: json)
        } catch {
            report(error.description)
            return
        }
        record(message)
        delegate?.bridgeHost(self, didReceive: message)
        if message.type == .request {
            route(message)
        }
    }

    // MARK: Handlers and capabilities

    /// Registers `handler` for its action, replacing any earlier one.
    public func register(handler: BridgeCapabilityHandler) {
        handlers[handler.action] = handler
    }

    /// Removes the handler for `action`.
    public func unregister(action: String) {
        handlers.removeValue(forKey: action)
    }

    /// Adds a capability reported by `capability.query` as supported with `version`, whose
    /// requests (action = `id`) go to `handler`. A typed slot with the same id or action wins.
    public func registerCustomCapability(_ id: String, version: String = "1.0",
                                         handler: @escaping CustomCapabilityHandler) {
        customCapabilities[id] = CustomCapability(version: version, handler: handler)
        capabilityRevision += 1
    }

    /// Removes a custom capability.
    public func unregisterCustomCapability(_ id: String) {
        customCapabilities.removeValue(forKey: id)
        capabilityRevision += 1
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
        capabilityRevision += 1
        return true
    }

    private var slots: [CaptureCapability] { [documentCapture, selfieCapture] }

    private func dynamicCapabilities() -> [String: BridgeCapabilityInfo] {
        var result: [String: BridgeCapabilityInfo] = [:]
        let slotNames = Set(slots.flatMap { [$0.id, $0.actionId] })
        for (id, capability) in customCapabilities where !slotNames.contains(id) {
            result[id] = BridgeCapabilityInfo(supported: capability.supported, version: capability.version,
                                              permissionState: capability.permissionState,
                                              constraints: capability.constraints)
        }
        for slot in slots {
            result[slot.id] = slot.buildCapabilityInfo()
        }
        return result
    }

    // MARK: Sending

    /// Sends an event with a fresh correlation id and the current time.
    public func send(event action: String, data: JSONValue? = nil) {
        deliver(.event(action: action, data: data))
    }

    /// Answers a request waiting in `pendingRequests` (with its action) and removes it.
    public func respond(to correlationId: String, status: BridgeResponseStatus, data: JSONValue? = nil,
                        error: BridgeErrorPayload? = nil) {
        guard let request = pendingRequests.removeValue(forKey: correlationId) else {
            report("No pending request with correlationId \(correlationId)")
            return
        }
        deliver(.response(to: correlationId, action: request.payload.action, status: status, data: data,
                          error: error))
    }

    /// Sends a response for `correlationId` and `action` directly, pending or not.
    public func respond(to correlationId: String, action: String, status: BridgeResponseStatus,
                        data: JSONValue? = nil, error: BridgeErrorPayload? = nil) {
        pendingRequests.removeValue(forKey: correlationId)
        deliver(.response(to: correlationId, action: action, status: status, data: data, error: error))
    }

    /// Cancels every request still being served (capabilities, slots, pending): each is answered
    /// `cancelled` with code `CANCELLED` and its cancellation handlers run.
    public func cancelInFlightRequests(reason: String = "The request was cancelled") {
        let responders = Array(inFlight.values)
        inFlight.removeAll()
        responders.forEach { $0.cancel(reason: reason) }
        for slot in slots where slot.activeRequest != nil {
            slot.complete(.failed(code: "CANCELLED", message: reason, recoverable: true))
        }
        for (id, request) in pendingRequests {
            respond(to: id, action: request.payload.action, status: .cancelled,
                    error: BridgeErrorPayload(code: "CANCELLED", message: reason, recoverable: true))
        }
    }

    /// Forgets `lastError`.
    public func clearError() {
        lastError = nil
    }

    /// Empties `receivedMessages`.
    public func clearReceivedMessages() {
        receivedMessages.removeAll()
    }

    // MARK: Streams

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

    isolated deinit {
        messageSubscribers.values.forEach { $0.finish() }
        errorSubscribers.values.forEach { $0.finish() }
    }

    // MARK: Internals

    private func route(_ request: BridgeMessage) {
        let action = request.payload.action
        if let slot = slots.first(where: { $0.actionId == action }) {
            routeToSlot(slot, request)
        } else if let custom = customCapabilities[action] {
            custom.handler(request, makeResponder(for: request))
        } else if let handler = handlers[action] {
            handler.handle(request, responder: makeResponder(for: request))
        } else {
            pendingRequests[request.correlationId] = request
            delegate?.bridgeHost(self, unhandledRequest: request)
        }
    }

    private func routeToSlot(_ slot: CaptureCapability, _ request: BridgeMessage) {
        guard slot.isSupported else {
            deliver(.response(to: request.correlationId, action: request.payload.action, status: .unsupported,
                              error: BridgeErrorPayload(code: "UNSUPPORTED",
                                                        message: "\(slot.id) is not available on this host",
                                                        recoverable: false)))
            return
        }
        guard slot.activeRequest == nil else {
            deliver(.response(to: request.correlationId, action: request.payload.action, status: .error,
                              error: BridgeErrorPayload(code: "BUSY",
                                                        message: "A \(slot.actionId) request is already in progress",
                                                        recoverable: true)))
            return
        }
        slot.begin(request)
    }

    private func finishSlotRequest(_ request: BridgeMessage, result: CaptureResult) {
        deliver(.response(to: request.correlationId, action: request.payload.action, status: result.status,
                          data: result.data, error: result.error))
    }

    private func makeResponder(for request: BridgeMessage) -> BridgeResponder {
        let id = request.correlationId
        let responder = BridgeResponder(request: request) { [weak self] response, onMainActor in
            if onMainActor {
                MainActor.assumeIsolated { self?.finishResponder(id, response) }
            } else {
                Task { @MainActor in self?.finishResponder(id, response) }
            }
        }
        inFlight[id] = responder
        return responder
    }

    private func finishResponder(_ id: String, _ response: BridgeMessage) {
        inFlight.removeValue(forKey: id)
        deliver(response)
    }

    private func deliver(_ message: BridgeMessage) {
        guard let transport else {
            report("WebView not attached: cannot deliver \(message.type.rawValue) '\(message.payload.action)'")
            return
        }
        let json: String
        do {
            json = try message.jsonString()
        } catch {
            report("Failed to encode message '\(message.payload.action)': \(error)")
            return
        }
        transport.deliver(json)
        delegate?.bridgeHost(self, didSend: message)
        publish(Traffic(direction: .sent, message: message))
    }

    private func record(_ message: BridgeMessage) {
        let logged = logRedactor?(message) ?? message
        receivedMessages.append(logged)
        trimLog()
        publish(Traffic(direction: .received, message: logged))
    }

    private func trimLog() {
        let excess = receivedMessages.count - max(0, receivedMessagesLimit)
        if excess > 0 { receivedMessages.removeFirst(excess) }
    }

    private func publish(_ traffic: Traffic) {
        messageSubscribers.values.forEach { $0.yield(traffic) }
    }

    private func report(_ error: String) {
        lastError = error
        errorSubscribers.values.forEach { $0.yield(error) }
        delegate?.bridgeHost(self, didEncounterError: error)
    }
}
