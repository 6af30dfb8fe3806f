import Dispatch
import Synchronization

/// A thread of its own that runs blocking C calls one after another, so they never occupy the
/// Swift cooperative pool. pcsc-lite wants each SCARDCONTEXT used from one thread; each context
/// therefore lives on its own `DedicatedThread`.
package final class DedicatedThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        /// Why the thread could not be started, when it could not: every job is refused with it.
        var failure: String?
    }
    private let state = Mutex(State())
    /// Signalled once per job queued and once more for the stop: each wait of the loop is
    /// answered by a job to run or, when none is left, by the stop.
    private let wakeups = DispatchSemaphore(value: 0)
    package let name: String

    package init(name: String) {
        self.name = name
        if let failure = OSThread.start(name: name, { [self] in self.loop() }) {
            state.withLock { state in
                state.stopping = true
                state.failure = failure
            }
        }
    }

    private func loop() {
        while true {
            wakeups.wait()
            let job = state.withLock { state -> (@Sendable () -> Void)? in
                state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }
            guard let job else { return }  // woken with nothing queued: the stop
            job()
        }
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wakeups.signal() }
        return accepted
    }

    /// Runs `body` on the thread and returns its result to the awaiting task.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = enqueue {
                continuation.resume(with: Result { try body() })
            }
            if !accepted {
                continuation.resume(throwing: SmartCardError(.cancelled, refusal))
            }
        }
    }

    /// Runs `body` on the thread, but gives up waiting when the awaiting task is cancelled: the
    /// caller then gets `.cancelled` at once while `body` — a blocking C call nothing can
    /// interrupt, such as an `SCardTransmit` to a chip that stopped answering — runs on to its end
    /// on the thread, its result handed to `abandoned.finished` instead. `abandoned.began` runs
    /// (on the cancelling thread) when the caller lets go of a `body` that has not returned.
    /// Jobs queued after an abandoned one wait behind it: the owner stops queueing (see
    /// `PCSCConnection`).
    package func runAbandonable<T: Sendable>(_ body: @escaping @Sendable () throws -> T,
                                             abandoned: Abandonment = Abandonment()) async throws -> T {
        let slot = Mutex(AbandonableSlot<T>.idle)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let cancelledAlready = slot.withLock { state -> Bool in
                    if case .cancelled = state { return true }
                    state = .waiting(continuation)
                    return false
                }
                if cancelledAlready {
                    continuation.resume(throwing: SmartCardError(.cancelled, "the call on \(name) was cancelled"))
                    return
                }
                let accepted = enqueue {
                    // Abandoned while still queued: the call never goes out.
                    if slot.withLock({ if case .cancelled = $0 { return true } else { return false } }) {
                        abandoned.finished()
                        return
                    }
                    let result = Result { try body() }
                    let waiting = slot.withLock { state -> CheckedContinuation<T, any Error>? in
                        defer { state = .finished }
                        if case .waiting(let continuation) = state { return continuation }
                        return nil
                    }
                    if let waiting {
                        waiting.resume(with: result)
                    } else {
                        abandoned.finished()
                    }
                }
                if !accepted {
                    let waiting = slot.withLock { state -> CheckedContinuation<T, any Error>? in
                        defer { state = .finished }
                        if case .waiting(let continuation) = state { return continuation }
                        return nil
                    }
                    waiting?.resume(throwing: SmartCardError(.cancelled, refusal))
                }
            }
        } onCancel: {
            let waiting = slot.withLock { state -> CheckedContinuation<T, any Error>? in
                switch state {
                case .idle:
                    state = .cancelled
                    return nil
                case .waiting(let continuation):
                    state = .cancelled
                    return continuation
                case .cancelled, .finished:
                    return nil
                }
            }
            if let waiting {
                abandoned.began()
                waiting.resume(throwing: SmartCardError(.cancelled, "the call on \(name) was abandoned (it has not returned)"))
            }
        }
    }

    /// What the owner of an abandonable call learns: that the caller let go of it while it still
    /// ran, and that it has returned since.
    package struct Abandonment: Sendable {
        package var began: @Sendable () -> Void
        package var finished: @Sendable () -> Void

        package init(began: @escaping @Sendable () -> Void = {}, finished: @escaping @Sendable () -> Void = {}) {
            self.began = began
            self.finished = finished
        }
    }

    /// Why a job is refused: the thread was stopped, or never started.
    private var refusal: String { state.withLock { $0.failure } ?? "\(name) has been shut down" }

    /// Runs `body` on the thread without waiting for it.
    package func runDetached(_ body: @escaping @Sendable () -> Void) {
        _ = enqueue(body)
    }

    /// Lets queued jobs finish, then ends the thread.
    package func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        if first { wakeups.signal() }
    }
}

/// Where one abandonable call stands.
private enum AbandonableSlot<T: Sendable> {
    case idle
    case waiting(CheckedContinuation<T, any Error>)
    case cancelled
    case finished
}
