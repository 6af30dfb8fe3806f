import Foundation
import GBGBridge
import Logging
import Synchronization

extension KioskBrowser {
    /// The document currently bridged: its execution context, its page and transport, and how fast it may post.
    final class PageBinding {
        let contextId: Int
        let uniqueId: String
        let page: BridgedPage
        let transport: KioskTransport
        var bucket: TokenBucket
        var droppedInARow = 0
        var origin: String { page.origin }
        var host: BridgeHost { page.host }

        init(contextId: Int, uniqueId: String, page: BridgedPage, transport: KioskTransport, rate: Int) {
            self.bucket = TokenBucket(rate: rate, burst: rate * 2)
            self.contextId = contextId
            self.uniqueId = uniqueId
            self.page = page
            self.transport = transport
        }
    }
}
