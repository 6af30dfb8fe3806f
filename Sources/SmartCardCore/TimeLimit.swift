import Dispatch
import Synchronization

/// Runs `operation` and returns its result, unless `deadline` comes first: then the operation's
/// task is cancelled and this throws `SmartCardError.timeout` at once, without waiting for the
/// operation to notice. A caller whose own task is cancelled gets `.cancelled` at once the same
/// way. A back end that cannot interrupt a blocking call (pcsc-lite's SCardTransmit) lets go of
/// it on cancellation (`DedicatedThread.runAbandonable`); one that never returns costs a task,
/// never the caller's time.
package func withTimeLimit<T: Sendable>(until deadline: ContinuousClock.Instant,
                                        _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let race = TimeLimitRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            guard race.start(continuation) else {
                continuation.resume(throwing: SmartCardError(.cancelled, "the exchange was cancelled"))
                return
            }
            let work = Task {
                do {
                    race.finish(.success(try await operation()))
                } catch {
                    race.finish(.failure(error))
                }
            }
            // The timer is a dispatch timer, not a task: a busy cooperative pool cannot delay it.
            let remaining = deadline - ContinuousClock.now
            let nanoseconds = max(0, remaining.components.seconds * 1_000_000_000 + remaining.components.attoseconds / 1_000_000_000)
            let timer = TimeLimitTimer(DispatchWorkItem { race.finish(.failure(SmartCardError(.timeout, "no answer in time"))) })
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), execute: timer.item)
            race.attach(work: work, timer: timer)
        }
    } onCancel: {
        race.finish(.failure(SmartCardError(.cancelled, "the exchange was cancelled")))
    }
}

/// The one answer of `withTimeLimit`: whichever of the operation, the timer and a cancellation
/// comes first resumes the caller; the others are cancelled.
private final class TimeLimitRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var finished = false
        var work: Task<Void, Never>?
        var timer: TimeLimitTimer?
    }
    private let state = Mutex(State())

    /// Takes the caller's continuation; `false` when the race is already over (cancelled before it began).
    func start(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.continuation = continuation
            return true
        }
    }

    func attach(work: Task<Void, Never>, timer: TimeLimitTimer) {
        let over = state.withLock { state -> Bool in
            if state.finished { return true }
            state.work = work
            state.timer = timer
            return false
        }
        if over {
            work.cancel()
            timer.item.cancel()
        }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, work, timer) = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?, TimeLimitTimer?) in
            guard !state.finished else { return (nil, nil, nil) }
            state.finished = true
            defer {
                state.continuation = nil
                state.work = nil
                state.timer = nil
            }
            return (state.continuation, state.work, state.timer)
        }
        work?.cancel()
        timer?.item.cancel()
        continuation?.resume(with: result)
    }
}

/// The dispatch work item that ends a `withTimeLimit` at its deadline. `DispatchWorkItem` is
/// thread-safe (cancel from any thread), only not marked `Sendable`.
private final class TimeLimitTimer: @unchecked Sendable {
    let item: DispatchWorkItem
    init(_ item: DispatchWorkItem) { self.item = item }
}
