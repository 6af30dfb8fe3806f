import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client written from RFC 6455 over a plain loopback socket, for hostile-page tests:
/// it sends exactly the frames it is told to (masked, any opcode, any FIN, invalid UTF-8 …),
/// can stop reading, abort with a TCP reset, or trickle bytes.
public final class RawSocket: @unchecked Sendable {  // a file descriptor; used by one thread at a time
    public let fd: Int32
    /// Where the async variants block: never Swift's cooperative pool, which a blocked `recv`
    /// would starve (two threads on a two-core machine).
    let queue = DispatchQueue(label: "gbgbridge.raw-socket")

    /// Connects to `address` (IPv4, 127.0.0.1 unless given):`port`, blocking, with receive and send timeouts.
    public init(port: Int, timeout: Int = 30, address: String = "127.0.0.1") throws {
        let host = address
        // `self.fd` is set only once connected: a class whose stored properties are all set runs
        // its deinit when its initializer throws, and this one's closed the descriptor a second
        // time — by then, maybe another thread's newly opened file (a suite's fixture read failed
        // with EBADF beside the tests that connect to a refused port).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let failure = errno
            close(fd)
            throw RawSocketError("connect: errno \(failure)")
        }
        self.fd = fd
        setTimeout(seconds: timeout)
    }

    deinit { close(fd) }

    public func setTimeout(seconds: Int) {
        var value = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Shrinks the receive buffer (a page that reads nothing fills it quickly).
    public func setReceiveBuffer(_ bytes: Int32) {
        var value = bytes
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.send(fd, base + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 { sent += n } else if n < 0 && errno == EINTR { continue } else { return false }
        }
        return true
    }

    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// A plain HTTP/1.1 GET (Connection: close) on this connection: the status code and the body.
    public func get(_ path: String, host: String) -> (status: Int, body: [UInt8])? {
        guard send("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n") else { return nil }
        var response: [UInt8] = []
        while let chunk = receive(), !chunk.isEmpty, response.count < 16 << 20 { response += chunk }
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, response.count - 3)).first(where: { Array(response[$0..<($0 + 4)]) == separator }),
              let statusLine = String(decoding: response[..<end], as: UTF8.self).split(separator: "\r\n").first,
              let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        return (status, Array(response[(end + 4)...]))
    }

    /// Reads what is there (up to `max`); empty at end of stream, `nil` on timeout or error.
    public func receive(max: Int = 65_536) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: max)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return recv(fd, base, max, 0)
            }
            if n >= 0 { return Array(buffer[0..<n]) }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Closes with a TCP reset instead of a FIN (SO_LINGER 0), as a killed browser's kernel does.
    public func abortWithReset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Whether the server has closed the connection (reads drain until end of stream or `within`).
    public func closedByPeer(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        setTimeout(seconds: 1)
        while Date() < deadline {
            guard let bytes = receive() else {
                if errno == ECONNRESET { return true }
                continue
            }
            if bytes.isEmpty { return true }
        }
        return false
    }
}

public struct RawSocketError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A WebSocket over a `RawSocket`.
public final class RawWebSocket: @unchecked Sendable {  // used by one thread at a time in tests
    public enum Opcode: UInt8 { case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10 }

    public struct Frame {
        public var fin: Bool
        public var opcode: UInt8
        public var payload: [UInt8]
        public var closeCode: Int? {
            guard opcode == 8, payload.count >= 2 else { return nil }
            return Int(payload[0]) << 8 | Int(payload[1])
        }
        public var text: String { String(decoding: payload, as: UTF8.self) }
    }

    public let socket: RawSocket
    private var buffer: [UInt8] = []

    /// Opens `path` on 127.0.0.1:`port` with the given `Origin`; throws unless the server answers 101.
    /// `hostHeader` is the Host the server expects when the port is forwarded (a VM's).
    public init(port: Int, path: String, origin: String, timeout: Int = 30, hostHeader: String? = nil) throws {
        socket = try RawSocket(port: port, timeout: timeout)
        let request = "GET \(path) HTTP/1.1\r\nHost: \(hostHeader ?? "127.0.0.1:\(port)")\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: \(origin)\r\n\r\n"
        guard socket.send(request) else { throw RawSocketError("sending the upgrade failed") }
        var head: [UInt8] = []
        while head.firstRange(of: [13, 10, 13, 10]) == nil {
            guard let bytes = socket.receive(max: 1), !bytes.isEmpty else { throw RawSocketError("no upgrade answer") }
            head += bytes
        }
        let status = String(decoding: head, as: UTF8.self)
        guard status.hasPrefix("HTTP/1.1 101") else {
            throw RawSocketError("upgrade refused: \(status.split(separator: "\r\n").first ?? "")")
        }
    }

