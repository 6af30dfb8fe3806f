import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GBGBridge
import GBGBridgeHost
import GBGBridgeNFC
import GBGBridgeServer
import Logging
import MRTD
import MRTDEmulator
import Synchronization
import TestSupport
import Testing

/// The host's life as `gbgbridge serve` runs it, in process (GBGBridgeHost): the services on
/// every page, a stop that closes the pages and returns, a configuration that cannot be served
/// failing with the exit code the command uses.
@Suite("HostServer: serve's life in process")
struct HostServerTests {
    /// Opens with `stop` released by the test instead of SIGINT/SIGTERM.
    final class StopSwitch: Sendable {
        private let stream = AsyncStream<Void>.makeStream()
        func wait() async { for await _ in stream.stream { return } }
        func pull() { stream.continuation.yield(); stream.continuation.finish() }
    }

    @Test func servesPagesWithTheServicesAndStopsCleanly() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        // The application as serve wires it, from settings: diagnostics on, a journey directory.
        var settings = HostSettings()
        settings.port = 0
        settings.allowOrigin = ["ws://127.0.0.1"]
        settings.diagnostics = true
        settings.staticDirectory = TestFixtures.packageRoot.appendingPathComponent("Fixtures/journey").path
        settings.readTimeout = 600
        try settings.validate()
        let application = try await MainActor.run {
            try HostApplication(settings: settings, trust: TestFixtures.testTrustStore, backend: EmulatedReaderBackend(chip: chip),
                                countsRequests: false, monitorsReaders: false, logger: Logger(label: "test.host"))
        }
        let stop = StopSwitch()
        let port = Mutex<HostPorts?>(nil)
        let running = Task { @MainActor () -> String? in
            do {
                try await application.run(until: { await stop.wait() }, onRunning: { bound in port.withLock { $0 = bound } })
                return nil
            } catch {
                return "\(error)"
            }
        }
        for _ in 0..<500 where port.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        let ports = try #require(port.withLock { $0 })
        let bound = ports.main
        let operators = try #require(ports.operators, "the operators' listener runs beside the journey's")
        #expect(operators != bound)
        let script = try await waitForScript(port: bound)
        let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
        let page = try await RawWebSocket.connect(port: bound, path: "/gbg-bridge/ws?token=\(token)", origin: "ws://127.0.0.1")
        // The services are there: the cameras and nfc.read answer.
        await page.sendText(requestJSON("camera.document.capture", id: "d"))
        #expect((await page.response(to: "d")?["payload"] as? [String: Any])?["status"] as? String == "success")
        await page.sendText(requestJSON("nfc.read", id: "r", data: #"{"accessKey":{"type":"mrz","documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"},"timeoutSeconds":5}"#))
        let read = await page.response(to: "r")
        #expect((read?["payload"] as? [String: Any])?["status"] as? String == "success", "\(String(describing: read))")
        // The wiring: the journey is served, and the diagnostics saw the read and the page.
        #expect(try await CLIMetricsTests.get(port: bound, path: "/").status == 200)
        let diagnostics = try await CLIMetricsTests.get(port: operators, path: "/diagnostics.json")
        #expect(diagnostics.status == 200)
        // The journey's origin has no operator surface at all (issue 49).
        #expect(try await CLIMetricsTests.get(port: bound, path: "/diagnostics.json").status == 404)
        #expect(try await CLIMetricsTests.get(port: bound, path: "/metrics").status == 404)
        #expect(diagnostics.body.contains(#""outcome":"success""#) || diagnostics.body.contains(#""outcome" : "success""#), "\(diagnostics.body.prefix(600))")
        #expect(await MainActor.run { application.diagnostics?.pages.snapshot().count } == 1)
        // The stop closes the page (1001 going away) and run returns.
        stop.pull()
        #expect(await page.receiveCloseCode() == 1001)
        let failure = await running.value
        #expect(failure == nil)
        #expect(await MainActor.run { application.nfc.isBusy } == false)
    }

    @Test func kitDataIsLookedForInOrder() {
        let places = KitData.directories(environment: ["GBGBRIDGE_DATA": "/srv/kit"], workingDirectory: "/home/dev/project",
                                         executable: "/usr/bin/gbgbridge").map(\.path)
        #expect(places == ["/srv/kit", "/home/dev/project/Fixtures", "/Fixtures", "/usr/share/gbgbridge"], "\(places)")
        // A checkout's binary: .build/<triple>/<configuration>/gbgbridge, Fixtures three levels up.
        let checkout = KitData.directories(environment: [:], workingDirectory: "/tmp",
                                           executable: "/src/gbgbridge/.build/x86_64-unknown-linux-gnu/debug/gbgbridge").map(\.path)
        #expect(checkout.prefix(2) == ["/tmp/Fixtures", "/src/gbgbridge/Fixtures"], "\(checkout)")
        #expect(checkout.last == "/usr/share/gbgbridge")
    }

    @Test func settingsThatCannotBeServedAreNamed() {
        var settings = HostSettings()
        settings.headless = true
        #expect(throws: HostSettings.Problem.self) { try settings.validate() }
        settings = HostSettings()
        settings.terminalKey = "key.pkcs8"
        #expect { try settings.validate() } throws: { "\($0)".contains("go together") }
        settings = HostSettings()
        settings.readTimeout = 4
        #expect { try settings.validate() } throws: { "\($0)".contains("--read-timeout") }
        settings = HostSettings()
        settings.staticDirectory = "/nonexistent/journey"
        #expect { try settings.validate() } throws: { "\($0)".contains("not a directory") }
    }

    @Test func missingTerminalCredentialsFailWithExitCode2() async throws {
        var settings = HostSettings()
        settings.terminalCertificates = ["/nonexistent/is.cvcert"]
        settings.terminalKey = "/nonexistent/is.pkcs8"
        let outcome = await MainActor.run { () -> Int32? in
            do {
                _ = try HostApplication(settings: settings, trust: TrustStore(), backend: EmulatedReaderBackend(chip: nil), countsRequests: false,
                                        logger: Logger(label: "test.host"))
                return nil
            } catch let failure as HostServer.Failure {
                return failure.exitCode
            } catch {
                return -1
            }
        }
        #expect(outcome == 2)
    }

    /// A TCP socket listening on 127.0.0.1 at a port the kernel picks.
    static func listen() -> (descriptor: Int32, port: Int)? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(descriptor, raw, length) == 0 && Glibc.listen(descriptor, 1) == 0 && getsockname(descriptor, raw, &length) == 0
            }
        }
        guard bound else { close(descriptor); return nil }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func aPortInUseFailsWithTheCommandsExitCode() async throws {
        let nfc = await MainActor.run { NFCReadService(backend: EmulatedReaderBackend(chip: nil), trustStore: TestFixtures.testTrustStore) }
        let services = await MainActor.run { HostServices(nfc: nfc, countsRequests: false) }
        // A listening socket of our own takes the port first.
        let holder = try #require(Self.listen())
        defer { close(holder.descriptor) }
        var configuration = BridgeServerConfiguration()
        configuration.port = holder.port
        let outcome = await Task { @MainActor () -> (code: Int32, text: String)? in
            do {
                try await HostServer.run(configuration, services: services, logger: Logger(label: "test.host"), until: {}, onRunning: { _ in })
                return nil
            } catch let error as HostServer.Failure {
                return (error.exitCode, error.description)
            } catch {
                return (-1, "\(error)")
            }
        }.value
        let failure = try #require(outcome, "the host ran on a port that was taken")
        #expect(failure.code == 1, "\(failure)")
        #expect(failure.text.contains("the server stopped"), "\(failure.text)")
    }
}
