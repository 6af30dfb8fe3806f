import Synchronization

/// The open `/diagnostics/events` streams, capped: each holds a TCP connection for its lifetime,
/// and a local process opening hundreds of them must not take the connections pages need. When
/// the cap is reached the oldest stream is told to end (within `pollInterval`) and the new one
/// takes its place, so an operator's fresh page always gets live updates.
final class DiagnosticsStreams: Sendable {
    /// One stream's claim: whether it has been evicted by a newer one.
    final class Ticket: Sendable {
        let number: Int
        private let evicted = Mutex(false)
        init(number: Int) { self.number = number }
        var isEvicted: Bool { evicted.withLock { $0 } }
        func evict() { evicted.withLock { $0 = true } }
    }

    /// How often a stream looks whether it was evicted (and the server is stopping).
    static let pollInterval: Duration = .milliseconds(100)

    private struct State {
        var open: [Ticket] = []
        var next = 0
    }
    private let state = Mutex(State())
    let cap: Int

    init(cap: Int) { self.cap = max(1, cap) }

    /// A new stream; the oldest ones are evicted so that at most `cap` stay open.
    func open() -> Ticket {
        let (ticket, evicted) = state.withLock { state -> (Ticket, [Ticket]) in
            state.next += 1
            let ticket = Ticket(number: state.next)
            var evicted: [Ticket] = []
            while state.open.count >= cap { evicted.append(state.open.removeFirst()) }
            state.open.append(ticket)
            return (ticket, evicted)
        }
        evicted.forEach { $0.evict() }
        return ticket
    }

    /// The stream has ended (finished, evicted or its connection gone).
    func close(_ ticket: Ticket) {
        state.withLock { state in state.open.removeAll { $0 === ticket } }
    }

    var count: Int { state.withLock { $0.open.count } }
}
