import Dispatch

extension BlueZ {
    /// Runs `body` on `queue` (a session's or server's own serial queue: sd-bus is single-threaded
    /// and its calls block, so never on the cooperative pool) and hands back its result.
    static func run<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws(BlueZError) -> T) async throws(BlueZError) -> T {
        let result: Result<T, BlueZError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(BlueZError) -> T in try body() }) }
        }
        return try result.get()
    }

    /// `duration` in the microseconds sd-bus takes; a negative one (a deadline already past) is 0.
    static func microseconds(_ duration: Duration) -> UInt64 {
        guard duration > .zero else { return 0 }
        return UInt64(duration.components.seconds) * 1_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000_000)
    }
}
