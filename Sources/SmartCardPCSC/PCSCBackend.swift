import CPCSCLite
import CSmartCardShim
import Glibc
import SmartCardCore
import TextSanitizing
import Synchronization

/// PC/SC constants (pcsclite.h); kept here as Swift values so the rest of the code sees no C types.
enum PCSC {
    static let scopeSystem: DWORD = 2
    static let shareShared: DWORD = 2
    static let shareDirect: DWORD = 3
    static let protocolT0: DWORD = 1
    static let protocolT1: DWORD = 2
    static let leaveCard: DWORD = 0
    static let stateUnaware: DWORD = 0x0000
    static let stateChanged: DWORD = 0x0002
    static let stateUnknown: DWORD = 0x0004
    static let stateUnavailable: DWORD = 0x0008
    static let stateEmpty: DWORD = 0x0010
    static let statePresent: DWORD = 0x0020
    /// SCardStatus's card state: SCARD_PRESENT.
    static let cardStatePresent: DWORD = 0x0004
    static let stateExclusive: DWORD = 0x0080
    static let stateMute: DWORD = 0x0200
    static let pnpReaderName = "\\\\?PnP?\\Notification"
    /// Largest response SCardTransmit may return: 65536 data bytes + SW.
    static let maxResponse = 65_538

    static func status(_ value: LONG) -> PCSCStatus { PCSCStatus(rawValue: UInt32(truncatingIfNeeded: value)) }

    static func check(_ value: LONG, _ operation: String) throws(SmartCardError) {
        let status = status(value)
        guard status == .success else { throw status.error(operation) }
    }
}

/// One SCARDCONTEXT with the thread it is used on.
final class PCSCContext: Sendable {
    let thread: DedicatedThread
    private let handle: Mutex<SCARDCONTEXT?>

    private init(thread: DedicatedThread, handle: SCARDCONTEXT) {
        self.thread = thread
        self.handle = Mutex(handle)
    }

    /// pcsc-lite talks to pcscd with write(2) on a socket: a pcscd that stops or restarts under a
    /// running process would kill it with SIGPIPE. A process that left SIGPIPE at its default gets
    /// it ignored (EPIPE then reaches pcsc-lite, which reports the service as gone); a handler the
    /// process installed itself is left alone.
    private static let sigpipeIgnored: Bool = {
        var current = sigaction()
        guard sigaction(SIGPIPE, nil, &current) == 0 else { return false }
        // A default disposition has no handler set.
        if current.__sigaction_handler.sa_handler == nil { signal(SIGPIPE, SIG_IGN) }
        return true
    }()

    static func establish(purpose: String) async throws -> PCSCContext {
        _ = sigpipeIgnored
        let thread = DedicatedThread(name: "pcsc-\(purpose)")
        do {
            let handle = try await thread.run { () throws -> SCARDCONTEXT in
                var context: SCARDCONTEXT = 0
                try PCSC.check(SCardEstablishContext(PCSC.scopeSystem, nil, nil, &context), "SCardEstablishContext")
                return context
            }
            return PCSCContext(thread: thread, handle: handle)
        } catch {
            thread.stop()
            throw error
        }
    }

    /// The context handle, or `.cancelled` once released.
    func context() throws(SmartCardError) -> SCARDCONTEXT {
        guard let value = handle.withLock({ $0 }) else {
            throw SmartCardError(.cancelled, "the PC/SC context was released")
        }
        return value
    }

    /// Runs `body` with the context on this context's thread.
    func run<T: Sendable>(_ body: @escaping @Sendable (SCARDCONTEXT) throws -> T) async throws -> T {
        try await thread.run { [self] in try body(try context()) }
    }

    /// Interrupts a blocking SCardGetStatusChange on this context (callable from any thread).
    /// Under the handle's lock, so it can never reach a context `release()` is handing back:
    /// pcsc-lite's SCardCancel takes no context lock of its own, and a cancel racing
    /// SCardReleaseContext can touch freed memory.
    func cancelBlockingCall() {
        handle.withLock { value in
            if let value { _ = SCardCancel(value) }
        }
    }

