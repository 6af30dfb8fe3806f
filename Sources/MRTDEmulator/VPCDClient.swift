import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the vpcd link reports.
public enum VPCDEvent: Sendable, Hashable {
    case connected
    case disconnected(String)
    case powerOn, powerOff, reset
    case apdu(command: Int, response: Int)
    case cardRemoved
}

/// A card the vpcd link can put into a reader: a passport chip, an mdoc holder.
public protocol VirtualCard: AnyObject, Sendable {
    var atr: [UInt8] { get }
    /// Whether the card is out of the field.
    var isRemoved: Bool { get }
    /// Whether the card, once out of the field, comes back by itself.
    var returnsByItself: Bool { get }
    /// Power-on or warm reset.
    func reset()
    /// Puts a removed card back.
    func reinsert()
    func process(_ command: [UInt8]) -> VirtualCardOutput
    /// How long the transport waits before handing over this answer (latency faults, quirks).
    func answerDelay(commandBytes: Int, responseBytes: Int) -> Duration
}

public typealias VirtualCardOutput = VirtualPassportChip.Output

extension VirtualPassportChip: VirtualCard {
    public func answerDelay(commandBytes: Int, responseBytes: Int) -> Duration {
        faults.answerDelay(commandBytes: commandBytes, responseBytes: responseBytes) + takeAnswerPenalty()
    }
}

/// Puts a virtual chip into a real `pcscd` through the vpcd reader driver (Debian's
/// `vsmartcard-vpcd`): connects to vpcd's TCP port and answers its requests — 2-byte big-endian
/// length, then either one control byte (00 power off, 01 power on, 02 reset, 04 get ATR) or an
/// APDU. Runs on a thread of its own and reconnects when pcscd (and so vpcd) restarts.
public final class VPCDClient<Card: VirtualCard>: Sendable {
    public typealias Event = VPCDEvent

    public let host: String
    public let port: UInt16
    public let chip: Card
    private let onEvent: @Sendable (Event) -> Void

    private struct State {
        var socket: Int32 = -1
        var stopping = false
        var inserted = true
        var connected = false
        var started = false
    }
    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    public init(chip: Card, host: String = "127.0.0.1", port: UInt16 = 35963,
                onEvent: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.chip = chip
        self.host = host
        self.port = port
        self.onEvent = onEvent
    }

    /// Whether vpcd is connected (the card is "in the reader").
    public var isConnected: Bool { state.withLock { $0.connected } }

    /// Starts serving on a dedicated thread.
    public func start() {
        let shouldStart = state.withLock { state -> Bool in
            guard !state.started else { return false }
            state.started = true
            return true
        }
        guard shouldStart else { return }
        let thread = Thread { [self] in
            self.run()
            self.done.signal()
        }
        thread.name = "vpcd-\(port)"
        thread.start()
    }

    /// Stops serving and waits for the thread to end (the card leaves the reader). Calling it
    /// again returns at once.
    public func stop() {
        let (socket, mustJoin) = state.withLock { state -> (Int32, Bool) in
            let mustJoin = state.started && !state.stopping
            state.stopping = true
            return (state.socket, mustJoin)
        }
        if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        if mustJoin { done.wait() }
    }

