import ChildProcesses
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A Chromium started with `--remote-debugging-pipe`: the DevTools protocol runs over file
/// descriptors 3 (commands to the browser) and 4 (replies and events from it) as NUL-delimited
/// JSON — never over a debugging port, which any local process could connect to.
public final class ChromiumProcess: Sendable {
    private let process: ChildProcess
    public let devTools: DevToolsConnection
    public let userDataDirectory: URL

    /// Finds Debian's Chromium (or `$GBGBRIDGE_CHROMIUM`).
    public static func executable() -> String? {
        if let configured = ProcessInfo.processInfo.environment["GBGBRIDGE_CHROMIUM"], !configured.isEmpty { return configured }
        return ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/lib/chromium/chromium", "/usr/bin/google-chrome"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts Chromium with `arguments` (plus the pipe and profile flags) and connects DevTools.
    public init(executable: String? = nil, arguments: [String], userDataDirectory: URL? = nil,
                maxQueuedPageMessageBytes: Int = 64 << 20, eventMethods: Set<String>? = nil) throws {
        // Chromium may crash while we write to its pipe: that is EPIPE here, never SIGPIPE.
        ChildProcess.ignoreBrokenPipes()
        guard let path = executable ?? Self.executable() else {
            throw DevToolsError("Chromium is not installed (apt-get install chromium)")
        }
        let profile = userDataDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("gbgbridge-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        self.userDataDirectory = profile

        let toBrowser: (read: Int32, write: Int32)
        let fromBrowser: (read: Int32, write: Int32)
        do {
            toBrowser = try ChildProcess.makePipe()
            do { fromBrowser = try ChildProcess.makePipe() } catch {
                close(toBrowser.read)
                close(toBrowser.write)
                throw error
            }
        } catch {
            throw DevToolsError("\(error)")
        }
        var flags = ["--remote-debugging-pipe", "--user-data-dir=\(profile.path)", "--no-first-run", "--no-default-browser-check",
                     "--disable-background-networking", "--disable-sync", "--disable-component-update", "--password-store=basic"]
        if getuid() == 0 { flags.append("--no-sandbox") }  // Chromium refuses to run as root with its sandbox
        // Chromium's own output goes to /dev/null; it is noisy and says nothing the protocol doesn't.
        let spawned = Result { () throws(ChildProcessError) -> ChildProcess in
            try ChildProcess(executable: path, arguments: flags + arguments, inheriting: [3: toBrowser.read, 4: fromBrowser.write])
        }
        close(toBrowser.read)
        close(fromBrowser.write)
        switch spawned {
        case .success(let child):
            process = child
        case .failure(let error):
            close(toBrowser.write)
            close(fromBrowser.read)
            throw DevToolsError(error.description)
        }
        devTools = DevToolsConnection(writeFD: toBrowser.write, readFD: fromBrowser.read,
                                      maxQueuedBindingBytes: maxQueuedPageMessageBytes, eventMethods: eventMethods)
    }

    /// The browser's process id.
    public var pid: pid_t { process.pid }

    /// Whether the browser process still runs.
    public var isRunning: Bool { process.isRunning }

    /// Closes the browser (Browser.close, then SIGTERM/SIGKILL) and removes a temporary profile.
    public func terminate(removeProfile: Bool = true) async {
        if process.isRunning {
            _ = try? await devTools.send("Browser.close", timeout: .seconds(3))
            for _ in 0..<30 where process.isRunning {
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        await process.terminate(gracePeriod: .milliseconds(500))
        devTools.close()
        if removeProfile { try? FileManager.default.removeItem(at: userDataDirectory) }
    }
}

public struct DevToolsError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A DevTools protocol session over a pipe pair: commands with ids, replies matched to them, and
/// every event on `events`.
public final class DevToolsConnection: Sendable {
    /// An event from the browser: `method`, `params`, and the session it belongs to.
    public struct Event: @unchecked Sendable {
        public let method: String
        public let params: [String: Any]
        public let sessionId: String?
        /// The size of the message on the pipe (counted against the page-message queue limit).
        let bytes: Int
    }

    /// The largest single DevTools message read; a longer one is skipped (never buffered whole).
    public static let maxMessageBytes = 64 << 20

    /// What a page posted through its binding and what is waiting to be handled, in bytes.
    private struct Queue {
        var bindingBytes = 0
        var bindingCount = 0
        var dropped = 0
        /// Console errors and exceptions waiting (for operators' diagnostics).
        var consoleCount = 0
        var consoleDropped = 0
    }
    private let queue = Mutex(Queue())
    private let maxQueuedBindingBytes: Int
    /// At most this many page messages wait (the event stream keeps 10,000 events of all kinds).
    static let maxQueuedBindingEvents = 5_000
    /// At most this many console errors and exceptions wait: a page logging in a loop cannot push
    /// the bridge's own events out of the stream.
    static let maxQueuedConsoleEvents = 200
    /// The console calls passed on: errors and failed assertions (console.log is never read).
    static let consoleTypes: Set<String> = ["error", "assert"]
    /// A console event larger than this (a page logging a huge string or object) is kept only as
    /// where it happened and how large it was: 200 waiting events stay within a few MiB.
    static let maxKeptConsoleEventBytes = 16 << 10

    /// `params` of a console event without its (large) content: the kind, the page's context,
    /// the first stack frame and a note of the size.
    static func shortened(_ method: String, _ params: [String: Any], bytes: Int) -> [String: Any] {
        let note = "(a message of \(bytes) bytes: too large to keep)"
        func frame(_ trace: Any?) -> [String: Any]? {
            guard let first = ((trace as? [String: Any])?["callFrames"] as? [[String: Any]])?.first else { return nil }
            return first.filter { ["url", "lineNumber", "columnNumber"].contains($0.key) && !(($0.value as? String)?.utf8.count ?? 0 > 2048) }
        }
        if method == "Runtime.consoleAPICalled" {
            var short: [String: Any] = ["type": params["type"] ?? "error", "args": [["type": "string", "value": note]]]
            short["executionContextId"] = params["executionContextId"]
            if let first = frame(params["stackTrace"]) { short["stackTrace"] = ["callFrames": [first]] }
            return short
        }
        let details = params["exceptionDetails"] as? [String: Any] ?? [:]
        var short: [String: Any] = ["text": note]
        for key in ["executionContextId", "lineNumber", "columnNumber"] { short[key] = details[key] }
        if let url = details["url"] as? String, url.utf8.count <= 2048 { short["url"] = url }
        return ["exceptionDetails": short]
    }

    static func isConsole(_ method: String) -> Bool { method == "Runtime.consoleAPICalled" || method == "Runtime.exceptionThrown" }
    /// The events passed on (`nil`: all). Others — console output, exceptions, network chatter a
    /// page can produce without bound — are dropped as they are read.
    private let eventMethods: Set<String>?

    private struct State {
        var nextId = 1
        var waiting: [Int: CheckedContinuation<[String: Any], any Error>] = [:]
        var closed = false
    }

    private let writeFD: Int32
    private let readFD: Int32
    private let state = Mutex(State())
    private let writeLock = Mutex(())
    public let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation

    init(writeFD: Int32, readFD: Int32, maxQueuedBindingBytes: Int = 64 << 20, eventMethods: Set<String>? = nil) {
        self.writeFD = writeFD
        self.readFD = readFD
        self.maxQueuedBindingBytes = maxQueuedBindingBytes
        self.eventMethods = eventMethods
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(10_000))
        let thread = Thread { [self] in self.readLoop() }
        thread.name = "devtools-pipe"
        thread.start()
    }

    /// Sends a command and waits for its result (`result` object); throws the protocol's error.
    @discardableResult
    public func send(_ method: String, params: [String: Any] = [:], sessionId: String? = nil,
                     timeout: Duration = .seconds(30)) async throws -> [String: Any] {
        let id = state.withLock { state -> Int in
            defer { state.nextId += 1 }
            return state.nextId
        }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let sessionId { message["sessionId"] = sessionId }
        let data = try JSONSerialization.data(withJSONObject: message)
        let timer = Task {
            try await Task.sleep(for: timeout)
            self.fail(id, DevToolsError("\(method) timed out"))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let closed = state.withLock { state -> Bool in
                if state.closed { return true }
                state.waiting[id] = continuation
                return false
            }
            if closed {
                continuation.resume(throwing: DevToolsError("the browser is gone"))
                return
            }
            if !write(Array(data) + [0]) { fail(id, DevToolsError("the browser is gone")) }
        }
    }

    /// Sends a command without waiting for its answer.
    public func post(_ method: String, params: [String: Any] = [:], sessionId: String? = nil) {
        let id = state.withLock { state -> Int in
            defer { state.nextId += 1 }
            return state.nextId
        }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let sessionId { message["sessionId"] = sessionId }
        if let data = try? JSONSerialization.data(withJSONObject: message) { _ = write(Array(data) + [0]) }
    }

    private func fail(_ id: Int, _ error: any Error) {
        state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: error)
    }

    private func write(_ bytes: [UInt8]) -> Bool {
        writeLock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { raw -> Int in
                    guard let base = raw.baseAddress else { return 0 }
                    return Glibc.write(writeFD, base + offset, bytes.count - offset)
                }
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return false }
            }
            return true
        }
    }

    private func readLoop() {
        var buffer: [UInt8] = []
        var skipping = false  // inside a message over the size limit: dropped up to its NUL
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return read(readFD, base, raw.count)
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                _ = Glibc.close(readFD)
                break
            }
            var start = 0
            while start < n {
                guard let nul = chunk[start..<n].firstIndex(of: 0) else {
                    if !skipping { buffer.append(contentsOf: chunk[start..<n]) }
                    break
                }
                if !skipping { buffer.append(contentsOf: chunk[start..<nul]) }
                if skipping {
                    skipping = false
                } else {
                    dispatch(buffer)
                }
                buffer.removeAll(keepingCapacity: buffer.count <= 1 << 20)
                start = nul + 1
            }
            if buffer.count > Self.maxMessageBytes {
                buffer = []
                skipping = true
                queue.withLock { $0.dropped += 1 }
            }
        }
        close()
    }

    /// Page messages dropped because they were too large or the queue was full.
    public var droppedPageMessages: Int { queue.withLock { $0.dropped } }
    /// Console errors and exceptions dropped because too many were waiting.
    public var droppedConsoleEvents: Int { queue.withLock { $0.consoleDropped } }

    /// Called by the consumer of `events` for each event it took (frees its queue space).
    public func consumed(_ event: Event) {
        if Self.isConsole(event.method) {
            queue.withLock { $0.consoleCount -= 1 }
            return
        }
        guard event.method == "Runtime.bindingCalled" else { return }
        queue.withLock {
            $0.bindingBytes -= event.bytes
            $0.bindingCount -= 1
        }
    }

    private func dispatch(_ bytes: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return }
        if let id = object["id"] as? Int {
            let continuation = state.withLock { $0.waiting.removeValue(forKey: id) }
            if let error = object["error"] as? [String: Any] {
                continuation?.resume(throwing: DevToolsError("\(error["message"] ?? "error") (\(error["code"] ?? "?"))"))
            } else {
                continuation?.resume(returning: object["result"] as? [String: Any] ?? [:])
            }
        } else if let method = object["method"] as? String {
            if let eventMethods, !eventMethods.contains(method) { return }
            if method == "Runtime.bindingCalled" {
                // What a page posts is bounded: a flood of large messages waits no deeper than this.
                let admitted = queue.withLock { queue -> Bool in
                    guard queue.bindingBytes + bytes.count <= maxQueuedBindingBytes,
                          queue.bindingCount < Self.maxQueuedBindingEvents else {
                        queue.dropped += 1
                        return false
                    }
                    queue.bindingBytes += bytes.count
                    queue.bindingCount += 1
                    return true
                }
                guard admitted else { return }
            }
            if Self.isConsole(method) {
                if method == "Runtime.consoleAPICalled",
                   !Self.consoleTypes.contains((object["params"] as? [String: Any])?["type"] as? String ?? "") { return }
                let admitted = queue.withLock { queue -> Bool in
                    guard queue.consoleCount < Self.maxQueuedConsoleEvents else {
                        queue.consoleDropped += 1
                        return false
                    }
                    queue.consoleCount += 1
                    return true
                }
                guard admitted else { return }
            }
            var params = object["params"] as? [String: Any] ?? [:]
            if Self.isConsole(method), bytes.count > Self.maxKeptConsoleEventBytes {
                params = Self.shortened(method, params, bytes: bytes.count)
            }
            eventSink.yield(Event(method: method, params: params, sessionId: object["sessionId"] as? String, bytes: bytes.count))
        }
    }

    /// Ends the session: pending commands fail, the event stream finishes.
    public func close() {
        let (waiting, first) = state.withLock { state -> ([CheckedContinuation<[String: Any], any Error>], Bool) in
            guard !state.closed else { return ([], false) }
            state.closed = true
            defer { state.waiting.removeAll() }
            return (Array(state.waiting.values), true)
        }
        guard first else { return }
        waiting.forEach { $0.resume(throwing: DevToolsError("the browser is gone")) }
        eventSink.finish()
        writeLock.withLock { _ in _ = Glibc.close(writeFD) }
    }
}