    func release() {
        let value = handle.withLock { value -> SCARDCONTEXT? in
            defer { value = nil }
            return value
        }
        if let value {
            thread.runDetached { _ = SCardReleaseContext(value) }
        }
        thread.stop()
    }

    /// Names of all readers (empty when none).
    static func listReaders(_ context: SCARDCONTEXT) throws(SmartCardError) -> [String] {
        var length: DWORD = 0
        var result = SCardListReaders(context, nil, nil, &length)
        if PCSC.status(result) == .noReadersAvailable { return [] }
        try PCSC.check(result, "SCardListReaders")
        var buffer = [CChar](repeating: 0, count: Int(length))
        result = SCardListReaders(context, nil, &buffer, &length)
        if PCSC.status(result) == .noReadersAvailable { return [] }
        try PCSC.check(result, "SCardListReaders")
        // A multi-string: names separated by NUL, ended by an empty name.
        return buffer.prefix(Int(length))
            .split(separator: 0, omittingEmptySubsequences: true)
            .map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    }

    struct ReaderState {
        var name: String
        var eventState: DWORD
        var atr: [UInt8]
    }

    /// Calls SCardGetStatusChange for `names` with their known current states; returns the new
    /// states, or `nil` when the timeout passed first. `timeoutMilliseconds` of `nil` waits
    /// forever (until SCardCancel).
    static func statusChange(_ context: SCARDCONTEXT, names: [String], current: [DWORD],
                             timeoutMilliseconds: UInt32?) throws(SmartCardError) -> [ReaderState]? {
        let cNames = names.map { strdup($0) }
        defer { cNames.forEach { free($0) } }
        var states = names.indices.map { index -> SCARD_READERSTATE in
            var state = SCARD_READERSTATE()
            state.szReader = UnsafePointer(cNames[index])
            state.dwCurrentState = current[index]
            return state
        }
        let timeout = timeoutMilliseconds.map { DWORD($0) } ?? CSmartCardShim_infinite()
        let result = SCardGetStatusChange(context, timeout, &states, DWORD(states.count))
        if PCSC.status(result) == .timeout { return nil }
        try PCSC.check(result, "SCardGetStatusChange")
        return states.enumerated().map { index, state in
            var copy = state
            let atr = withUnsafeBytes(of: &copy.rgbAtr) { Array($0.prefix(Int(min(state.cbAtr, 33)))) }
            return ReaderState(name: names[index], eventState: state.dwEventState, atr: atr)
        }
    }
}

/// Readers and cards through pcsc-lite (`pcscd`). Every blocking call runs on a dedicated thread
/// per PC/SC context; waits are cancelled with `SCardCancel` when the waiting task is cancelled.
public final class PCSCBackend: CardReaderBackend {
    public let backendName = "pcsc"

    public init() {}

    public func readers() async throws -> [ReaderInfo] {
        let context = try await PCSCContext.establish(purpose: "list")
        defer { context.release() }
        return try await context.run { handle in
            let names = try PCSCContext.listReaders(handle)
            guard !names.isEmpty else { return [] }
            return try Self.currentStates(handle, names: names).map(Self.info)
        }
    }

    /// The states of `names` now (a zero-timeout status query).
    static func currentStates(_ handle: SCARDCONTEXT, names: [String]) throws(SmartCardError) -> [PCSCContext.ReaderState] {
        guard !names.isEmpty else { return [] }
        return try PCSCContext.statusChange(handle, names: names, current: names.map { _ in PCSC.stateUnaware },
                                            timeoutMilliseconds: 0) ?? []
    }

    static func isReady(_ state: PCSCContext.ReaderState) -> Bool {
        state.eventState & PCSC.statePresent != 0 && state.eventState & PCSC.stateMute == 0
    }

    static func info(_ state: PCSCContext.ReaderState) -> ReaderInfo {
        let present = state.eventState & PCSC.statePresent != 0
        return ReaderInfo(backend: "pcsc", name: state.name, cardPresent: present,
                          atr: present && !state.atr.isEmpty ? state.atr : nil,
                          exclusive: state.eventState & PCSC.stateExclusive != 0,
                          mute: state.eventState & PCSC.stateMute != 0)
    }

