import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-terminal whose far end behaves like a PN532 on a UART: libnfc opens the slave side
/// (`pn532_uart:/dev/pts/N`) as it would `/dev/ttyUSB0`, and a thread of ours answers on the
/// master side with `PN532Emulator`. We keep a slave descriptor open ourselves so the master
/// does not see a hang-up between libnfc sessions.
public final class PN532PseudoTerminal: Sendable {
    public let emulator: PN532Emulator
    /// `/dev/pts/N`.
    public let devicePath: String
    /// libnfc's connection string for it.
    public var connectionString: String { "pn532_uart:\(devicePath)" }

    private struct State {
        var stopping = false
        var started = false
    }
    private let master: Int32
    private let slaveKeeper: Int32
    private let wakePipe: (read: Int32, write: Int32)
    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    public init(chip: VirtualPassportChip?, cardType: PN532Emulator.CardType = .typeA,
                onEvent: @escaping @Sendable (PN532Emulator.Event) -> Void = { _ in }) throws(EmulatorError) {
        emulator = PN532Emulator(chip: chip, cardType: cardType, onEvent: onEvent)
        // /dev/ptmx by hand: posix_openpt/grantpt/unlockpt are not visible to Swift's Glibc module.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard master >= 0 else {
            throw EmulatorError("cannot create a pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        // TIOCSPTLCK = _IOW('T', 0x31, int), TIOCGPTN = _IOR('T', 0x30, unsigned int) (asm-generic/ioctls.h).
        guard ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            close(master)
            throw EmulatorError("cannot unlock the pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let path = "/dev/pts/\(number)"
        let keeper = open(path, O_RDWR | O_NOCTTY)
        guard keeper >= 0 else {
            close(master)
            throw EmulatorError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        // Raw bytes both ways: no echo, no line discipline, no CR/LF translation.
        var attributes = termios()
        tcgetattr(keeper, &attributes)
        cfmakeraw(&attributes)
        tcsetattr(keeper, TCSANOW, &attributes)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            close(master); close(keeper)
            throw EmulatorError("cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        self.master = master
        self.slaveKeeper = keeper
        self.wakePipe = (fds[0], fds[1])
        self.devicePath = path
    }

    deinit {
        // The pty is kept (idle) until the process ends rather than closed: a closed pty's number is
        // handed to the next one opened, and a reader still polling the old path (a read that gave
        // up, a reconnect loop ending) would then talk to another emulator's chip. A process makes
        // few of these (the emulator one, a test run a few hundred); the kernel allows thousands.
        Self.retired.withLock { $0 += [master, slaveKeeper] }
        close(wakePipe.read)
        close(wakePipe.write)
    }

    private static let retired = Mutex<[Int32]>([])

    /// Starts answering on a thread of its own.
    public func start() {
        let first = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let thread = Thread { [self] in
            serve()
            done.signal()
        }
        thread.name = "pn532-pty"
        thread.start()
    }

    /// Stops the thread; the pty goes away with this object.
    public func stop() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return state.started && !state.stopping
        }
        guard wasRunning else { return }
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
        done.wait()
    }

    /// Puts a chip into the field or takes it out (`nil`).
    public func setChip(_ chip: VirtualPassportChip?) {
        let answer = emulator.setChip(chip)
        if !answer.isEmpty { send(answer) }
    }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !state.withLock({ $0.stopping }) {
            var fds = [pollfd(fd: master, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, 1000)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            if fds[1].revents != 0 { break }
            if fds[0].revents & Int16(POLLIN) != 0 {
                let count = read(master, &buffer, buffer.count)
                if count > 0 {
                    var reply = emulator.receiveTimed(Array(buffer[0..<count]))
                    while !reply.now.isEmpty || !reply.later.isEmpty {
                        send(reply.now)
                        guard !reply.later.isEmpty else { break }
                        // The chip is "working": anything the host sends meanwhile is its ACK
                        // aborting the command, and the held answer is never sent.
                        var wait = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
                        let milliseconds = Int32(reply.delay.components.seconds * 1000 + reply.delay.components.attoseconds / 1_000_000_000_000_000)
                        if poll(&wait, 1, milliseconds) > 0, wait.revents & Int16(POLLIN) != 0 {
                            let more = read(master, &buffer, buffer.count)
                            reply = more > 0 ? emulator.receiveTimed(Array(buffer[0..<more])) : PN532Emulator.Reply()
                        } else {
                            send(reply.later)
                            reply = PN532Emulator.Reply()
                        }
                    }
                }
            } else if fds[0].revents & Int16(POLLHUP | POLLERR) != 0 {
                usleep(10_000)  // no reader on the slave side right now
            }
        }
    }

    private func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { usleep(1000); continue }
                return
            }
            offset += written
        }
    }
}
