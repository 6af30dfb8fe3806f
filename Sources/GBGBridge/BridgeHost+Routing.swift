import Foundation

/// Where a request goes: typed slots, custom capabilities, handlers, or `pendingRequests`; and the
/// bookkeeping of requests in flight (bounded in count and bytes, one per correlation id).
extension BridgeHost {
    func route(_ request: BridgeMessage, size: Int) {
        let id = request.correlationId
        let action = request.payload.action
        if isOpen(id) {
            reject(request, code: .invalidRequest, message: "correlationId already in use", recoverable: false)
            return
        }
        if let query = handlers[action] as? CapabilityQueryHandler {
            // Answered at once: the provider runs on the main actor anyway.
            deliver(.response(to: id, action: action, status: .success, data: query.responseData()))
            return
        }
        if open.count >= configuration.maxRequestsInFlight
            || openBytes + size > configuration.maxRequestBytesInFlight {
            reject(request, code: .tooManyRequests,
                   message: "the host holds \(open.count) requests of this page already; answer or wait for them first",
                   recoverable: true)
            return
        }
        if let slot = slot(for: action) {
            routeToSlot(slot, request, size: size)
        } else if let custom = customCapabilities[action], !slotClaims(action) {
            runHandler(request, size: size) { request, responder in await custom.handler(request, responder) }
        } else if let handler = handlers[action] {
            runHandler(request, size: size) { request, responder in await handler.handle(request: request, responder: responder) }
        } else {
            pendingRequests.append(request)
            openRequest(id, OpenRequest(kind: .pending, request: request, bytes: size, sequence: 0))
            delegate?.bridgeHost(self, unhandledRequest: request)
        }
    }

    func routeToSlot(_ slot: CaptureCapability, _ request: BridgeMessage, size: Int) {
        guard slot.isSupported else {
            deliver(.response(to: request.correlationId, action: request.payload.action, status: .unsupported,
                              error: BridgeErrorPayload(.unsupported, message: "\(slot.id) is not available on this host",
                                                        recoverable: false)))
            return
        }
        guard slot.activeRequest == nil else {
            reject(request, code: .busy, message: "A \(slot.id) capture request is already in progress", recoverable: true)
            return
        }
        let id = request.correlationId
        openRequest(id, OpenRequest(kind: .slot(slot), request: request, bytes: size, sequence: 0))
        slot.start(request) { [weak self] request, result in
            guard let self else { return }
            self.close(request.correlationId)
            self.deliver(.response(to: request.correlationId, action: request.payload.action, status: result.status,
                                   data: result.data, error: result.error))
        }
    }

    func runHandler(_ request: BridgeMessage, size: Int,
                            _ body: @escaping @Sendable (BridgeMessage, BridgeResponder) async -> Void) {
        let id = request.correlationId
        let responder = HostResponder(request: request) { [weak self] response in
            self?.close(id)
            self?.deliver(response)
        }
        let task = Task { await body(request, responder) }
        openRequest(id, OpenRequest(kind: .handler(responder, task), request: request, bytes: size, sequence: 0))
    }

    func reject(_ request: BridgeMessage, code: BridgeErrorCode, message: String, recoverable: Bool) {
        deliver(.response(to: request.correlationId, action: request.payload.action, status: .error,
                          error: BridgeErrorPayload(code, message: message, recoverable: recoverable)))
    }

    /// Whether a request with this correlation id is still being served or waiting.
    func isOpen(_ id: String) -> Bool {
        guard let entry = open[id] else { return false }
        if case .pending = entry.kind, !pendingRequests.contains(where: { $0.correlationId == id }) {
            close(id)  // the app removed it from `pendingRequests` itself
            return false
        }
        return true
    }

    func openRequest(_ id: String, _ entry: OpenRequest) {
        var entry = entry
        sequence += 1
        entry.sequence = sequence
        open[id] = entry
        openBytes += entry.bytes
    }

    func close(_ id: String) {
        guard let entry = open.removeValue(forKey: id) else { return }
        openBytes -= entry.bytes
    }
}