    public func waitForCard(readerMatching: String?, timeout: Duration?) async throws -> ReaderInfo {
        let context = try await PCSCContext.establish(purpose: "wait")
        defer { context.release() }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        return try await withTaskCancellationHandler {
            try await context.run { handle in
                try Self.waitLoop(handle, readerMatching: readerMatching, deadline: deadline)
            }
        } onCancel: {
            context.cancelBlockingCall()
        }
    }

    private static func remainingMilliseconds(_ deadline: ContinuousClock.Instant?) -> UInt32? {
        guard let deadline else { return nil }
        let remaining = deadline - ContinuousClock.now
        let ms = remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
        return UInt32(clamping: max(0, ms))
    }

    private static func matches(_ name: String, _ filter: String?) -> Bool {
        guard let filter, !filter.isEmpty else { return true }
        return name.lowercased().contains(filter.lowercased())
    }

    /// Runs on the context's thread: waits until a matching reader holds a responsive card.
    private static func waitLoop(_ handle: SCARDCONTEXT, readerMatching: String?,
                                 deadline: ContinuousClock.Instant?) throws(SmartCardError) -> ReaderInfo {
        while true {
            let all = try PCSCContext.listReaders(handle)
            let candidates = all.filter { matches($0, readerMatching) }
            // Learn the states without blocking; a card may be there already.
            let states = try currentStates(handle, names: candidates)
            if let ready = states.first(where: isReady) { return info(ready) }
            // Block until something changes: a card, or a reader plugged in or out.
            let names = candidates + [PCSC.pnpReaderName]
            let current = states.map { $0.eventState & ~PCSC.stateChanged } + [DWORD(all.count) << 16]
            let timeout = remainingMilliseconds(deadline)
            guard timeout != 0,
                  let changed = try PCSCContext.statusChange(handle, names: names, current: current,
                                                             timeoutMilliseconds: timeout) else {
                throw SmartCardError(.timeout, timeoutReason(readerMatching, found: candidates), pcscStatus: .timeout)
            }
            if let ready = changed.dropLast().first(where: isReady) { return info(ready) }
        }
    }

    private static func timeoutReason(_ filter: String?, found: [String]) -> String {
        if found.isEmpty {
            if let filter { return "no reader matching '\(LogText.clip(filter))' appeared before the timeout" }
            return "no reader was connected before the timeout"
        }
        return "no card was presented before the timeout"
    }

    public func waitForReaderChange(timeout: Duration?) async throws -> [ReaderInfo] {
        let context = try await PCSCContext.establish(purpose: "hotplug")
        defer { context.release() }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        return try await withTaskCancellationHandler {
            try await context.run { handle in
                let before = try PCSCContext.listReaders(handle)
                _ = try PCSCContext.statusChange(handle, names: [PCSC.pnpReaderName], current: [DWORD(before.count) << 16],
                                                 timeoutMilliseconds: Self.remainingMilliseconds(deadline))
                return try Self.currentStates(handle, names: try PCSCContext.listReaders(handle)).map(Self.info)
            }
        } onCancel: {
            context.cancelBlockingCall()
        }
    }

    /// What the reader says of its own limits (SCARD_ATTR_MAXINPUT, PC/SC part 10's
    /// dwMaxAPDUDataSize) without a card: a direct connection to the reader (SCARD_SHARE_DIRECT).
    /// `nil` when the driver allows no direct connection.
    public func readerCapabilities(reader: String) async -> ReaderCapabilities? {
        guard let context = try? await PCSCContext.establish(purpose: "reader attributes") else { return nil }
        defer { context.release() }
        return try? await context.run { handle -> ReaderCapabilities in
            var card: SCARDHANDLE = 0
            var active: DWORD = 0
            try PCSC.check(SCardConnect(handle, reader, PCSC.shareDirect, 0, &card, &active), "SCardConnect(\(reader), direct)")
            defer { SCardDisconnect(card, PCSC.leaveCard) }
            return PCSCConnection.limits(card)
        }
    }

