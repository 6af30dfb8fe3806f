import CLibNFCShim
import TextSanitizing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SmartCardCore
import Synchronization

/// Readers driven by libnfc: PN532 on UART/I²C/SPI, PN533 USB sticks and others pcscd does not
/// know. Reader names are `libnfc:<connstring>` (e.g. `libnfc:pn532_uart:/dev/ttyUSB0`).
///
/// Each device is opened once and kept open (a serial port can be opened only once); all calls
/// on it run on a `DedicatedThread` of its own. libnfc has no hot-plug events, so waits poll:
/// the field every `pollInterval`, the device list every second.
///
/// Limits of the PN53x family: one exchange carries at most 262 bytes, so extended-length
/// APDUs are answered `6700` by the connection without reaching the card (the reader layer then
/// uses short APDUs, as it does for chips without extended length).
public final class LibNFCBackend: CardReaderBackend {
    public static let readerPrefix = ReaderName.libnfcPrefix
    public var backendName: String { ReaderName.libnfcBackendName }

    /// Devices named explicitly (connection strings without the `libnfc:` prefix).
    public let connectionStrings: [String]
    /// Whether libnfc's own device discovery (configuration file, `LIBNFC_DEVICE`, USB scan)
    /// adds devices.
    public let discover: Bool
    public let pollInterval: Duration
    private let devices = Mutex<[String: LibNFCDevice]>([:])
    private let discoveryThread = DedicatedThread(name: "libnfc-discovery")

    public init(connectionStrings: [String] = [], discover: Bool = true, pollInterval: Duration = .milliseconds(150)) {
        self.connectionStrings = connectionStrings.map(Self.connectionString(fromReaderName:)).filter { !$0.isEmpty }
        self.discover = discover
        self.pollInterval = pollInterval
    }

    deinit {
        for device in devices.withLock({ Array($0.values) }) { device.close() }
        discoveryThread.stop()
    }

    /// `libnfc:pn532_uart:/dev/pts/3` → `pn532_uart:/dev/pts/3` (a bare connection string stays).
    public static func connectionString(fromReaderName name: String) -> String {
        name.hasPrefix(readerPrefix) ? String(name.dropFirst(readerPrefix.count)) : name
    }

