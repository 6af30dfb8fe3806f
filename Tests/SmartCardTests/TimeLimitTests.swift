import Dispatch
import Foundation
import SmartCardCore
import Synchronization
import Testing

/// `withTimeLimit` judges the operation, not our own process: an answer that came back before
/// the deadline wins even when every cooperative thread was busy when it arrived.
@Suite("Exchange time limits")
struct TimeLimitTests {
    /// Resumes after `milliseconds` from a dispatch thread (as a back end's own thread does).
    static func answer(after milliseconds: Int) async -> [UInt8] {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { continuation.resume(returning: [0x90, 0x00]) }
        }
    }

    @Test("an answer in time wins although the pool was too busy to resume the caller before the deadline")
    func answerInTimeDuringABusyPool() async throws {
        let width = ProcessInfo.processInfo.activeProcessorCount
        let answer = try await withTimeLimit(until: .now + .milliseconds(400)) {
            // Every pool thread blocked (as a long synchronous test or handler would) while the
            // answer arrives at 50 ms and the deadline passes at 400 ms.
            for _ in 0..<width {
                Task { usleep(1_200_000) }
            }
            return await Self.answer(after: 50)
        }
        #expect(answer == [0x90, 0x00])
    }

    @Test("an operation that does not answer ends in a timeout, and a cancelled caller is cancelled")
    func timeoutAndCancellation() async {
        do {
            _ = try await withTimeLimit(until: .now + .milliseconds(100)) { await Self.answer(after: 30_000) }
            Issue.record("no timeout")
        } catch let error as SmartCardError {
            #expect(error.code == .timeout)
        } catch {
            Issue.record("unexpected \(error)")
        }
        let task = Task {
            try await withTimeLimit(until: .now + .seconds(60)) { await Self.answer(after: 30_000) }
        }
        try? await Task.sleep(for: .milliseconds(50))
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("not cancelled")
        } catch let error as SmartCardError {
            #expect(error.code == .cancelled)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("a deadline already past is a timeout at once, the operation never started")
    func pastDeadline() async {
        let started = Flag()
        do {
            _ = try await withTimeLimit(until: .now - .seconds(1)) {
                started.value.withLock { $0 = true }
                return await Self.answer(after: 10)
            }
            Issue.record("no timeout")
        } catch let error as SmartCardError {
            #expect(error.code == .timeout)
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(!started.value.withLock { $0 })
    }
}

private final class Flag: Sendable {
    let value = Mutex(false)
}
