import Foundation
import GBGBridgeMdoc
import MdocRead
import Synchronization
import GBGBridge
import GBGBridgeHost
import GBGBridgeNFC
import GBGBridgeServer
import GBGBridgeStubs
import Logging
import MRTD
import MRTDEmulator
import SmartCard
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A running BridgeServer on a free loopback port with stub cameras and nfc.read from an
/// in-process virtual passport.
final class ServerRig: Sendable {
    let server: BridgeServer
    let task: Task<Void, any Error>
    let port: Int
    let chip: VirtualPassportChip
    let nfc: NFCReadService
    /// Every line the server logged (at `logLevel` and above).
    let log: LogCapture
    /// The hosts of the pages connected now.
    let hosts: HostList

    /// `backend` defaults to an in-process reader holding the chip.
    static func start(maxConnections: Int = 16, allowedOrigins: [String] = [], staticDirectory: String? = nil,
                      passport: String = "utopia-td3-jpeg", chip: VirtualPassportChip? = nil,
                      backend: (any CardReaderBackend)? = nil, mdocTrust: MdocTrust? = nil, logLevel: Logger.Level = .error,
                      configure: (inout BridgeServerConfiguration) -> Void = { _ in },
                      configureMdoc: @escaping @MainActor @Sendable (MdocReadService) -> Void = { _ in },
                      setUpHost extraSetUp: @escaping @MainActor @Sendable (BridgeHost) -> Void = { _ in }) async throws -> ServerRig {
        let chip = try chip ?? VirtualPassportChip(passport: try TestFixtures.passport(passport))
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        let reader = backend ?? EmulatedReaderBackend(chip: chip)
        let nfc = await MainActor.run { () -> NFCReadService in
            let service = NFCReadService(backend: reader, trustStore: trust)
            service.defaultReadTimeout = ReadOptions.testDeadline
            return service
        }
        await nfc.refreshReaders()
        var configuration = BridgeServerConfiguration()
        configuration.port = 0
        configuration.maxConnections = maxConnections
        configuration.allowedOrigins = allowedOrigins + ["ws://127.0.0.1"]
        configuration.staticDirectory = staticDirectory
        configuration.bridge = BridgeConfiguration(hostVersion: "test", capabilities: [:])
        configure(&configuration)
        let log = LogCapture()
        let level = ProcessInfo.processInfo.environment["GBGBRIDGE_TEST_LOG"] != nil ? .debug : logLevel
        let logger = Logger(label: "test.server") { label in
            var handler = CapturingLogHandler(label: label, capture: log)
            handler.logLevel = level
            return handler
        }
        await MainActor.run { nfc.logger = logger }
        let hosts = HostList()
        // The pages get what `gbgbridge serve` gives them (HostServices), plus the rig's own.
        let services = await MainActor.run { () -> HostServices in
            let mdoc = mdocTrust.map { MdocReadService(backend: reader, trust: $0, logger: logger) }
            if let mdoc { configureMdoc(mdoc) }
            return HostServices(nfc: nfc, mdoc: mdoc, countsRequests: false)
        }
        let server = try BridgeServer(configuration: configuration, logger: logger, setUpHost: { host in
            services.setUp(host)
            extraSetUp(host)
            hosts.add(host)
        }, tearDownHost: { host in
            services.tearDown(host)
            hosts.remove(host)
        })
        let task = Task { try await server.run() }
        for _ in 0..<500 where server.port == nil { try await Task.sleep(for: .milliseconds(10)) }
        guard let port = server.port else { throw RigUnavailable(description: "the server did not start") }
        return ServerRig(server: server, task: task, port: port, chip: chip, nfc: nfc, log: log, hosts: hosts)
    }

    private init(server: BridgeServer, task: Task<Void, any Error>, port: Int, chip: VirtualPassportChip, nfc: NFCReadService,
                 log: LogCapture, hosts: HostList) {
        self.server = server
        self.task = task
        self.port = port
        self.chip = chip
        self.nfc = nfc
        self.log = log
        self.hosts = hosts
    }

