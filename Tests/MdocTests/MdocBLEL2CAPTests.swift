import Foundation
import Mdoc
import MdocBLE
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The L2CAP channel's parts that need no radio: the PSM in the holder's characteristic (both
/// byte orders implementations are recorded to use), the length-led framing bounded before a body
/// is kept, and the channel's I/O over a real `SOCK_SEQPACKET` socket pair — the same socket type
/// an LE credit-based channel is, each send one SDU, each receive one — with a peer thread
/// playing the holder (the seam: AF_UNIX instead of AF_BLUETOOTH, which this machine's kernel
/// has not; the VM test reads real holders over real L2CAP). The VM cases: MdocBLEVMTests.
@Suite("mdoc over BLE: L2CAP's PSM, framing and channel")
struct MdocBLEL2CAPTests {
    @Test("the PSM: 4 bytes big-endian as the Android holders publish it, little-endian or 2 bytes where that is the only LE PSM; anything else none")
    func psm() {
        #expect(MdocBLEL2CAP.psm([0, 0, 0, 0x80]) == 0x80)
        #expect(MdocBLEL2CAP.psm([0x81, 0, 0, 0]) == 0x81)
        #expect(MdocBLEL2CAP.psm([0, 0x25]) == 0x25)
        #expect(MdocBLEL2CAP.psm([0xF1, 0x00]) == 0xF1)
        #expect(MdocBLEL2CAP.psm([0, 0, 0, 1]) == 1)
        // No LE PSM either way (LE PSMs are 0x0001–0x00FF), or not 2 or 4 bytes.
        for value: [UInt8] in [[0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF], [0x12, 0x34], [0, 0], [], [0x80], [0, 0, 0x80], [0, 0, 0, 0, 0x80]] {
            #expect(MdocBLEL2CAP.psm(value) == nil, "\(value)")
        }
        for psm: UInt16 in [1, 0x80, 0xC3, 0xFF] { #expect(MdocBLEL2CAP.psm(MdocBLEL2CAP.characteristicValue(psm: psm)) == psm) }
        #expect(MdocBLEL2CAP.characteristicValue(psm: 0x80) == [0, 0, 0, 0x80])
    }

    @Test("messages are led by a 4-byte big-endian length; the assembler takes SDUs of any cut, keeps what follows a message, refuses an oversized length before its body")
    func framing() throws {
        #expect(MdocBLEL2CAP.frame([0xAA, 0xBB]) == [0, 0, 0, 2, 0xAA, 0xBB])
        #expect(MdocBLEL2CAP.frame([]) == [0, 0, 0, 0])
        let first = (0..<1000).map { UInt8($0 & 0xFF) }, second: [UInt8] = [1, 2, 3]
        let stream = MdocBLEL2CAP.frame(first) + MdocBLEL2CAP.frame(second) + MdocBLEL2CAP.frame([])
        for cut in [1, 3, 4, 5, 23, 672, stream.count] {
            var assembler = MdocBLEL2CAP.Assembler(maximumBytes: 1000)
            var messages: [[UInt8]] = []
            for start in stride(from: 0, to: stream.count, by: cut) {
                if let message = try assembler.take(Array(stream[start..<min(stream.count, start + cut)])) { messages.append(message) }
                while let more = try assembler.next() { messages.append(more) }
            }
            #expect(messages == [first, second, []], "SDUs of \(cut)")
            #expect(assembler.pending == 0)
        }
        var bounded = MdocBLEL2CAP.Assembler(maximumBytes: 999)
        #expect(throws: MdocError.self) { _ = try bounded.take(Array(MdocBLEL2CAP.frame(first).prefix(4))) }
        // A peer of the older convention (bare CBOR, no length): named, not taken for a length of gigabytes.
        var bare = MdocBLEL2CAP.Assembler(maximumBytes: 1 << 20)
        do {
            _ = try bare.take([0xA1, 0x66] + Array("status".utf8) + [0x0B])
            Issue.record("bare CBOR was taken")
        } catch {
            #expect(error.code == .bleTransport && error.reason.contains("bare CBOR") && error.reason.contains("--l2cap never"), "\(error)")
        }
        var refused = MdocBLEL2CAP.Assembler(maximumBytes: 1 << 20)
        do {
            _ = try refused.take([0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3])
            Issue.record("a length of 2 GiB was taken")
        } catch {
            #expect(error.code == .limitExceeded && error.reason.contains("2147483647"), "\(error)")
        }
    }

    /// A connected SOCK_SEQPACKET pair: ours (non-blocking, as the kernel's L2CAP socket is opened) and the peer's.
    static func pair() throws -> (ours: Int32, peer: Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    /// The peer's SDUs until `count` bytes arrived (each SDU's size kept), blocking.
    static func read(_ fd: Int32, bytes count: Int) -> [[UInt8]] {
        var sdus: [[UInt8]] = [], total = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 17)
        while total < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            sdus.append(Array(buffer.prefix(n)))
            total += n
        }
        return sdus
    }

    static func write(_ fd: Int32, _ bytes: [UInt8], sdu: Int) {
        for start in stride(from: 0, to: bytes.count, by: sdu) {
            let piece = Array(bytes[start..<min(bytes.count, start + sdu)])
            _ = piece.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    @Test("a request goes out in SDUs of the send MTU; the answer, dripped in 1-byte SDUs or sent in large ones, comes back whole")
    func exchange() async throws {
        // The deadlines bound the tests, they are not what is tested: generous, as beside 700 tests
        // on two cores a peer thread may wait seconds for its turn.
        for (answerSDU, answerSize) in [(1, 3_000), (97, 20_000), (4096, 20_000)] {
            let (ours, peer) = try Self.pair()
            defer { close(peer) }
            let link = MdocBLEL2CAP.Link(fd: ours, psm: 0x80, sendMTU: 100, receiveMTU: 672, maximumMessage: 1 << 20)
            let request = (0..<1234).map { UInt8(($0 * 7) & 0xFF) }, answer = (0..<answerSize).map { UInt8(($0 * 13) & 0xFF) }
            let received = Mutex<[[UInt8]]>([])
            let holder = Thread {
                let sdus = Self.read(peer, bytes: request.count + 4)
                received.withLock { $0 = sdus }
                Self.write(peer, MdocBLEL2CAP.frame(answer), sdu: answerSDU)
            }
            holder.start()
            let got = try await link.exchange(request, deadline: .now + .seconds(300))
            #expect(got == answer, "answer SDUs of \(answerSDU)")
            let sdus = received.withLock { $0 }
            #expect(sdus.allSatisfy { $0.count <= 100 } && sdus.flatMap { $0 } == MdocBLEL2CAP.frame(request), "\(sdus.map(\.count))")
            await link.close()
        }
    }

    @Test("a holder that closes mid-answer, never answers, announces too much, sends an SDU no L2CAP channel carries, or gives no credit: typed errors, inside the deadline")
    func hostilePeers() async throws {
        // Where the peer's act is the error, the deadline only bounds the test (generous: a peer
        // thread may wait its turn on a loaded machine); where the deadline is the point, short.
        func run(_ peerDoes: @escaping @Sendable (Int32) -> Void, maximum: Int = 1 << 20, request: [UInt8] = [1, 2, 3],
                 deadline: Duration = .seconds(300)) async throws -> MdocError? {
            let (ours, peer) = try Self.pair()
            let link = MdocBLEL2CAP.Link(fd: ours, psm: 0x80, sendMTU: 672, receiveMTU: 672, maximumMessage: maximum)
            let holder = Thread {
                peerDoes(peer)
                // Keep the socket open (a silent holder) until our side closes it.
                var byte: UInt8 = 0
                while recv(peer, &byte, 1, 0) > 0 {}
                close(peer)
            }
            holder.start()
            do {
                _ = try await link.exchange(request, deadline: .now + deadline)
                await link.close()
                return nil
            } catch {
                await link.close()
                return error
            }
        }
        let closes = try await run { peer in
            _ = Self.read(peer, bytes: 7)
            Self.write(peer, Array(MdocBLEL2CAP.frame(Array(repeating: 9, count: 500)).prefix(200)), sdu: 100)
            shutdown(peer, Int32(SHUT_RDWR))
        }
        #expect(closes?.code == .bleTransport && closes?.reason.contains("closed the L2CAP channel mid-transfer") == true, "\(String(describing: closes))")

        let silent = try await run({ peer in _ = Self.read(peer, bytes: 7) }, deadline: .milliseconds(300))
        #expect(silent?.code == .timeout, "\(String(describing: silent))")

        let greedy = try await run { peer in
            _ = Self.read(peer, bytes: 7)
            Self.write(peer, [0, 0x10, 0, 1] + Array(repeating: 0, count: 1000), sdu: 1004)
        }
        #expect(greedy?.code == .limitExceeded, "\(String(describing: greedy))")

        let oversized = try await run { peer in
            _ = Self.read(peer, bytes: 7)
            Self.write(peer, Array(repeating: 0, count: 70_000), sdu: 70_000)
        }
        #expect(oversized?.code == .bleTransport && oversized?.reason.contains("70000") == true, "\(String(describing: oversized))")

        // The holder reads nothing: its receive window fills and the send waits for credit, until the deadline.
        let starving = try await run({ _ in Thread.sleep(forTimeInterval: 1.5) }, request: Array(repeating: 5, count: 4 << 20),
                                     deadline: .milliseconds(500))
        #expect(starving?.code == .timeout && starving?.reason.contains("sending to the holder") == true, "\(String(describing: starving))")
    }

    @Test("the goodbye is let out before the channel closes: drain waits while the holder has not taken it, is true once it has, and ends at its deadline")
    func drainBeforeClose() async throws {
        let (ours, peer) = try Self.pair()
        defer { close(peer) }
        let link = MdocBLEL2CAP.Link(fd: ours, psm: 0x80, sendMTU: 100, receiveMTU: 672, maximumMessage: 1 << 20)
        let goodbye: [UInt8] = [0xA1, 0x66, 0x73, 0x74, 0x61, 0x74, 0x75, 0x73, 0x14]
        try await link.send(goodbye, deadline: .now + .seconds(60))
        // Nothing has read it: the bytes are still queued, and the drain says so at its deadline.
        #expect(await link.drain(until: .now + .milliseconds(200)) == false)
        let received = Mutex<[[UInt8]]>([])
        let holder = Thread { received.withLock { $0 = Self.read(peer, bytes: goodbye.count + 4) } }
        holder.start()
        #expect(await link.drain(until: .now + .seconds(120)) == true)
        for _ in 0..<6000 where received.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(received.withLock { $0 }.flatMap { $0 } == MdocBLEL2CAP.frame(goodbye))
        await link.close()
        // Closed: nothing to wait for, and no wait.
        #expect(await link.drain(until: .now + .seconds(60)) == false)
    }
}