    /// Sends one client frame (masked, as RFC 6455 §5.3 requires of clients).
    @discardableResult
    public func send(opcode: UInt8, payload: [UInt8], fin: Bool = true) -> Bool {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let length = payload.count
        if length < 126 {
            frame.append(0x80 | UInt8(length))
        } else if length <= 0xFFFF {
            frame += [0x80 | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((UInt64(length) >> (8 * UInt64($0))) & 0xFF) }
        }
        let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return socket.send(frame)
    }

    @discardableResult
    public func sendText(_ text: String) -> Bool { send(opcode: 1, payload: Array(text.utf8)) }

    /// The next frame from the server (`nil` at end of stream or on timeout).
    public func receiveFrame() -> Frame? {
        func need(_ count: Int) -> Bool {
            while buffer.count < count {
                guard let bytes = socket.receive(), !bytes.isEmpty else { return false }
                buffer += bytes
            }
            return true
        }
        guard need(2) else { return nil }
        let fin = buffer[0] & 0x80 != 0
        let opcode = buffer[0] & 0x0F
        var length = Int(buffer[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard need(4) else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        } else if length == 127 {
            guard need(10) else { return nil }
            length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        guard need(offset + length) else { return nil }
        let payload = Array(buffer[offset..<(offset + length)])
        buffer.removeFirst(offset + length)
        return Frame(fin: fin, opcode: opcode, payload: payload)
    }

    /// The next text message, answering pings; `nil` at a close, end of stream or timeout.
    public func receiveText() -> String? {
        while let frame = receiveFrame() {
            switch frame.opcode {
            case 1: return frame.text
            case 9: send(opcode: 10, payload: frame.payload)
            case 8: return nil
            default: continue
            }
        }
        return nil
    }

    /// Reads until the server's close frame; returns its code (`nil` if the connection just ended).
    public func receiveCloseCode() -> Int? {
        while let frame = receiveFrame() {
            if frame.opcode == 8 { return frame.closeCode ?? 1005 }
        }
        return nil
    }

    /// Waits for the response to `correlationId`, answering pings; events on the way are skipped.
    public func response(to correlationId: String) -> [String: Any]? {
        while let text = receiveText() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { continue }
            if object["type"] as? String == "response", object["correlationId"] as? String == correlationId { return object }
        }
        return nil
    }
}

// MARK: - Async variants for tests

/// Runs blocking socket work on `queue` and waits for it without holding a cooperative thread.
func offPool<T: Sendable>(_ queue: DispatchQueue, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        queue.async { continuation.resume(with: Result { try body() }) }
    }
}

func offPool<T: Sendable>(_ queue: DispatchQueue, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: body()) }
    }
}

extension RawSocket {
    /// Connects without blocking a cooperative thread.
    public static func connect(port: Int, timeout: Int = 30) async throws -> RawSocket {
        try await offPool(DispatchQueue.global()) { try RawSocket(port: port, timeout: timeout) }
    }

    @discardableResult
    public func send(_ bytes: [UInt8]) async -> Bool { await offPool(queue) { self.send(bytes) } }
    @discardableResult
    public func send(_ text: String) async -> Bool { await offPool(queue) { self.send(text) } }
    public func receive(max: Int = 65_536) async -> [UInt8]? { await offPool(queue) { self.receive(max: max) } }
    public func closedByPeer(within seconds: Double) async -> Bool { await offPool(queue) { self.closedByPeer(within: seconds) } }
}

extension RawWebSocket {
    /// Opens a WebSocket without blocking a cooperative thread.
    public static func connect(port: Int, path: String, origin: String, timeout: Int = 30) async throws -> RawWebSocket {
        try await offPool(DispatchQueue.global()) { try RawWebSocket(port: port, path: path, origin: origin, timeout: timeout) }
    }

    @discardableResult
    public func send(opcode: UInt8, payload: [UInt8], fin: Bool = true) async -> Bool {
        await offPool(socket.queue) { self.send(opcode: opcode, payload: payload, fin: fin) }
    }
    @discardableResult
    public func sendText(_ text: String) async -> Bool { await offPool(socket.queue) { self.sendText(text) } }
    public func receiveText() async -> String? { await offPool(socket.queue) { self.receiveText() } }
    public func receiveCloseCode() async -> Int? { await offPool(socket.queue) { self.receiveCloseCode() } }
    public func response(to correlationId: String) async -> [String: Any]? {
        await offPool(socket.queue) { self.response(to: correlationId).map(UncheckedSendable.init) }?.value
    }
}

/// Carries a JSON object (not `Sendable` by type) from the socket's queue to the test.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