    /// Whether `text` can be handed to libnfc as a connection string: printable ASCII (libnfc's
    /// drivers parse it with C string functions into fixed buffers) and shorter than
    /// NFC_BUFSIZE_CONNSTRING (1024).
    public static func isPlausibleConnectionString(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count < 1024 && text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// Whether a reader name (or `--reader` value) addresses this back end.
    public static func handles(readerName: String) -> Bool { readerName.hasPrefix(readerPrefix) }

    /// The connection strings libnfc finds itself.
    func discovered() async throws -> [String] {
        guard discover else { return [] }
        return try await discoveryThread.run {
            var buffer = [CChar](repeating: 0, count: 16 * 1024)
            let count = CLibNFCShim_list(&buffer, buffer.count)
            guard count >= 0 else { throw SmartCardError(.serviceUnavailable, "libnfc could not start (check /etc/nfc/libnfc.conf)") }
            return buffer.split(separator: 0, omittingEmptySubsequences: true)
                .map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        }
    }

    private func allConnectionStrings() async throws -> [String] {
        var all = connectionStrings
        for found in try await discovered() where !all.contains(found) { all.append(found) }
        return all
    }

    private func device(_ connstring: String) -> LibNFCDevice {
        devices.withLock { devices in
            if let device = devices[connstring] { return device }
            let device = LibNFCDevice(connectionString: connstring)
            devices[connstring] = device
            return device
        }
    }

    public func readers() async throws -> [ReaderInfo] {
        var infos: [ReaderInfo] = []
        for connstring in try await allConnectionStrings() {
            let device = device(connstring)
            do {
                infos.append(try await device.poll())
            } catch let error as SmartCardError where error.code == .readerUnavailable {
                infos.append(ReaderInfo(backend: "libnfc", name: device.readerName, cardPresent: false, mute: true))
            }
        }
        return infos
    }

    public func waitForCard(readerMatching: String?, timeout: Duration?) async throws -> ReaderInfo {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        var lastError: SmartCardError?
        // Discovery scans buses: once per wait, not per poll.
        let candidates = try await allConnectionStrings().filter { connstring in
            guard let filter = readerMatching, !filter.isEmpty else { return true }
            let name = Self.readerPrefix + connstring
            return name.contains(filter) || connstring.contains(Self.connectionString(fromReaderName: filter))
        }
        if candidates.isEmpty {
            guard let readerMatching else {
                throw SmartCardError(.noReaders, "no libnfc device found (name one with libnfc:<connstring> or in /etc/nfc/libnfc.conf)")
            }
            throw SmartCardError(.readerNotFound, "no libnfc device matches '\(LogText.clip(readerMatching))'")
        }
        var firstRound = true
        while true {
            if Task.isCancelled { throw SmartCardError(.cancelled, "waiting for a card was cancelled") }
            var unavailable = 0
            for connstring in candidates {
                do {
                    let info = try await device(connstring).poll()
                    if info.cardPresent { return info }
                } catch let error as SmartCardError {
                    lastError = error
                    if error.code == .readerUnavailable { unavailable += 1 }
                }
            }
            // No device could even be opened (wrong path, no permission): say so now rather
            // than at the deadline.
            if firstRound, unavailable == candidates.count, let lastError { throw lastError }
            firstRound = false
            if let deadline, clock.now >= deadline {
                if let lastError, lastError.code == .readerUnavailable { throw lastError }
                throw SmartCardError(.timeout, "no card was presented to \(candidates.map { Self.readerPrefix + $0 }.joined(separator: ", ")) in time")
            }
            do {
                try await Task.sleep(for: pollInterval)
            } catch {
                throw SmartCardError(.cancelled, "waiting for a card was cancelled")
            }
        }
    }

    public func waitForReaderChange(timeout: Duration?) async throws -> [ReaderInfo] {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        let before = try await allConnectionStrings()
        while deadline.map({ clock.now < $0 }) ?? true {
            do { try await Task.sleep(for: .seconds(1)) } catch { throw SmartCardError(.cancelled, "waiting for readers was cancelled") }
            if try await allConnectionStrings() != before { break }
        }
        return try await readers()
    }

    public func connect(reader: String) async throws -> any CardConnection {
        let connstring = Self.connectionString(fromReaderName: reader)
        let device = device(connstring)
        let info = try await device.poll()
        guard info.cardPresent else { throw SmartCardError(.noCard, "no card in the field of \(device.readerName)") }
        return LibNFCConnection(device: device, atr: info.atr ?? [])
    }
}

/// One opened libnfc device with its thread.
final class LibNFCDevice: Sendable {
    let connectionString: String
    var readerName: String { LibNFCBackend.readerPrefix + connectionString }
    let thread: DedicatedThread
    /// The session pointer (nil until opened, or after a failure closed it).
    private let session = Mutex<OwnedSession?>(nil)
    /// Whether a target is activated, and its pseudo-ATR.
    private let target = Mutex<[UInt8]?>(nil)

    init(connectionString: String) {
        self.connectionString = connectionString
        thread = DedicatedThread(name: "libnfc-device")
    }

    /// Opens the device if needed (on its thread).
    private func openSession() throws -> OpaquePointer {
        if let open = session.withLock({ $0 }) { return open.pointer }
        guard LibNFCBackend.isPlausibleConnectionString(connectionString) else {
            throw SmartCardError(.readerNotFound,
                                 "'\(LogText.clip(connectionString))' is not a libnfc connection string (driver:port, printable ASCII, under 1024 bytes)")
        }
        var error = [CChar](repeating: 0, count: 256)
        guard let opened = CLibNFCShim_open(connectionString, &error, error.count) else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw SmartCardError(.readerUnavailable,
                                 "\(LogText.clip(readerName)): \(reason.isEmpty ? "cannot open the device" : LogText.clip(reason, to: 300))")
        }
        session.withLock { $0 = OwnedSession(pointer: opened) }
        return opened
    }

    /// Drops the session after an I/O failure so the next call reopens the device.
    private func dropSession() {
        if let open = session.withLock({ value -> OwnedSession? in defer { value = nil }; return value }) {
            CLibNFCShim_close(open.pointer)
        }
        target.withLock { $0 = nil }
    }

