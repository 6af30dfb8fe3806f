import Dispatch
import Synchronization

/// Runs `operation` and returns its result, unless its time runs out first: then the operation's
/// task is cancelled and this throws `SmartCardError.timeout` at once, without waiting for the
/// operation to notice. A caller whose own task is cancelled gets `.cancelled` at once the same
/// way. A back end that cannot interrupt a blocking call (pcsc-lite's SCardTransmit) lets go of
/// it on cancellation (`DedicatedThread.runAbandonable`); one that never returns costs a task,
/// never the caller's time.
///
/// The limit measures the operation, not our own process: the operation gets `deadline - now`
/// counted from when its task actually began, and an answer that came back in time wins over the
/// timer even when the cooperative pool was too busy to resume the caller before the deadline.
/// The timer is a dispatch timer (a busy pool cannot stop it firing); when it fires, the verdict
/// hops through the pool at the caller's priority (libdispatch keeps a cooperative pool per
/// priority: a hop at another would never see this one busy). A hop that ran late found the pool busy, and an answer
/// may be queued there still: the verdict then waits a short grace (`TimeLimitRace.grace`, at most
/// `TimeLimitRace.graces` times) in which the now free pool resumes it.
package func withTimeLimit<T: Sendable>(until deadline: ContinuousClock.Instant,
                                        _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    // No time at all: the operation is not started.
    guard deadline > ContinuousClock.now else { throw SmartCardError(.timeout, "no answer in time") }
    let race = TimeLimitRace<T>(allotted: deadline - ContinuousClock.now, priority: Task.currentPriority)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            guard race.start(continuation) else {
                continuation.resume(throwing: SmartCardError(.cancelled, "the exchange was cancelled"))
                return
            }
            let work = Task {
                race.began(at: ContinuousClock.now)
                do {
                    race.finish(.success(try await operation()))
                } catch {
                    race.finish(.failure(error))
                }
            }
            race.attach(work: work)
            race.arm(at: deadline)
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
        var began: ContinuousClock.Instant?
        var work: Task<Void, Never>?
        var timer: TimeLimitTimer?
        var graces = 0
    }
    /// A hop later than this found the pool busy.
    static var late: Duration { .milliseconds(50) }
    /// How long a late verdict waits for an answer queued behind it, and how many times.
    static var grace: Duration { .milliseconds(250) }
    static var graces: Int { 4 }
    private let state = Mutex(State())
    /// The operation's time, counted from when its task began.
    private let allotted: Duration

    /// The caller's priority: the verdict hops through the same pool as the operation's answer.
    private let priority: TaskPriority

    init(allotted: Duration, priority: TaskPriority) {
        self.allotted = allotted
        self.priority = priority
    }

    /// Takes the caller's continuation; `false` when the race is already over (cancelled before it began).
    func start(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.continuation = continuation
            return true
        }
    }

    func began(at instant: ContinuousClock.Instant) {
        state.withLock { if $0.began == nil { $0.began = instant } }
    }

    func attach(work: Task<Void, Never>) {
        let over = state.withLock { state -> Bool in
            if state.finished { return true }
            state.work = work
            return false
        }
        if over { work.cancel() }
    }

    /// Sets the dispatch timer for `instant`.
    func arm(at instant: ContinuousClock.Instant) {
        let remaining = instant - ContinuousClock.now
        let nanoseconds = max(0, remaining.components.seconds * 1_000_000_000 + remaining.components.attoseconds / 1_000_000_000)
        let timer = TimeLimitTimer(DispatchWorkItem { [self] in
            let fired = ContinuousClock.now
            Task(priority: priority) { self.expire(fired: fired) }
        })
        let over = state.withLock { state -> Bool in
            if state.finished { return true }
            state.timer = timer
            return false
        }
        if over { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), execute: timer.item)
    }

    /// The timer fired at `fired`: a timeout, unless the operation began late (our pool was busy)
    /// and has time left counted from when it began, or this verdict itself ran late (an answer
    /// may be waiting behind it).
    private func expire(fired: ContinuousClock.Instant) {
        let now = ContinuousClock.now
        let rearm = state.withLock { state -> ContinuousClock.Instant? in
            guard !state.finished else { return nil }
            if let began = state.began, began + allotted > now { return began + allotted }
            if now - fired > Self.late, state.graces < Self.graces {
                state.graces += 1
                return now + Self.grace
            }
            return nil
        }
        if let rearm {
            arm(at: rearm)
        } else {
            finish(.failure(SmartCardError(.timeout, "no answer in time")))
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
