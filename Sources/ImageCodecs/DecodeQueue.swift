import Dispatch
import Synchronization

/// Where images are decoded for servers: on Dispatch's threads (never the Swift cooperative
/// pool, which a one-second JPEG 2000 decode would hold up for every page), at most `width` at a
/// time; later requests wait their turn without taking a thread. With `ImageCodecs.Limits` bounding
/// each decode, the memory decoding can take is bounded too: `width × Limits.maxBytes`.
public final class DecodeQueue: Sendable {
    /// The process's queue: two decodes at once (the kiosks this runs on have two to four cores).
    public static let shared = DecodeQueue(width: 2)

    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    public let width: Int

    public init(width: Int) {
        self.width = max(1, width)
    }

    /// Runs `body` on a decoding thread once a place is free, and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try body() })
            }
        }
    }

    /// Decodes now running and waiting (for tests and diagnostics).
    public var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state -> Bool in
                if state.running < width {
                    state.running += 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if admitted { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()  // the place passes to the next in line
        }
        next?.resume()
    }
}
