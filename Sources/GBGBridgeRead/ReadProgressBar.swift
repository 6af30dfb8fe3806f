import Foundation
import GBGBridgeNFC
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
            if let message = progress.message { FileHandle.standardError.write(Data("gbgbridge read: \(message)\n".utf8)) }
            return
        }
        let width = 30
        let filled = width * progress.percent / 100
        var line = "\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
        line += String(format: "%3d%% ", progress.percent)
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
        FileHandle.standardError.write(Data(line.utf8))
    }

    package func finish() {
        guard enabled, drawn.withLock({ $0 }) else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
