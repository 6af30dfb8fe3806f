import BlueZ
import Dispatch
import Mdoc
#if canImport(Glibc)
import Glibc
#endif

/// An mdoc session over an LE credit-based L2CAP channel (ISO 18013-5 §8.3.3.1.1.4: the L2CAP
/// characteristic `…0A` of the holder's service gives the PSM; the reader opens a channel to it
/// instead of subscribing to Server2Client and writing State). What the standard's first
/// edition leaves open and other implementations settled on, taken here (Docs/mdoc.md, "L2CAP"):
///
/// - **The PSM** is read as 4 bytes big-endian (the Android/multipaz holders) — and, because
///   implementations are recorded to disagree, a value that is no LE PSM that way (LE PSMs are
///   0x0001–0x00FF) is tried little-endian; 2 bytes likewise. Anything else is no PSM, and the
///   session falls back to GATT.
/// - **Each message** is led by its length, 4 bytes big-endian (multipaz; Spruce's "2 reserved
///   bytes and a 16-bit length" is the same bytes for any message under 64 KiB), carried in SDUs
///   of at most the channel's send MTU; the other side reads it as a stream of bytes.
/// - **The session ends** with SessionData status 20 over the channel (no State write: a holder
///   that saw State 0x01 would take the session to GATT).
public enum MdocBLEL2CAP {
    /// Whether the reader opens a holder's L2CAP channel when offered (`auto`) or keeps to GATT.
    public enum Policy: String, Sendable, CaseIterable {
        case auto
        case never
    }

    /// The LE PSM in an L2CAP characteristic's value, or nil (no PSM: read over GATT).
    public static func psm(_ value: [UInt8]) -> UInt16? {
        func lePSM(_ number: UInt32) -> UInt16? { (1...0xFF).contains(number) ? UInt16(number) : nil }
        switch value.count {
        case 4:
            let big = value.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let little = value.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return lePSM(big) ?? lePSM(little)
        case 2:
            return lePSM(UInt32(value[0]) << 8 | UInt32(value[1])) ?? lePSM(UInt32(value[1]) << 8 | UInt32(value[0]))
        default:
            return nil
        }
    }

    /// The PSM as a holder publishes it: 4 bytes big-endian.
    public static func characteristicValue(psm: UInt16) -> [UInt8] { [0, 0, UInt8(psm >> 8), UInt8(psm & 0xFF)] }

