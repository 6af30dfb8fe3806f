import Foundation
import GBGBridge

/// The seeds' troubleshooting surfaces — `lastError`, the message log, `pendingRequests` — of every
/// page a host serves, for operators (`gbgbridge serve --diagnostics`). Give one instance to
/// `BridgeServerConfiguration.pages` and `KioskConfiguration.pages`; `snapshot()` is what
/// `/diagnostics.json` shows of the pages.
///
/// Messages are kept without their payloads: an action, a direction, a correlation id, a status
/// and an error code — never access keys, names or images.
@MainActor
public final class PageDiagnostics {
    /// Recent messages kept per page.
    public let recentMessages: Int
    private var pages: [ObjectIdentifier: Page] = [:]
    private var nextNumber = 1

    private final class Page {
        let number: Int
        let origin: String
        let via: String
        let connected = Date()
        weak var host: BridgeHost?
        var messages: [JSONValue] = []
        var open: [String: (action: String, since: Date)] = [:]
        var received = 0
        var sent = 0
        var watcher: Task<Void, Never>?
        /// Console errors and uncaught exceptions (kiosk pages: DevTools sees them), newest last.
        var console: [JSONValue] = []
        var consoleErrors = 0
        var exceptions = 0

        init(number: Int, origin: String, via: String, host: BridgeHost) {
            self.number = number
            self.origin = origin
            self.via = via
            self.host = host
        }
    }

    /// Console entries kept per page.
    public let consoleEntries: Int

    public init(recentMessages: Int = 30, consoleEntries: Int = 50) {
        self.recentMessages = max(1, recentMessages)
        self.consoleEntries = max(1, consoleEntries)
    }

    /// What a page's console said that an operator looks for: an error it logged
    /// (`console.error`, a failed `console.assert`) or an exception nothing caught.
    public struct ConsoleEntry: Sendable {
        public enum Kind: String, Sendable { case error, assert, exception }
        public var kind: Kind
        /// The message, as text (never interpreted as HTML anywhere).
        public var text: String
        public var url: String?
        public var line: Int?
        public var column: Int?

        public init(kind: Kind, text: String, url: String? = nil, line: Int? = nil, column: Int? = nil) {
            (self.kind, self.text, self.url, self.line, self.column) = (kind, text, url, line, column)
        }
    }

    /// Records `entry` on `host`'s page: clipped (500 characters of text, 300 of URL), the
    /// newest `consoleEntries` kept, every one counted.
    public func console(_ entry: ConsoleEntry, on host: BridgeHost) {
        guard let page = pages[ObjectIdentifier(host)] else { return }
        var item: [String: JSONValue] = [
            "time": .string(Self.iso8601(Date())),
            "kind": .string(entry.kind.rawValue),
            "text": .string(LogText.clip(entry.text, to: 500)),
        ]
        if let url = entry.url, !url.isEmpty { item["url"] = .string(LogText.clip(url, to: 300)) }
        if let line = entry.line { item["line"] = .number(Double(line)) }
        if let column = entry.column { item["column"] = .number(Double(column)) }
        page.console.append(.object(item))
        if page.console.count > consoleEntries { page.console.removeFirst(page.console.count - consoleEntries) }
        if entry.kind == .exception { page.exceptions += 1 } else { page.consoleErrors += 1 }
    }


    /// Starts following `host` (a page from `origin`, `via` "websocket" or "kiosk").
    public func track(_ host: BridgeHost, origin: String, via: String) {
        let page = Page(number: nextNumber, origin: origin, via: via, host: host)
        nextNumber += 1
        let traffic = host.messages
        let limit = recentMessages
        page.watcher = Task { [weak page] in
            for await item in traffic {
                guard let page else { return }
                Self.note(item, on: page, limit: limit)
            }
        }
        pages[ObjectIdentifier(host)] = page
    }

    /// Stops following `host` (its page went away).
    public func untrack(_ host: BridgeHost) {
        pages.removeValue(forKey: ObjectIdentifier(host))?.watcher?.cancel()
    }

    /// Every page followed now, oldest first.
    public func snapshot(now: Date = Date()) -> [JSONValue] {
        pages.values.sorted { $0.number < $1.number }.map { page in
            var entry: [String: JSONValue] = [
                "page": .number(Double(page.number)),
                "origin": .string(LogText.clip(page.origin, to: 200)),
                "via": .string(page.via),
                "connected": .string(Self.iso8601(page.connected)),
                "messagesReceived": .number(Double(page.received)),
                "messagesSent": .number(Double(page.sent)),
                "recentMessages": .array(page.messages),
                "console": .array(page.console),
                "consoleErrors": .number(Double(page.consoleErrors)),
                "exceptions": .number(Double(page.exceptions)),
                "openRequests": .array(page.open.sorted { $0.value.since < $1.value.since }.map { id, request in
                    .object(["correlationId": .string(id), "action": .string(request.action),
                             "ageSeconds": .number((now.timeIntervalSince(request.since) * 10).rounded() / 10)])
                }),
            ]
            if let host = page.host {
                entry["lastError"] = host.lastError.map { .string(LogText.clip($0, to: 300)) } ?? .null
                entry["pendingRequests"] = .array(host.pendingRequests.map { request in
                    .object(["correlationId": .string(LogText.clip(request.correlationId, to: 80)),
                             "action": .string(LogText.clip(request.payload.action, to: 80))])
                })
            }
            return .object(entry)
        }
    }

    private static func note(_ item: BridgeHost.Traffic, on page: Page, limit: Int) {
        let message = item.message
        let id = LogText.clip(message.correlationId, to: 80)
        let action = LogText.clip(message.payload.action, to: 80)
        var entry: [String: JSONValue] = [
            "time": .string(iso8601(Date())),
            "direction": .string(item.direction.rawValue),
            "type": .string(message.type.rawValue),
            "action": .string(action),
            "correlationId": .string(id),
            "payload": .string("elided"),
        ]
        if let status = message.payload.status { entry["status"] = .string(status.rawValue) }
        if let error = message.payload.error { entry["errorCode"] = .string(LogText.clip(error.code, to: 60)) }
        // A run of the same event (a read's progress: one per percent) is one entry, the latest,
        // with a count, so that it cannot push the requests and responses out of the ring.
        if message.type == .event, case .object(let last)? = page.messages.last,
           last["type"] == entry["type"], last["action"] == entry["action"], last["direction"] == entry["direction"] {
            var count = 1.0
            if case .number(let earlier)? = last["count"] { count = earlier }
            entry["count"] = .number(count + 1)
            page.messages[page.messages.count - 1] = .object(entry)
        } else {
            page.messages.append(.object(entry))
        }
        if page.messages.count > limit { page.messages.removeFirst(page.messages.count - limit) }
        switch (item.direction, message.type) {
        case (.received, .request):
            page.received += 1
            if page.open.count < 1_000 { page.open[id] = (action, Date()) }
        case (.received, _):
            page.received += 1
        case (.sent, .response):
            page.sent += 1
            page.open.removeValue(forKey: id)
        case (.sent, _):
            page.sent += 1
        }
    }

    static func iso8601(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