    public func connect(reader: String) async throws -> any CardConnection {
        if StalledReaders.shared.isStalled(reader) { throw StalledReaders.error(reader) }
        let context = try await PCSCContext.establish(purpose: "card")
        do {
            let (card, proto, atr) = try await context.run { handle in
                var card: SCARDHANDLE = 0
                var active: DWORD = 0
                try PCSC.check(SCardConnect(handle, reader, PCSC.shareShared, PCSC.protocolT0 | PCSC.protocolT1,
                                            &card, &active), "SCardConnect(\(reader))")
                return (card, active, try PCSCConnection.status(card).atr)
            }
            return PCSCConnection(context: context, card: card, protocol: proto, readerName: reader, atr: atr)
        } catch {
            context.release()
            throw error
        }
    }
}

/// A card connected through PC/SC.
final class PCSCConnection: CardConnection {
    let readerName: String
    let atr: [UInt8]
    private let context: PCSCContext
    private let card: Mutex<SCARDHANDLE?>
    private let activeProtocol: DWORD
    /// A transmit was abandoned while it still blocked: the thread is busy with it until the card
    /// answers or leaves, and nothing more is queued behind it.
    private let stalled = Mutex(false)

    init(context: PCSCContext, card: SCARDHANDLE, protocol: DWORD, readerName: String, atr: [UInt8]) {
        self.context = context
        self.card = Mutex(card)
        self.activeProtocol = `protocol`
        self.readerName = readerName
        self.atr = atr
    }

    deinit {
        if let handle = card.withLock({ $0 }) {
            context.thread.runDetached { _ = SCardDisconnect(handle, PCSC.leaveCard) }
        }
        context.release()
    }

    static func status(_ card: SCARDHANDLE) throws(SmartCardError) -> (state: DWORD, atr: [UInt8]) {
        var atr = [UInt8](repeating: 0, count: 33)
        var atrLength = DWORD(atr.count)
        var state: DWORD = 0
        var proto: DWORD = 0
        var nameLength: DWORD = 0
        try PCSC.check(SCardStatus(card, nil, &nameLength, &state, &proto, &atr, &atrLength), "SCardStatus")
        return (state, Array(atr.prefix(Int(atrLength))))
    }

    private func handle() throws(SmartCardError) -> SCARDHANDLE {
        guard let value = card.withLock({ $0 }) else {
            throw SmartCardError(.cardRemoved, "the connection to \(readerName) was closed")
        }
        return value
    }

    /// Sends `raw`. A caller that stops waiting (its task cancelled: the read's deadline, a page
    /// that went away) gets `.cancelled` at once, even while SCardTransmit still blocks — a chip
    /// that stops answering holds pcscd (vpcd, a CCID driver waiting out WTX) until it leaves the
    /// reader, and nothing in pcsc-lite interrupts a transmit. The connection is then stalled:
    /// every further call fails at once, its handle is released when the transmit returns, and
    /// until then `PCSCBackend.connect` refuses the reader (`StalledReaders`) rather than queue
    /// more calls behind it.
    func transmit(raw: [UInt8]) async throws -> [UInt8] {
        if stalled.withLock({ $0 }) { throw StalledReaders.error(readerName) }
        let pci = activeProtocol == PCSC.protocolT0 ? CSmartCardShim_pci_t0() : CSmartCardShim_pci_t1()
        let pciAddress = UInt(bitPattern: pci)
        let reader = readerName
        let abandonment = DedicatedThread.Abandonment(
            began: { [self] in
                stalled.withLock { $0 = true }
                StalledReaders.shared.begin(reader)
            },
            finished: { StalledReaders.shared.end(reader) })
        return try await context.thread.runAbandonable({ [self] in
            let card = try handle()
            var response = [UInt8](repeating: 0, count: PCSC.maxResponse)
            var length = DWORD(response.count)
            let pointer = UnsafePointer<SCARD_IO_REQUEST>(bitPattern: pciAddress)
            let result = SCardTransmit(card, pointer, raw, DWORD(raw.count), nil, &response, &length)
            try PCSC.check(result, "SCardTransmit")
            return Array(response.prefix(Int(length)))
        }, abandoned: abandonment)
    }

