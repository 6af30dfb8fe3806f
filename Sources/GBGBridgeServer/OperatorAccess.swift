import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// Who may see the operators' surfaces (`/metrics`, `/diagnostics`, `/diagnostics.json`,
/// `/diagnostics/events`), whose pages show console text a journey printed:
///
/// - clients that are not browsers — no `Sec-Fetch-*` header at all (curl, Prometheus) — and no
///   `Origin` (a page's scripts send one on anything but a same-origin GET);
/// - a browser's top-level navigation: `Sec-Fetch-Mode: navigate` and `Sec-Fetch-Dest: document`,
///   from no site (typed, a bookmark) or this one;
/// - the diagnostics page's own script, style and live data: subresources carrying a token that
///   only a navigation to `/diagnostics` hands out (`OperatorPageTokens`), in the page's HTML.
///
/// Everything else is refused — a subresource fetch from any site, this one included: a journey
/// served from the bridge's own origin (the demo, `--static`) fetched all three with 200 before
/// (issue 42). The operator pages are sent with `Cross-Origin-Opener-Policy: same-origin`, so a
/// same-origin page that opens one in a window gets no handle on its document.
enum OperatorAccess {
    enum Verdict: Equatable {
        case refused
        /// Not a browser, or a browser's own navigation.
        case operatorRequest
        /// A browser's subresource request: allowed only with a page token.
        case subresource
    }

    static func judge(_ headers: HTTPFields) -> Verdict {
        guard headers[.origin] == nil else { return .refused }
        let site = headers.first { $0.name.canonicalName == "sec-fetch-site" }?.value
        let mode = headers.first { $0.name.canonicalName == "sec-fetch-mode" }?.value
        let dest = headers.first { $0.name.canonicalName == "sec-fetch-dest" }?.value
        let user = headers.first { $0.name.canonicalName == "sec-fetch-user" }?.value
        guard site != nil || mode != nil || dest != nil || user != nil else { return .operatorRequest }
        if let site, site != "same-origin", site != "none" { return .refused }
        if mode == "navigate", dest == "document" { return .operatorRequest }
        return .subresource
    }
}

/// Tokens the diagnostics page is handed when an operator navigates to it, for its own script,
/// style and live data (`?page=TOKEN`). Random, 128 bits; at most `capacity` live (a new one
/// retires the oldest), each for `lifetime`.
final class OperatorPageTokens: Sendable {
    static let capacity = 32
    static let lifetime: Duration = .seconds(24 * 3600)
    private let tokens = Mutex<[(token: String, issued: ContinuousClock.Instant)]>([])

    func issue() -> String {
        var generator = SystemRandomNumberGenerator()
        let token = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        tokens.withLock { list in
            list.append((token, ContinuousClock.now))
            if list.count > Self.capacity { list.removeFirst(list.count - Self.capacity) }
        }
        return token
    }

    func isValid(_ token: String?) -> Bool {
        guard let token, token.count == 32 else { return false }
        let now = ContinuousClock.now
        return tokens.withLock { list in list.contains { $0.token == token && now - $0.issued < Self.lifetime } }
    }
}
