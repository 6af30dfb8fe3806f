import CoreMetrics
import Foundation
import GBGBridge

/// The kiosk's lines about what its journey does — console entries, "bridging ORIGIN" as pages
/// (re)load — as log lines: the first, then at most one a `interval` for one browser target and
/// origin, whatever the kind and across reloads (issue 49: a page that logs and reloads itself
/// got a fresh allowance each load, 523 journey lines and 425 `bridging` lines in 25 s). Each
/// line says how many of each kind were left out before it.
/// `gbgbridge_kiosk_console_entries_total{logged}` counts console entries both ways.
struct ConsoleLogThrottle {
    static let interval: Duration = .seconds(1)
    static let metric = "gbgbridge_kiosk_console_entries_total"
    /// What a line is about: the counts left out are kept by kind.
    enum Kind: String, CaseIterable {
        case console = "console entries"
        case load = "page loads"
        case refused = "documents not bridged"
    }
    private var lastLogged: ContinuousClock.Instant?
    private var dropped: [Kind: Int] = [:]

    /// Nil when this line is not to be logged; else how many of each kind were not logged since the last line.
    mutating func admit(_ kind: Kind = .console, now: ContinuousClock.Instant) -> [Kind: Int]? {
        if let lastLogged, now - lastLogged < Self.interval {
            dropped[kind, default: 0] += 1
            return nil
        }
        lastLogged = now
        defer { dropped = [:] }
        return dropped
    }

    /// " (and 3 console entries, 2 page loads since the last line, not logged)", or "".
    static func note(_ dropped: [Kind: Int]) -> String {
        let parts = Kind.allCases.compactMap { kind in dropped[kind].flatMap { $0 > 0 ? "\($0) \(kind.rawValue)" : nil } }
        return parts.isEmpty ? "" : " (and \(parts.joined(separator: ", ")) since the last line, not logged: /diagnostics has the console entries)"
    }
}

/// One throttle per browser target and origin (kept across the page's reloads), at most `capacity`.
struct KioskLogThrottles {
    static let capacity = 32
    private var throttles: [String: ConsoleLogThrottle] = [:]
    private var order: [String] = []

    mutating func admit(target: String?, origin: String, _ kind: ConsoleLogThrottle.Kind, now: ContinuousClock.Instant) -> [ConsoleLogThrottle.Kind: Int]? {
        let key = "\(target ?? "?")|\(origin)"
        if throttles[key] == nil {
            order.append(key)
            if order.count > Self.capacity { throttles[order.removeFirst()] = nil }
        }
        return throttles[key, default: ConsoleLogThrottle()].admit(kind, now: now)
    }
}

/// The kiosk page's console errors and uncaught exceptions, for operators' diagnostics — what
/// Safari's Web Inspector shows an iOS integrator (`/diagnostics`, `pages[].console`). The DevTools
/// pipe passes on only `console.error`/`console.assert` calls and exceptions, at most 200 waiting,
/// and an event over 16 KiB only as a note of its size (`DevToolsConnection`).
extension KioskBrowser {
    /// `console.error(…)` or a failed `console.assert(…)` in the journey's page.
    func consoleCalled(_ params: [String: Any]) {
        guard let binding = page, params["executionContextId"] as? Int == binding.contextId,
              let type = params["type"] as? String, let kind = PageDiagnostics.ConsoleEntry.Kind(rawValue: type) else { return }
        let arguments = (params["args"] as? [[String: Any]] ?? []).prefix(16).map(Self.text(of:))
        let frame = ((params["stackTrace"] as? [String: Any])?["callFrames"] as? [[String: Any]])?.first
        record(PageDiagnostics.ConsoleEntry(kind: kind, text: arguments.joined(separator: " "), url: frame?["url"] as? String,
                                            line: (frame?["lineNumber"] as? Int).map { $0 + 1 },
                                            column: (frame?["columnNumber"] as? Int).map { $0 + 1 }), on: binding)
    }

    /// An exception nothing caught (or a promise rejection nothing handled) in the journey's page.
    func exceptionThrown(_ params: [String: Any]) {
        guard let binding = page, let details = params["exceptionDetails"] as? [String: Any] else { return }
        if let context = details["executionContextId"] as? Int, context != binding.contextId { return }
        let exception = details["exception"] as? [String: Any]
        let text = (exception?["description"] as? String) ?? (exception.map(Self.text(of:))) ?? (details["text"] as? String ?? "exception")
        record(PageDiagnostics.ConsoleEntry(kind: .exception, text: text, url: details["url"] as? String,
                                            line: (details["lineNumber"] as? Int).map { $0 + 1 },
                                            column: (details["columnNumber"] as? Int).map { $0 + 1 }), on: binding)
    }

    private func record(_ entry: PageDiagnostics.ConsoleEntry, on binding: PageBinding) {
        configuration.pages?.console(entry, on: binding.host)
        // The text stays out of the log: a journey may print what it holds (an MRZ, a CAN).
        // /diagnostics, on loopback behind its token, shows it to the operator. At most a line a
        // second a kiosk target and origin, reloads included: a page printing 10,000 errors a
        // second wrote 67,516 lines in 30 s.
        guard let dropped = admitLine(.console, origin: binding.origin) else {
            Counter(label: ConsoleLogThrottle.metric, dimensions: [("logged", "false")]).increment()
            return
        }
        Counter(label: ConsoleLogThrottle.metric, dimensions: [("logged", "true")]).increment()
        logger.notice("journey console \(entry.kind.rawValue) at \(LogText.clip(entry.url ?? "?", to: 120)):\(entry.line ?? 0)\(ConsoleLogThrottle.note(dropped))")
    }

    /// A DevTools RemoteObject as text: a primitive's value, else its description, else its type.
    static func text(of object: [String: Any]) -> String {
        if let value = object["value"] {
            if let string = value as? String { return string }
            if value is NSNull { return "null" }
            return "\(value)"
        }
        if let unserializable = object["unserializableValue"] as? String { return unserializable }
        if let description = object["description"] as? String { return description }
        return object["type"] as? String ?? "?"
    }
}