    func stop() async {
        await server.shutdown()
        _ = try? await task.value
    }

    /// A WebSocket page from an allowed origin.
    func page(timeout: Int = 30) async throws -> RawWebSocket {
        try await RawWebSocket.connect(port: port, path: "/gbg-bridge/ws?token=\(server.token)", origin: "ws://127.0.0.1", timeout: timeout)
    }

    var origin: String { "http://127.0.0.1:\(port)" }
    var webSocketURL: String { "ws://127.0.0.1:\(port)/gbg-bridge/ws?token=\(server.token)" }

    /// Sends a raw HTTP/1.1 request and returns the status code (for checks a browser's own
    /// client would not let us make, such as a foreign Host header).
    func rawStatus(path: String, headers: [(String, String)], method: String = "GET", body: String = "") async throws -> Int {
        let port = self.port
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try ServerRig.rawStatus(port: port, path: path, headers: headers, method: method, body: body) })
            }
        }
    }

    /// Sends a raw HTTP/1.1 request (`Connection: close`) and returns the status and the head of
    /// the answer, header names lower-cased.
    func rawResponse(path: String, method: String = "GET") async throws -> (status: Int, headers: [String: String]) {
        let port = self.port
        let text = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try ServerRig.rawExchange(port: port, path: path, headers: [("Host", "127.0.0.1:\(port)"), ("Connection", "close")],
                                              method: method, body: "", readAll: true)
                })
            }
        }
        let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
        var lines = head.components(separatedBy: "\r\n")
        let status = lines.isEmpty ? -1 : Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? -1
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    /// The blocking part of `rawStatus`, run off the cooperative pool.
    static func rawStatus(port: Int, path: String, headers: [(String, String)], method: String = "GET", body: String = "") throws -> Int {
        let line = try rawExchange(port: port, path: path, headers: headers, method: method, body: body, readAll: false)
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    static func rawExchange(port: Int, path: String, headers: [(String, String)], method: String, body: String, readAll: Bool) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RigUnavailable(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RigUnavailable(description: "connect failed") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)  // generous: a loaded test run may stall the main actor
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var text = "\(method) \(path) HTTP/1.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if method != "GET" { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n" + body
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, bytes.count, 0) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            received += buffer[0..<n]
            if !readAll || received.count > 1 << 20 { break }
        }
        guard received.count > 12 else { throw RigUnavailable(description: "no HTTP answer") }
        return String(decoding: received, as: UTF8.self)
    }

    func upgradeHeaders(host: String? = nil, origin: String? = nil) -> [(String, String)] {
        var headers = [("Host", host ?? "127.0.0.1:\(port)"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
                       ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]
        if let origin { headers.append(("Origin", origin)) }
        return headers
    }
}

func requestJSON(_ action: String, id: String, data: String? = nil) -> String {
    let dataPart = data.map { #","data":\#($0)"# } ?? ""
    return #"{"version":"1.0","correlationId":"\#(id)","type":"request","timestamp":1700000000000,"payload":{"action":"\#(action)"\#(dataPart)}}"#
}

/// Log lines kept in memory, for tests that check what the server writes.
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// A swift-log handler that renders lines like `StreamLogHandler` and keeps them.
struct CapturingLogHandler: LogHandler {
    let label: String
    let capture: LogCapture
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
             file: String, function: String, line: UInt) {
        capture.append("\(level) \(label): \(message)")
    }
}

/// The hosts of the connected pages, in connection order.
final class HostList: Sendable {
    private let list = Mutex<[WeakHost]>([])
    struct WeakHost: @unchecked Sendable { weak var host: BridgeHost? }

    func add(_ host: BridgeHost) { list.withLock { $0.append(WeakHost(host: host)) } }
    func remove(_ host: BridgeHost) { list.withLock { $0.removeAll { $0.host === host || $0.host == nil } } }
    @MainActor var current: [BridgeHost] { list.withLock { $0.compactMap(\.host) } }
}