    /// SCardStatus on this connection's handle: a card removed or reset since the connection
    /// was made shows as SCARD_W_REMOVED_CARD / SCARD_W_RESET_CARD, and the reader's state then
    /// says whether a card is there again (a new power-on) or none is.
    func presence() async -> CardPresence {
        // A stalled connection's thread still waits in SCardTransmit: asking would wait behind it.
        if stalled.withLock({ $0 }) { return .present }
        let name = readerName
        return (try? await context.thread.run { [self] () throws -> CardPresence in
            let handle = try handle()
            var atr = [UInt8](repeating: 0, count: 33)
            var atrLength = DWORD(atr.count)
            var state: DWORD = 0
            var proto: DWORD = 0
            var nameLength: DWORD = 0
            let rc = PCSC.status(SCardStatus(handle, nil, &nameLength, &state, &proto, &atr, &atrLength))
            switch rc {
            case .success:
                return state & PCSC.cardStatePresent != 0 ? .present : .absent
            case .noSmartcard:
                return .absent
            default:
                // Removed, reset, or the handle no longer usable: what is in the reader now?
                let reader = try PCSCContext.statusChange(try context.context(), names: [name], current: [PCSC.stateUnaware],
                                                          timeoutMilliseconds: 0)?.first
                guard let reader, reader.eventState & PCSC.statePresent != 0 else { return .absent }
                return .replaced
            }
        }) ?? .absent
    }

    func capabilities() async -> ReaderCapabilities {
        if stalled.withLock({ $0 }) { return ReaderCapabilities() }
        return (try? await context.thread.run { [self] () throws -> ReaderCapabilities in Self.limits(try handle()) }) ?? ReaderCapabilities()
    }

    /// The limits PC/SC tells through a card or direct handle.
    static func limits(_ handle: SCARDHANDLE) -> ReaderCapabilities {
        var maxInput: DWORD = 0
        var maxData: DWORD = 0
        let found = CSmartCardShim_reader_limits(handle, &maxInput, &maxData)
        var capabilities = ReaderCapabilities()
        if found & 1 != 0, maxInput > 0 { capabilities.maxCommandLength = Int(maxInput) }
        if found & 2 != 0 {
            capabilities.maxAPDUDataSize = Int(maxData)
            capabilities.extendedLength = maxData > 0
        }
        return capabilities
    }

    func isCardPresent() async -> Bool {
        if stalled.withLock({ $0 }) { return true }
        return (try? await context.thread.run { [self] in
            let card = try handle()
            return try Self.status(card).state & DWORD(0x0020 | 0x0004) != 0  // SCARD_PRESENT | SCARD_POWERED etc.
        }) ?? false
    }

    func disconnect() async {
        let value = card.withLock { value -> SCARDHANDLE? in
            defer { value = nil }
            return value
        }
        guard let value else { return }
        if stalled.withLock({ $0 }) {
            // The thread still waits in SCardTransmit: the handle goes once that returns.
            context.thread.runDetached { _ = SCardDisconnect(value, PCSC.leaveCard) }
            return
        }
        // Leave the card powered: resetting it made vpcd drop and re-insert the virtual card,
        // racing whoever connects next. Readers cope with a chip left inside an application
        // (PassportReader goes back to the MF).
        _ = try? await context.thread.run { SCardDisconnect(value, PCSC.leaveCard) }
    }
}

/// Readers whose card stopped answering mid-exchange and is still waited for by pcscd: an
/// abandoned SCardTransmit that has not returned. pcscd serialises a reader's exchanges, so a
/// new connection's first transmit would only queue behind the stalled one (and a thread with
/// it, per attempt); `PCSCBackend.connect` refuses such a reader at once instead, until the card
/// answers or leaves the reader (which ends the stalled transmit).
package final class StalledReaders: Sendable {
    package static let shared = StalledReaders()
    private let calls = Mutex<[String: Int]>([:])

    func begin(_ reader: String) { calls.withLock { $0[reader, default: 0] += 1 } }

    func end(_ reader: String) {
        calls.withLock { calls in
            let left = (calls[reader] ?? 1) - 1
            calls[reader] = left > 0 ? left : nil
        }
    }

    package func isStalled(_ reader: String) -> Bool { calls.withLock { $0[reader] != nil } }

    static func error(_ reader: String) -> SmartCardError {
        SmartCardError(.stalled, "the card on \(LogText.clip(reader)) stopped answering and the reader still waits for it: take the document off the reader and present it again")
    }
}
