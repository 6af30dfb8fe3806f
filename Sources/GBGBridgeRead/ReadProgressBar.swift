import TextSanitizing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import MRTD
import Synchronization

/// A one-line progress bar on standard error, drawn only on a terminal.
package final class ReadProgressBar: Sendable {
    package let enabled: Bool
    private let drawn = Mutex(false)

    package init(enabled: Bool) { self.enabled = enabled }

    package func update(_ progress: ReadProgress) {
        guard enabled else {
            // Without a terminal, only what asks something of the user is said (one line each).
            if let message = progress.message { printError("gbgbridge read: \(message)") }
            return
        }
        let width = 30
        let filled = width * progress.percent / 100
        var line = "\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
        line += Formatting.padded(String(progress.percent), to: 3) + "% "
        switch progress.phase {
        case .waitingForCard: line += progress.message ?? "waiting for a card…"
        case .cardDetected: line += "card detected"
        case .authenticating: line += "authenticating"
        case .reading:
            line += "reading \(progress.file ?? "")"
            if let read = progress.bytesRead { line += " \(read)" + (progress.bytesTotal.map { "/\($0)" } ?? "") + " bytes" }
        case .verifying: line += "verifying"
        }
        line += "\u{1B}[K"
        drawn.withLock { $0 = true }
        writeStandardError(line)
    }

    package func finish() {
        guard enabled, drawn.withLock({ $0 }) else { return }
        writeStandardError("\r\u{1B}[K")
    }
}