    /// `message` led by its length (4 bytes, big-endian).
    public static func frame(_ message: [UInt8]) -> [UInt8] {
        let count = UInt32(clamping: message.count)
        return [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)] + message
    }

    /// Reassembles length-led messages from SDUs, bounded: a length over `maximumBytes` is refused
    /// when its 4 bytes arrive, before anything of it is kept.
    public struct Assembler: Sendable {
        public let maximumBytes: Int
        let peer: String
        private var buffer: [UInt8] = []
        private var expected: Int?

        public init(maximumBytes: Int, peer: String = "the holder") {
            self.maximumBytes = maximumBytes
            self.peer = peer
        }

        /// Bytes kept, not yet a whole message.
        public var pending: Int { buffer.count }

        /// Takes one SDU; returns a message when one is complete (bytes after it stay for the next).
        public mutating func take(_ sdu: [UInt8]) throws(MdocError) -> [UInt8]? {
            buffer += sdu
            return try next()
        }

        /// A whole message already kept, if any.
        public mutating func next() throws(MdocError) -> [UInt8]? {
            if expected == nil {
                // A CBOR map where a length belongs (any length this reader takes starts 0x00):
                // a peer of the older convention, each message its bare CBOR.
                if let first = buffer.first, (0xA0...0xBF).contains(first) {
                    throw MdocError(.bleTransport, "\(peer) sent bare CBOR over L2CAP, no length first (an older convention this reader does not "
                                    + "speak); read it over GATT (mdoc read --l2cap never)")
                }
                guard buffer.count >= 4 else { return nil }
                let length = buffer.prefix(4).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard length <= UInt64(maximumBytes) else {
                    throw MdocError(.limitExceeded, "\(peer) announced a message of \(length) bytes over L2CAP; at most \(maximumBytes) are read")
                }
                expected = Int(length)
                buffer.removeFirst(4)
            }
            guard let expected, buffer.count >= expected else { return nil }
            let message = Array(buffer.prefix(expected))
            buffer.removeFirst(expected)
            self.expected = nil
            return message
        }
    }

    /// One connected channel: its socket (owned: closed on `close()` or when released), blocking
    /// I/O on a queue of its own, every wait bounded by the caller's deadline.
    public final class Link: @unchecked Sendable {
        public let psm: UInt16
        public let sendMTU: Int
        public let receiveMTU: Int
        /// Who is at the other end, as errors name it ("the holder", "the reader").
        let peer: String
        private let fd: Int32
        private let io = DispatchQueue(label: "gbgbridge.mdoc-l2cap.io")
        private var assembler: Assembler
        private var closed = false

        /// An SDU is at most 65,535 bytes (Core Vol 3 Part A §3.4.3); a receive buffer of that holds any.
        static let largestSDU = 65_535

        /// Takes ownership of `fd` (a connected SOCK_SEQPACKET socket).
        public init(fd: Int32, psm: UInt16, sendMTU: Int, receiveMTU: Int, maximumMessage: Int, peer: String = "the holder") {
            self.fd = fd
            self.peer = peer
            self.psm = psm
            // An MTU the kernel could not tell is taken as LE's minimum, 23 (Core Vol 3 Part A §5.1).
            self.sendMTU = min(max(sendMTU, 23), Self.largestSDU)
            self.receiveMTU = receiveMTU
            self.assembler = Assembler(maximumBytes: maximumMessage, peer: peer)
        }

        deinit { if !closed { Glibc.close(fd) } }

        /// Sends `message` and returns the next whole message the other side sends.
        public func exchange(_ message: [UInt8], deadline: ContinuousClock.Instant) async throws(MdocError) -> [UInt8] {
            try await send(message, deadline: deadline)
            return try await receive(deadline: deadline)
        }

        public func send(_ message: [UInt8], deadline: ContinuousClock.Instant) async throws(MdocError) {
            try await blocking { () throws(MdocError) in try self.sendNow(MdocBLEL2CAP.frame(message), deadline: deadline) }
        }

        public func receive(deadline: ContinuousClock.Instant) async throws(MdocError) -> [UInt8] {
            try await blocking { () throws(MdocError) -> [UInt8] in
                guard let message = try self.receiveNow(deadline: deadline, quietly: false) else {
                    throw MdocError(.timeout, "\(self.peer)'s answer over L2CAP did not come before the read's deadline")
                }
                return message
            }
        }

        /// A whole message if one arrives within `wait`, else nil (the holder's side, which also
        /// tends its GATT server between looks).
        public func receive(within wait: Duration) async throws(MdocError) -> [UInt8]? {
            try await blocking { () throws(MdocError) -> [UInt8]? in try self.receiveNow(deadline: ContinuousClock.now + wait, quietly: true) }
        }

        /// Waits, at most until `deadline`, until what was sent has left this host (the kernel holds
        /// an SDU until the holder gives credits for it, and closing the socket drops what it still
        /// holds) or the other side hung up. True when nothing was left unsent.
        @discardableResult
        public func drain(until deadline: ContinuousClock.Instant) async -> Bool {
            (try? await blocking { () throws(MdocError) -> Bool in
                func option(_ name: Int32) -> Int32? {
                    var value: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    return getsockopt(self.fd, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
                }
                guard let size = option(SO_SNDBUF), size > 0, let domain = option(SO_DOMAIN) else { return false }
                while true {
                    // TIOCOUTQ on a Bluetooth socket is the free room of its send buffer — all of it
                    // free is nothing queued (Linux net/bluetooth/af_bluetooth.c) — and elsewhere
                    // (the tests' socket pairs) the bytes still queued.
                    var value: Int32 = 0
                    guard ioctl(self.fd, UInt(TIOCOUTQ), &value) == 0 else { return false }
                    if domain == AF_BLUETOOTH ? value >= size : value == 0 { return true }
                    guard ContinuousClock.now < deadline else { return false }
                    // 10 ms between looks, cut short when the holder hangs up.
                    let hangUp: Int16 = 0x2000  // POLLRDHUP, which Glibc's module leaves out (_GNU_SOURCE)
                    var descriptor = pollfd(fd: self.fd, events: hangUp, revents: 0)
                    if poll(&descriptor, 1, 10) > 0, descriptor.revents & (hangUp | Int16(POLLHUP | POLLERR)) != 0 { return false }
                }
            }) ?? false
        }

        /// Closes the socket (idempotent); a blocked send or receive ends.
        public func close() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                shutdown(fd, Int32(SHUT_RDWR))
                io.async {
                    if !self.closed {
                        self.closed = true
                        Glibc.close(self.fd)
                    }
                    continuation.resume()
                }
            }
        }

        private func blocking<T: Sendable>(_ body: @escaping @Sendable () throws(MdocError) -> T) async throws(MdocError) -> T {
            let result: Result<T, MdocError> = await withCheckedContinuation { continuation in
                io.async {
                    guard !self.closed else { return continuation.resume(returning: .failure(MdocError(.bleTransport, "the L2CAP channel is closed"))) }
                    continuation.resume(returning: Result { () throws(MdocError) -> T in try body() })
                }
            }
            return try result.get()
        }

        /// Waits for `events` on the socket until `deadline`: true when they came, false when the
        /// deadline passed `quietly`, else a timeout.
        @discardableResult
        private func wait(_ events: Int32, until deadline: ContinuousClock.Instant, _ what: String, quietly: Bool = false) throws(MdocError) -> Bool {
            while true {
                let left = deadline - ContinuousClock.now
                guard left > .zero else {
                    if quietly { return false }
                    throw MdocError(.timeout, "\(what) over L2CAP did not finish before the read's deadline")
                }
                var descriptor = pollfd(fd: fd, events: Int16(events), revents: 0)
                let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
                let ready = poll(&descriptor, 1, min(milliseconds, 1000))
                if ready < 0, errno == EINTR { continue }
                guard ready >= 0 else { throw MdocError(.bleTransport, "waiting on the L2CAP channel: \(String(cString: strerror(errno)))") }
                if ready > 0 { return true }
            }
        }

        private func sendNow(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(MdocError) {
            var offset = 0
            while offset < bytes.count {
                let count = min(sendMTU, bytes.count - offset)
                let sent = bytes[offset..<(offset + count)].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
                if sent < 0 {
                    if errno == EINTR { continue }
                    // No credits from the holder (its receive window is full): wait for them, not past the deadline.
                    if errno == EAGAIN || errno == EWOULDBLOCK {
                        try wait(Int32(POLLOUT), until: deadline, "sending to \(peer)")
                        continue
                    }
                    throw MdocError(.bleTransport, "writing to \(peer)'s L2CAP channel: \(String(cString: strerror(errno))) (the link is lost)")
                }
                guard sent == count else { throw MdocError(.bleTransport, "the L2CAP channel took \(sent) of an SDU's \(count) bytes") }
                offset += count
            }
        }

        private func receiveNow(deadline: ContinuousClock.Instant, quietly: Bool) throws(MdocError) -> [UInt8]? {
            if let message = try assembler.next() { return message }
            var buffer = [UInt8](repeating: 0, count: Self.largestSDU + 1)
            while true {
                guard try wait(Int32(POLLIN), until: deadline, "\(peer)'s answer", quietly: quietly) else { return nil }
                // MSG_TRUNC: an SDU longer than the buffer is seen at its real length, not cut short.
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_TRUNC)) }
                if count < 0, errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
                guard count >= 0 else {
                    throw MdocError(.bleTransport, "reading from \(peer)'s L2CAP channel: \(String(cString: strerror(errno))) (the link is lost)")
                }
                guard count > 0 else { throw MdocError(.bleTransport, "\(peer) closed the L2CAP channel mid-transfer") }
                guard count <= Self.largestSDU else {
                    throw MdocError(.bleTransport, "\(peer) sent an SDU of \(count) bytes; an L2CAP SDU holds at most \(Self.largestSDU)")
                }
                if let message = try assembler.take(Array(buffer.prefix(count))) { return message }
            }
        }
    }
}
