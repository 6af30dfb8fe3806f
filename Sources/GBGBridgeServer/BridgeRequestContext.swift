import Hummingbird
import NIOCore

/// The request context of the bridge's router: Hummingbird's basics plus the request's connection,
/// so that a route can end it. An ended `/diagnostics/events` stream closes its connection at once:
/// Hummingbird keeps a finished response's connection for the client's next request until the
/// idle timeout, and a local process that never reads would otherwise keep the connections pages
/// need.
struct BridgeRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
