import CoreMetrics
import Foundation
import GBGBridge

/// Console entries of one page as log lines: the first, then at most one a `interval`, each saying
/// how many were left out before it. `gbgbridge_kiosk_console_entries_total{logged}` counts both.
struct ConsoleLogThrottle {
    static let interval: Duration = .seconds(1)
    static let metric = "gbgbridge_kiosk_console_entries_total"
    private var lastLogged: ContinuousClock.Instant?
    private var dropped = 0

    /// Nil when this entry is not to be logged; else how many were not logged since the last line.
    mutating func admit(now: ContinuousClock.Instant) -> Int? {
        if let lastLogged, now - lastLogged < Self.interval {
            dropped += 1
            return nil
        }
        lastLogged = now
        defer { dropped = 0 }
        return dropped
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
        // second a page: a page printing 10,000 errors a second wrote 67,516 lines in 30 s.
        guard let dropped = binding.consoleLog.admit(now: ContinuousClock.now) else {
            Counter(label: ConsoleLogThrottle.metric, dimensions: [("logged", "false")]).increment()
            return
        }
        Counter(label: ConsoleLogThrottle.metric, dimensions: [("logged", "true")]).increment()
        let more = dropped > 0 ? " (and \(dropped) more console entries since the last line, not logged: /diagnostics has them)" : ""
        logger.notice("journey console \(entry.kind.rawValue) at \(LogText.clip(entry.url ?? "?", to: 120)):\(entry.line ?? 0)\(more)")
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
