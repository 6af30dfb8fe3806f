import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import Testing
@testable import GBGBridgeServer

/// Issue 42's host-side bounds, at their seams: who may read the operators' pages, how often a
/// console flood reaches the log, and the DevTools forwarder's idle connections (real sockets).
@Suite("Operators' pages, console floods, the DevTools forwarder")
struct OperatorAccessTests {
    static func headers(_ fields: [(String, String)]) -> HTTPFields {
        var headers = HTTPFields()
        for (name, value) in fields { if let name = HTTPField.Name(name) { headers.append(HTTPField(name: name, value: value)) } }
        return headers
    }

    @Test("curl and Prometheus (no Sec-Fetch) and a typed URL are served; any page's fetch is refused, the bridge's own origin too")
    func whoIsAnOperator() {
        #expect(OperatorAccess.judge(Self.headers([])) == .operatorRequest)
        #expect(OperatorAccess.judge(Self.headers([("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document"),
                                                   ("Sec-Fetch-User", "?1")])) == .operatorRequest)
        #expect(OperatorAccess.judge(Self.headers([("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "navigate"),
                                                   ("Sec-Fetch-Dest", "document")])) == .operatorRequest)
        // A same-origin fetch (no Origin on a GET): a subresource, allowed only with a page token.
        #expect(OperatorAccess.judge(Self.headers([("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors"),
                                                   ("Sec-Fetch-Dest", "empty")])) == .subresource)
        // In a frame, from another site, with an Origin: refused.
        #expect(OperatorAccess.judge(Self.headers([("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "navigate"),
                                                   ("Sec-Fetch-Dest", "iframe")])) == .subresource)
        #expect(OperatorAccess.judge(Self.headers([("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"),
                                                   ("Sec-Fetch-Dest", "document")])) == .refused)
        #expect(OperatorAccess.judge(Self.headers([("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "navigate"),
                                                   ("Sec-Fetch-Dest", "document")])) == .refused)
        #expect(OperatorAccess.judge(Self.headers([("Origin", "http://127.0.0.1:8450")])) == .refused)
    }

    @Test("page tokens: only issued ones, at most 32 live")
    func pageTokens() {
        let tokens = OperatorPageTokens()
        let first = tokens.issue()
        #expect(tokens.isValid(first) && first.count == 32)
        #expect(!tokens.isValid(nil) && !tokens.isValid("") && !tokens.isValid(String(repeating: "0", count: 32)))
        for _ in 0..<OperatorPageTokens.capacity { _ = tokens.issue() }
        #expect(!tokens.isValid(first), "the oldest token is retired")
    }

    @Test("30 s of console flood at 10,000 entries a second: at most a line a second, each counting what it left out")
    func consoleFloodIsThrottled() {
        var throttle = ConsoleLogThrottle()
        let start = ContinuousClock.now
        var lines = 0, counted = 0
        for index in 0..<300_000 {
            if let dropped = throttle.admit(now: start + .microseconds(index * 100)) {
                lines += 1
                counted += dropped.values.reduce(0, +) + 1
            }
        }
        #expect(lines <= 31 && lines >= 29, "\(lines) lines")
        #expect(counted + 9_999 >= 300_000, "the lines' counts account for the entries: \(counted)")
    }

    @Test("a page that logs and reloads itself: one allowance for its target and origin across reloads, bridging lines included")
    func reloadingFloodIsThrottledAcrossReloads() {
        var throttles = KioskLogThrottles()
        let start = ContinuousClock.now
        var lines = 0, counted = 0
        var notes: [String] = []
        // 30 s: 20 reloads a second, each a "bridging" line and 50 console entries.
        for tick in 0..<600 {
            let now = start + .milliseconds(tick * 50)
            for kind in [ConsoleLogThrottle.Kind.load] + Array(repeating: .console, count: 50) {
                if let dropped = throttles.admit(target: "T1", origin: "https://journey.example", kind, now: now) {
                    lines += 1
                    counted += dropped.values.reduce(0, +) + 1
                    notes.append(ConsoleLogThrottle.note(dropped))
                }
            }
        }
        #expect(lines <= 31, "\(lines) lines in 30 s")
        #expect(counted + 1_100 >= 600 * 51, "what was left out is counted: \(counted)")
        #expect(notes.contains { $0.contains("page loads") && $0.contains("console entries") }, "\(notes.prefix(3))")
        // Another origin of the same kiosk has its own line.
        #expect(throttles.admit(target: "T1", origin: "https://other.example", .load, now: start + .seconds(29)) != nil)
    }

    /// A loopback TCP echo server on its own thread; its port.
    static func echoServer() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        listen(fd, 64)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                let worker = Thread {
                    var buffer = [UInt8](repeating: 0, count: 1024)
                    while true {
                        let count = read(client, &buffer, buffer.count)
                        guard count > 0 else { close(client); return }
                        _ = send(client, buffer, count, Int32(MSG_NOSIGNAL))
                    }
                }
                worker.start()
            }
        }
        thread.start()
        return Int32(UInt16(bigEndian: address.sin_port))
    }

    static func connect(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0002).bigEndian
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Whether `fd` echoes a byte back (the forwarder carries it).
    static func echoes(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0x2A
        guard send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 else { return false }
        var answer: UInt8 = 0
        return read(fd, &answer, 1) == 1 && answer == 0x2A
    }

    @Test("eight idle forwarded connections: a ninth takes the place of the one idle longest")
    func inspectorEvictsTheLongestIdle() async throws {
        let upstream = try Self.echoServer()
        let port = Int.random(in: 20_000...60_000)
        // An idle limit far beyond the test: only eviction closes a connection here, however slow the machine.
        let inspector = try KioskInspector(address: KioskInspectAddress(host: "127.0.0.2", port: port), idleLimit: .seconds(120),
                                           evictableAfter: .milliseconds(500))
        defer { inspector.stop() }
        inspector.forward(to: Int(upstream))
        var clients: [Int32] = []
        defer { for fd in clients { close(fd) } }
        for index in 0..<KioskInspector.maxConnections {
            let fd = Self.connect(port)
            #expect(Self.echoes(fd), "connection \(index + 1) is forwarded")
            clients.append(fd)
        }
        #expect(inspector.openConnections == KioskInspector.maxConnections)
        try await Task.sleep(for: .seconds(1))
        let ninth = Self.connect(port)
        clients.append(ninth)
        #expect(Self.echoes(ninth), "a ninth connection is forwarded")
        #expect(inspector.openConnections == KioskInspector.maxConnections)
        // The first was idle longest: it was ended.
        var byte: UInt8 = 0
        #expect(read(clients[0], &byte, 1) == 0, "the longest-idle connection was closed")
        for fd in clients[1...] { #expect(Self.echoes(fd), "the others still carry bytes") }
    }

    @Test("a forwarded connection that carries nothing for its idle limit is closed")
    func inspectorClosesIdleConnections() async throws {
        let upstream = try Self.echoServer()
        let port = Int.random(in: 20_000...60_000)
        let inspector = try KioskInspector(address: KioskInspectAddress(host: "127.0.0.2", port: port), idleLimit: .seconds(1))
        defer { inspector.stop() }
        inspector.forward(to: Int(upstream))
        let clients = [Self.connect(port), Self.connect(port)]
        defer { for fd in clients { close(fd) } }
        for fd in clients { #expect(Self.echoes(fd)) }
        // Closed a second after their last byte; waited for (not timed) up to 30 s.
        for _ in 0..<300 where inspector.openConnections > 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(inspector.openConnections == 0)
        var byte: UInt8 = 0
        for fd in clients { #expect(read(fd, &byte, 1) == 0, "the client sees the connection end") }
    }
}
