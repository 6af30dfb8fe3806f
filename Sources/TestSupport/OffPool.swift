import Dispatch

/// Runs a long synchronous test body (a CPU loop, blocking file work) on a dispatch queue and
/// waits for it without holding one of the cooperative pool's threads: on a 2-core CI machine two
/// such bodies on the pool starve every other suite's in-process reads at once.
public func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global(qos: .utility).async { continuation.resume(with: Result { try body() }) }
    }
}
