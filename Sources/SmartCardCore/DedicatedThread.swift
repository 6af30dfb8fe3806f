import Foundation
import Synchronization

/// A thread of its own that runs blocking C calls one after another, so they never occupy the
/// Swift cooperative pool. pcsc-lite wants each SCARDCONTEXT used from one thread; each context
/// therefore lives on its own `DedicatedThread`.
package final class DedicatedThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
    }
    private let state = Mutex(State())
    private let condition = NSCondition()
    package let name: String

    package init(name: String) {
        self.name = name
        let thread = Thread { [self] in self.loop() }
        thread.name = name
        thread.start()
    }

    private func loop() {
        while true {
            condition.lock()
            var job: (@Sendable () -> Void)?
            var stop = false
            while job == nil && !stop {
                (job, stop) = state.withLock { state in
                    if !state.jobs.isEmpty { return (state.jobs.removeFirst(), false) }
                    return (nil, state.stopping)
                }
                if job == nil && !stop { condition.wait() }
            }
            condition.unlock()
            if let job { job() } else { return }
        }
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        condition.signal()
        return accepted
    }

    /// Runs `body` on the thread and returns its result to the awaiting task.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = enqueue {
                continuation.resume(with: Result { try body() })
            }
            if !accepted {
                continuation.resume(throwing: SmartCardError(.cancelled, "\(name) has been shut down"))
            }
        }
    }

    /// Runs `body` on the thread without waiting for it.
    package func runDetached(_ body: @escaping @Sendable () -> Void) {
        _ = enqueue(body)
    }

    /// Lets queued jobs finish, then ends the thread.
    package func stop() {
        condition.lock()
        state.withLock { $0.stopping = true }
        condition.signal()
        condition.unlock()
    }
}
