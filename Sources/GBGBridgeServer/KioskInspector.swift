import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where Chrome DevTools may attach to the kiosk's page (`serve --kiosk URL --inspect [HOST:]PORT`),
/// as Safari's Web Inspector attaches to a WKWebView on iOS.
///
/// Chromium's DevTools HTTP server only listens on loopback (it ignores `--remote-debugging-address`
/// outside headless mode). On a loopback address Chromium listens on the port itself; on any
/// other address Chromium listens on a loopback port of its choosing and `KioskInspector` forwards
/// connections from the address to it. The protocol has no authentication: whoever reaches the
/// port controls the browser and through it the bridge — prefer loopback and an SSH tunnel.
public struct KioskInspectAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int) {
        (self.host, self.port) = (host, port)
    }

    /// `PORT`, `HOST:PORT` or `[V6]:PORT`; `nil` when it is none of them or the port is not 1–65535.
    public init?(argument: String) {
        let host: Substring
        let portText: Substring
        if let colon = argument.lastIndex(of: ":") {
            host = argument[..<colon]
            portText = argument[argument.index(after: colon)...]
        } else {
            host = "127.0.0.1"
            portText = argument[...]
        }
        guard let port = Int(portText), (1...65_535).contains(port) else { return nil }
        var name = String(host)
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else { return nil }
        self.init(host: name, port: port)
    }

    /// Chromium itself can listen here (its DevTools server binds 127.0.0.1 only).
    public var chromiumListensItself: Bool { host == "127.0.0.1" || host == "localhost" }
    public var isLoopback: Bool { chromiumListensItself || host == "::1" || host.hasPrefix("127.") }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// What went wrong setting up `--inspect`, in words.
public struct KioskInspectError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Listens on an address and forwards every connection (at most `maxConnections` at once) to
/// Chromium's DevTools port on 127.0.0.1, bytes both ways, on threads of its own. A connection
/// that carries nothing for `idleLimit` is closed; when all places are taken, a new connection
/// takes the place of the one idle longest (if it has been idle `evictableAfter`): eight idle
/// connections held the inspector for an hour before (issue 42).
final class KioskInspector: Sendable {
    static let maxConnections = 8
    static let idleLimit: Duration = .seconds(300)
    static let evictableAfter: Duration = .seconds(15)
    private let idleLimit: Duration
    private let evictableAfter: Duration
    private let listener: Int32
    private let target = Atomic<Int>(0)
    private let connections = Mutex<[Connection]>([])
    private let stopped = Atomic<Bool>(false)

    /// One forwarded connection: its two descriptors (shut down to end it from outside) and when it
    /// last carried a byte.
    final class Connection: Sendable {
        let client: Int32
        let upstream: Int32
        private let state = Mutex<(lastActivity: ContinuousClock.Instant, closed: Bool)>((ContinuousClock.now, false))

        init(client: Int32, upstream: Int32) { (self.client, self.upstream) = (client, upstream) }

        var idle: Duration { ContinuousClock.now - state.withLock { $0.lastActivity } }
        func touch() { state.withLock { $0.lastActivity = ContinuousClock.now } }

        /// Ends the connection: its pump sees both ends shut and returns.
        func end() {
            state.withLock { state in
                guard !state.closed else { return }
                shutdown(client, Int32(SHUT_RDWR))
                shutdown(upstream, Int32(SHUT_RDWR))
            }
        }

        /// The pump is done: the descriptors are closed (never shut down after this).
        func close() {
            state.withLock { state in
                state.closed = true
                Glibc.close(client)
                Glibc.close(upstream)
            }
        }
    }

    /// Connections forwarded now (tests).
    var openConnections: Int { connections.withLock { $0.count } }

    /// Binds `address` now (so a taken port or an unknown host is an error at start-up).
    init(address: KioskInspectAddress, idleLimit: Duration = KioskInspector.idleLimit,
         evictableAfter: Duration = KioskInspector.evictableAfter) throws(KioskInspectError) {
        self.idleLimit = idleLimit
        self.evictableAfter = evictableAfter
        listener = try Self.bind(address)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "gbgbridge-inspect"
        thread.start()
    }

    /// Where Chromium's DevTools server listens now (it changes when the browser is restarted).
    func forward(to port: Int) { target.store(port, ordering: .releasing) }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit { stop() }

    /// Checks that `address` can be listened on (a taken port, an address not of this machine)
    /// without keeping it.
    static func check(_ address: KioskInspectAddress) throws(KioskInspectError) {
        close(try bind(address))
    }

    private static func bind(_ address: KioskInspectAddress) throws(KioskInspectError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address.host, String(address.port), &hints, &list) == 0, let first = list else {
            throw KioskInspectError("--inspect \(address): '\(address.host)' is not an address of this machine")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KioskInspectError("--inspect \(address): cannot open a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard Glibc.bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let reason = errno == EADDRINUSE ? "the port is in use (another inspector or program?)"
                : errno == EADDRNOTAVAIL ? "'\(address.host)' is not an address of this machine"
                : errno == EACCES ? "not allowed to listen there" : String(cString: strerror(errno))
            close(fd)
            throw KioskInspectError("--inspect \(address): \(reason)")
        }
        guard listen(fd, 8) == 0 else {
            close(fd)
            throw KioskInspectError("--inspect \(address): cannot listen: \(String(cString: strerror(errno)))")
        }
        return fd
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE { usleep(100_000); continue }
                return
            }
            let port = target.load(ordering: .acquiring)
            guard port > 0, makeRoom(), let upstream = Self.connectLoopback(port) else {
                close(client)
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let connection = Connection(client: client, upstream: upstream)
            connections.withLock { $0.append(connection) }
            let thread = Thread { [self] in
                Self.pump(connection, idleLimit: idleLimit)
                connection.close()
                connections.withLock { list in list.removeAll { $0 === connection } }
            }
            thread.name = "gbgbridge-inspect-connection"
            thread.start()
        }
    }

    /// Whether a new connection has a place: a free one, or the place of the connection idle
    /// longest when it has been idle `evictableAfter` (it is ended; its pump frees the place).
    private func makeRoom() -> Bool {
        let (full, oldest) = connections.withLock { list -> (Bool, Connection?) in
            guard list.count >= Self.maxConnections else { return (false, nil) }
            return (true, list.max { $0.idle < $1.idle })
        }
        guard full else { return true }
        guard let oldest, oldest.idle >= evictableAfter else { return false }
        oldest.end()
        // Its pump ends at once; wait (up to 2 s on a busy machine) for the place.
        for _ in 0..<400 where connections.withLock({ $0.count }) >= Self.maxConnections { usleep(5_000) }
        return connections.withLock { $0.count } < Self.maxConnections
    }

    private static func connectLoopback(_ port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(fd); return nil }
        return fd
    }

    /// Copies bytes both ways until either side closes, the connection is ended, or nothing
    /// passes for `idleLimit`.
    private static func pump(_ connection: Connection, idleLimit: Duration) {
        let (a, b) = (connection.client, connection.upstream)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        let idleMilliseconds = Int32(max(1, idleLimit.components.seconds * 1000 + idleLimit.components.attoseconds / 1_000_000_000_000_000))
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, idleMilliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return }
            connection.touch()
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                let peer = index == 0 ? b : a
                var sent = 0
                while sent < count {
                    let written = buffer.withUnsafeBytes { raw -> Int in
                        guard let base = raw.baseAddress else { return -1 }
                        return send(peer, base + sent, count - sent, Int32(MSG_NOSIGNAL))
                    }
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { return }
                    sent += written
                }
            }
        }
    }
}
