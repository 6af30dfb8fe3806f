#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Threads of the operating system, started without Foundation's `Thread` (which would bring
/// Foundation, ICU and their start-up cost into every program that reads a chip): blocking C
/// calls run on them, never on the Swift cooperative pool.
package enum OSThread {
    /// Runs `body` on a new detached thread named `name` (the first 15 bytes show in `ps -L` and
    /// gdb). `stackSize` 0 takes the system's default. Returns nil, or why the system refused a
    /// thread (EAGAIN: the process's or the user's limit) — `body` then never runs.
    @discardableResult
    package static func start(name: String, stackSize: Int = 0, _ body: @escaping @Sendable () -> Void) -> String? {
        let context = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if stackSize > 0 { pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN))) }
        var thread = pthread_t()
        let result = pthread_create(&thread, &attributes, threadEntry, context)
        pthread_attr_destroy(&attributes)
        if result == 0 { return nil }
        Unmanaged<ThreadStart>.fromOpaque(context).release()
        return "the system refused a thread for \(name): \(String(cString: strerror(result)))"
    }

    /// Sleeps the calling thread (never call it from a task).
    package static func sleep(milliseconds: Int) {
        var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }
}

/// What a new thread runs, handed to it through pthread_create's context pointer.
private final class ThreadStart: @unchecked Sendable {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}

private func threadEntry(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    let start = Unmanaged<ThreadStart>.fromOpaque(context).takeRetainedValue()
    nameCurrentThread(start.name)
    start.body()
    return nil
}

/// Names the calling thread as `ps -L`, top and gdb show it (Linux keeps 15 bytes):
/// pthread_setname_np is a GNU extension Swift's Glibc module does not offer; /proc does the same.
/// Best effort: a thread without a name works the same.
private func nameCurrentThread(_ name: String) {
    #if os(Linux)
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
    #endif
}