    /// Takes the card out of the reader (closes the vpcd connection) until `insertCard()`.
    public func removeCard() {
        let socket = state.withLock { state -> Int32 in
            state.inserted = false
            return state.socket
        }
        if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// Puts the card back: the chip restarts unauthenticated.
    public func insertCard() {
        chip.reinsert()
        state.withLock { $0.inserted = true }
    }

    /// Waits until vpcd has accepted the connection, up to `timeout`.
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if isConnected { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return isConnected
    }

    private func run() {
        var backoff = 0.05
        while !state.withLock({ $0.stopping }) {
            guard state.withLock({ $0.inserted }) else {
                // A card that left by the tag-loss quirk comes back by itself.
                if chip.returnsByItself, !chip.isRemoved {
                    state.withLock { $0.inserted = true }
                } else {
                    Thread.sleep(forTimeInterval: 0.05)
                }
                continue
            }
            guard let socket = connectSocket() else {
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            }
            backoff = 0.05
            // Stored under the lock that `stop()` takes: a stop that came while we were connecting
            // either sees this socket (and shuts it down) or is seen here.
            let stopped = state.withLock { state -> Bool in
                guard !state.stopping else { return true }
                state.socket = socket
                state.connected = true
                return false
            }
            if stopped {
                close(socket)
                break
            }
            onEvent(.connected)
            let reason = serve(socket)
            state.withLock {
                $0.socket = -1
                $0.connected = false
            }
            close(socket)
            onEvent(.disconnected(reason))
            // A card out of the field by the tag-loss quirk comes back at its own time (run's
            // first guard); anything else starts over powered off.
            if !chip.returnsByItself { chip.reset() }
        }
    }

    private func connectSocket() -> Int32? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue),
                            info.pointee.ai_protocol)
            if fd >= 0 {
                if connectWithTimeout(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) {
                    var one: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return fd
                }
                close(fd)
            }
            entry = info.pointee.ai_next
        }
        return nil
    }

    /// Connects a non-blocking socket within a second, then makes it blocking again. A vpcd port
    /// whose one card slot another program holds leaves connects hanging in SYN retries (its listen
    /// backlog is full) for minutes; bounded here, `stop()` is never held up by a connect.
    private func connectWithTimeout(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Bool {
        if Glibc.connect(fd, address, length) != 0 {
            guard errno == EINPROGRESS else { return false }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&poller, 1, 1_000) == 1 else { return false }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0, error == 0 else { return false }
        }
        let flags = fcntl(fd, F_GETFL)
        return fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0
    }

    private func readExactly(_ socket: Int32, _ count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            // vpcd writes the length and the APDU in two sends; acknowledging at once keeps its
            // Nagle algorithm from waiting for our delayed ACK (~40 ms per APDU otherwise).
            var one: Int32 = 1
            setsockopt(socket, Int32(IPPROTO_TCP), TCP_QUICKACK, &one, socklen_t(MemoryLayout<Int32>.size))
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return recv(socket, base + got, count - got, 0)
            }
            if n > 0 {
                got += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return nil
            }
        }
        return buffer
    }

    private func send(_ socket: Int32, _ payload: [UInt8]) -> Bool {
        // vpcd frames carry a 2-byte length: a longer answer cannot be sent at all.
        guard payload.count <= 0xFFFF else { return false }
        let frame = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        var sent = 0
        while sent < frame.count {
            let n = frame.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.send(socket, base + sent, frame.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 { sent += n } else if n < 0 && errno == EINTR { continue } else { return false }
        }
        return true
    }

    /// Serves one vpcd connection until it closes; returns why it ended.
    private func serve(_ socket: Int32) -> String {
        while true {
            guard let header = readExactly(socket, 2) else { return "vpcd closed the connection" }
            let length = Int(header[0]) << 8 | Int(header[1])
            guard let payload = readExactly(socket, length) else { return "vpcd closed the connection" }
            if length == 1 {
                switch payload[0] {
                case 0x00:
                    chip.reset()
                    onEvent(.powerOff)
                case 0x01:
                    chip.reset()
                    onEvent(.powerOn)
                case 0x02:
                    chip.reset()
                    onEvent(.reset)
                case 0x04:
                    guard send(socket, chip.atr) else { return "sending the ATR failed" }
                default:
                    break  // unknown control codes are ignored, as vicc does
                }
                continue
            }
            switch chip.process(payload) {
            case .response(let response):
                let delay = chip.answerDelay(commandBytes: payload.count, responseBytes: response.count)
                if delay > .zero { Thread.sleep(forTimeInterval: delay.milliseconds / 1_000) }
                guard send(socket, response) else { return "sending a response failed" }
                onEvent(.apdu(command: payload.count, response: response.count))
                if chip.isRemoved {
                    // Answered, then out of the field: the link closes before the next command.
                    state.withLock { $0.inserted = false }
                    onEvent(.cardRemoved)
                    return "the card left the field after answering"
                }
            case .removed:
                state.withLock { $0.inserted = false }
                onEvent(.cardRemoved)
                return "the card was removed"
            case .stall:
                // A chip that stopped answering: vpcd (and pcscd with it) waits for an answer that
                // never comes, until the card is removed (`removeCard`/`stop` shut the socket).
                while readExactly(socket, 1) != nil {}
                return "the chip stopped answering and was removed"
            }
        }
    }
}
