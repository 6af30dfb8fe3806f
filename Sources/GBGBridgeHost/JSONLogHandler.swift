import Foundation
import Logging

/// How `serve` and `demo` write their log on standard error.
package enum LogFormat: String, CaseIterable, Sendable {
    /// `2026-11-23T10:00:00+0000 info gbgbridge: [module] message key=value` (swift-log's own).
    case text
    /// One JSON object a line — `{"time", "level", "label", "event", "fields"}` — for journald and
    /// log shippers.
    case json
}

/// One JSON object a line on standard error: `time` (RFC 3339, milliseconds, UTC), `level`,
/// `label`, `event` (the message), `fields` (the metadata, as strings, arrays and objects),
/// `source` (the module). The messages are those of the text log — secrets never reach either
/// (callers redact, `LogText` escapes) — and JSON encoding escapes what is left, so a line can
/// never be broken or forged by what it carries.
package struct JSONLogHandler: LogHandler {
    package let label: String
    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?

    package init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { $1 } }
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        var object: [String: Any] = [
            "time": Self.timestamp(Date()),
            "level": event.level.rawValue,
            "label": label,
            "event": event.message.description,
            "source": event.source,
        ]
        if !fields.isEmpty { object["fields"] = fields.mapValues(Self.json) }
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        line.append(0x0A)
        // One write(2) per line: lines from several threads never interleave.
        line.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDERR_FILENO, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    package static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): return text
        case .stringConvertible(let convertible): return convertible.description
        case .array(let values): return values.map(json)
        case .dictionary(let values): return values.mapValues(json)
        }
    }

    package static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let milliseconds = Int((date.timeIntervalSince1970 - Double(seconds)) * 1000)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), min(milliseconds, 999))
    }
}