    /// Is a card in the field? Keeps an activated target while it answers; otherwise polls once.
    func poll() async throws -> ReaderInfo {
        try await thread.run { [self] () throws -> ReaderInfo in
            let handle = try openSession()
            if let atr = activeTargetATR(handle) {
                return ReaderInfo(backend: "libnfc", name: readerName, cardPresent: true, atr: atr)
            }
            var uid = [UInt8](repeating: 0, count: 16), uidLength = 16
            var ats = [UInt8](repeating: 0, count: 64), atsLength = 64
            let found = CLibNFCShim_select(handle, &uid, &uidLength, &ats, &atsLength)
            if found < 0 {
                if Self.isTransportFailure(found) { dropSession() }
                throw Self.error(found, "polling \(readerName)")
            }
            guard found == 1 || found == 2 else { return ReaderInfo(backend: "libnfc", name: readerName, cardPresent: false) }
            // Type B: application data + protocol info + MBLI (not reported by libnfc: 0).
            let history = found == 1 ? Self.historicalBytes(ats: Array(ats.prefix(atsLength))) : Array(ats.prefix(atsLength)) + [0x00]
            let atr = Self.pseudoATR(historicalBytes: history)
            target.withLock { $0 = atr }
            return ReaderInfo(backend: "libnfc", name: readerName, cardPresent: true, atr: atr)
        }
    }

    /// Where the one exchange at a time stands, for cancellation from another thread.
    private enum ExchangeState { case idle, queued, running, cancelled }
    private let exchange = Mutex(ExchangeState.idle)

    func transceive(_ command: [UInt8], timeoutMilliseconds: Int32) async throws -> [UInt8] {
        exchange.withLock { $0 = .queued }
        return try await withTaskCancellationHandler {
            try await thread.run { [self] () throws -> [UInt8] in
                let proceed = exchange.withLock { state -> Bool in
                    guard state != .cancelled else { return false }
                    state = .running
                    return true
                }
                defer { exchange.withLock { $0 = .idle } }
                guard proceed else { throw SmartCardError(.cancelled, "the exchange with \(readerName) was cancelled") }
                guard let handle = session.withLock({ $0 })?.pointer, target.withLock({ $0 }) != nil else {
                    throw SmartCardError(.cardRemoved, "the card left the field of \(readerName)")
                }
                var response = [UInt8](repeating: 0, count: 300)
                let count = CLibNFCShim_transceive(handle, command, command.count, &response, response.count, timeoutMilliseconds)
                if exchange.withLock({ $0 == .cancelled }) {
                    // Whatever came back, the caller gave up: the card's state is unknown, so
                    // the target is activated afresh next time.
                    target.withLock { $0 = nil }
                    throw SmartCardError(.cancelled, "the exchange with \(readerName) was cancelled")
                }
                guard count >= 0 else {
                    if Self.isTransportFailure(count) { dropSession() } else { target.withLock { $0 = nil } }
                    throw Self.error(count, "exchanging an APDU with \(readerName)")
                }
                return Array(response.prefix(Int(count)))
            }
        } onCancel: {
            requestAbort()
        }
    }

    /// Marks the exchange cancelled and aborts it. libnfc's abort only reaches a command that is
    /// already waiting for its answer, so it is repeated until the exchange has ended.
    private func requestAbort() {
        let wasActive = exchange.withLock { state -> Bool in
            guard state == .queued || state == .running else { return false }
            state = .cancelled
            return true
        }
        guard wasActive else { return }
        OSThread.start(name: "libnfc-abort") { [self] in
            for _ in 0..<250 {
                // Checked and aborted under the exchange lock: once the exchange has ended (and
                // the lock says so), no stray abort may hit the device's next command.
                let ended = exchange.withLock { state -> Bool in
                    guard state == .cancelled else { return true }
                    if let handle = session.withLock({ $0 })?.pointer { CLibNFCShim_abort(handle) }
                    return false
                }
                if ended { return }
                OSThread.sleep(milliseconds: 20)
            }
        }
    }

    func isPresent() async -> Bool {
        (try? await thread.run { [self] () -> Bool in
            guard let handle = session.withLock({ $0 })?.pointer else { return false }
            return activeTargetATR(handle) != nil
        }) ?? false
    }

    /// The activated target's pseudo-ATR while it still answers; forgets a target that left.
    /// Runs on the device's thread.
    private func activeTargetATR(_ handle: OpaquePointer) -> [UInt8]? {
        guard let atr = target.withLock({ $0 }) else { return nil }
        if CLibNFCShim_present(handle) == 0 { return atr }
        target.withLock { $0 = nil }
        return nil
    }

