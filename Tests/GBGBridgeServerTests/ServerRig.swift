import Foundation
import GBGBridge
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

    /// `backend` defaults to an in-process reader holding the chip.
    static func start(maxConnections: Int = 16, allowedOrigins: [String] = [], staticDirectory: String? = nil,
                      passport: String = "utopia-td3-jpeg", chip: VirtualPassportChip? = nil,
                      backend: (any CardReaderBackend)? = nil) async throws -> ServerRig {
        let chip = try chip ?? VirtualPassportChip(passport: try TestFixtures.passport(passport))
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        let reader = backend ?? EmulatedReaderBackend(chip: chip)
        let nfc = await MainActor.run { NFCReadService(backend: reader, trustStore: trust) }
        await nfc.refreshReaders()
        var configuration = BridgeServerConfiguration()
        configuration.port = 0
        configuration.maxConnections = maxConnections
        configuration.allowedOrigins = allowedOrigins + ["ws://127.0.0.1"]
        configuration.staticDirectory = staticDirectory
        configuration.bridge = BridgeConfiguration(hostVersion: "test", capabilities: [:])
        var logger = Logger(label: "test.server")
        logger.logLevel = ProcessInfo.processInfo.environment["GBGBRIDGE_TEST_LOG"] != nil ? .debug : .error
        let server = try BridgeServer(configuration: configuration, logger: logger, setUpHost: { host in
            StubDocumentCamera().install(on: host)
            StubSelfieCamera().install(on: host)
            nfc.attach(to: host)
        }, tearDownHost: { host in nfc.detach(from: host) })
        let task = Task { try await server.run() }
        for _ in 0..<500 where server.port == nil { try await Task.sleep(for: .milliseconds(10)) }
        guard let port = server.port else { throw RigUnavailable(description: "the server did not start") }
        return ServerRig(server: server, task: task, port: port, chip: chip, nfc: nfc)
    }

    private init(server: BridgeServer, task: Task<Void, any Error>, port: Int, chip: VirtualPassportChip, nfc: NFCReadService) {
        self.server = server
        self.task = task
        self.port = port
        self.chip = chip
        self.nfc = nfc
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    var origin: String { "http://127.0.0.1:\(port)" }
    var webSocketURL: String { "ws://127.0.0.1:\(port)/gbg-bridge/ws?token=\(server.token)" }

    /// Sends a raw HTTP/1.1 request and returns the status code (for checks a browser's own
    /// client would not let us make, such as a foreign Host header).
    func rawStatus(path: String, headers: [(String, String)]) throws -> Int {
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
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var text = "GET \(path) HTTP/1.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress!, bytes.count, 0) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        guard n > 12 else { throw RigUnavailable(description: "no HTTP answer") }
        let line = String(decoding: buffer[0..<n], as: UTF8.self)
        return Int(line.split(separator: " ")[1]) ?? -1
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