    func deselect() async {
        _ = try? await thread.run { [self] in
            if let handle = session.withLock({ $0 })?.pointer, target.withLock({ $0 }) != nil { CLibNFCShim_deselect(handle) }
            target.withLock { $0 = nil }
        }
    }

    func close() {
        if let owned = session.withLock({ value -> OwnedSession? in defer { value = nil }; return value }) {
            CLibNFCShim_abort(owned.pointer)
            thread.runDetached { CLibNFCShim_close(owned.pointer) }
        }
        thread.stop()
    }

    // MARK: Helpers

    /// libnfc error codes (nfc.h).
    static func isTransportFailure(_ code: Int32) -> Bool { code == -1 || code == -3 || code == -90 }

    static func error(_ code: Int32, _ operation: String) -> SmartCardError {
        let text = String(cString: CLibNFCShim_strerror(code))
        switch code {
        case -6: return SmartCardError(.timeout, "\(operation): the card did not answer in time (\(text))")
        case -7: return SmartCardError(.cancelled, "\(operation): \(text)")
        case -10, -20: return SmartCardError(.cardRemoved, "\(operation): the card left the field (\(text))")
        case -1, -90: return SmartCardError(.communicationFailure, "\(operation): \(text)")
        case -3: return SmartCardError(.readerUnavailable, "\(operation): \(text)")
        default: return SmartCardError(.communicationFailure, "\(operation): \(text) (libnfc \(code))")
        }
    }

    /// ATS: TL T0 [TA] [TB] [TC] historical bytes.
    static func historicalBytes(ats: [UInt8]) -> [UInt8] {
        // libnfc gives the ATS without its length byte TL.
        guard let t0 = ats.first else { return [] }
        var index = 1
        for bit in [0x10, 0x20, 0x40] where t0 & UInt8(bit) != 0 { index += 1 }
        return index <= ats.count ? Array(ats[index...]) : []
    }

    /// The PC/SC part 3 pseudo-ATR for an ISO 14443-4 card, so the rest of the stack sees the
    /// same ATR as under pcscd: 3B 8n 80 01 historical bytes, TCK.
    static func pseudoATR(historicalBytes: [UInt8]) -> [UInt8] {
        let history = Array(historicalBytes.prefix(15))
        var atr: [UInt8] = [0x3B, 0x80 | UInt8(history.count), 0x80, 0x01] + history
        atr.append(atr.dropFirst().reduce(0, ^))
        return atr
    }
}

/// A libnfc session pointer. Only the device's thread calls libnfc with it, except
/// `nfc_abort_command`, which libnfc makes safe from other threads.
struct OwnedSession: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A card activated by a libnfc device.
final class LibNFCConnection: CardConnection {
    let device: LibNFCDevice
    let atr: [UInt8]
    var readerName: String { device.readerName }
    private let open = Mutex(true)
    /// PN53x frames carry at most 262 bytes: the InDataExchange header and the APDU.
    static let maxCommand = 261
    /// Time an exchange may take, generous for a chip signing under Active Authentication.
    static let exchangeTimeoutMilliseconds: Int32 = 5_000

    init(device: LibNFCDevice, atr: [UInt8]) {
        self.device = device
        self.atr = atr
    }

    var supportsExtendedLength: Bool { false }

    func transmit(raw: [UInt8]) async throws -> [UInt8] {
        guard open.withLock({ $0 }) else { throw SmartCardError(.cancelled, "the connection to \(readerName) was closed") }
        // Too long for a PN53x frame, or extended (whether or not the APDU parses).
        if raw.count > Self.maxCommand || (try? CommandAPDU(bytes: raw))?.isExtended == true {
            return [0x67, 0x00]  // the PN53x cannot carry it: the card never sees it
        }
        return try await device.transceive(raw, timeoutMilliseconds: Self.exchangeTimeoutMilliseconds)
    }

    func isCardPresent() async -> Bool {
        guard open.withLock({ $0 }) else { return false }
        return await device.isPresent()
    }

    func disconnect() async {
        guard open.withLock({ value -> Bool in defer { value = false }; return value }) else { return }
        await device.deselect()
    }
}
