import Foundation
import MRTDEmulator
import TestSupport
import Testing

/// `gbgbridge doctor` as an operator runs it: the built binary, against the test rig's private
/// pcscd (with and without a card), a trust store with an expired CSCA and a stale CRL, a port
/// already taken and a pcscd that is not there.
@Suite("gbgbridge doctor", .serialized)
struct DoctorCommandTests {
    static let names = ["config", "pcscd", "readers", "card", "kernel-modules", "libnfc", "trust-store", "mdoc-issuers", "bluetooth", "terminal-authentication", "image-decoder", "chromium", "camera.document", "camera.selfie", "port"]

    /// A TCP port nobody listens on now.
    static func freePort() throws -> Int { try freeLoopbackPort() }

    static func doctor(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, checks: [String: [String: Any]], text: String) {
        // The machine's /etc/gbgbridge/gbgbridge.conf never changes what a test sees.
        let config = arguments.contains("--config") ? [] : ["--config", "/dev/null"]
        return try parse(try await runCommand(GBGBridgeBinary.path, ["doctor", "--json"] + config + arguments, timeout: .seconds(60),
                                              environment: environment))
    }

    static func parse(_ outcome: CommandOutcome) throws -> (status: Int32, checks: [String: [String: Any]], text: String) {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any],
                                  "not JSON: \(outcome.standardOutput) \(outcome.standardError)")
        let list = try #require(object["checks"] as? [[String: Any]])
        var checks: [String: [String: Any]] = [:]
        for check in list {
            let name = try #require(check["name"] as? String)
            #expect(["ok", "warning", "error"].contains(check["status"] as? String ?? ""), "\(name)")
            #expect(check["finding"] is String && check["fix"] is String, "\(name)")
            checks[name] = check
        }
        #expect(list.map { $0["name"] as? String ?? "" } == names)
        return (outcome.status, checks, outcome.standardOutput)
    }

    static func status(_ check: [String: Any]?) -> String { check?["status"] as? String ?? "missing" }

    @Test("with the rig's readers and a card: pcscd, readers and the card's kind; nothing secret; exit 0")
    func withReadersAndACard() async throws {
        let harness = PCSCDHarness.shared
        guard await harness.ensureRunning() else {
            Issue.record("pcscd with vpcd is required: \(await harness.unavailableReason ?? "unknown")")
            return
        }
        let passport = try TestFixtures.passport("utopia-td3-jpeg")
        let outcome = try await PCSCDHarness.withEmulatedCard(VirtualPassportChip(passport: passport)) { _ in
            try await runCommand(GBGBridgeBinary.path, ["doctor", "--json", "--trust", "Fixtures/pki/csca.cert.pem", "--port", String(try Self.freePort())],
                                 timeout: .seconds(60))
        }
        let (status, checks, text) = try Self.parse(outcome)
        #expect(status == 0, "\(text)")
        #expect(Self.status(checks["pcscd"]) == "ok")
        #expect(Self.status(checks["readers"]) == "ok")
        #expect((checks["readers"]?["finding"] as? String)?.contains(PCSCDHarness.vpcdReaderName) == true)
        let card = try #require(checks["card"]?["finding"] as? String)
        #expect(card.contains("ISO 14443-4"), "\(card)")
        // The kit's test CSCA: trusted as asked, and warned about (its key is published).
        #expect(Self.status(checks["trust-store"]) == "warning")
        #expect((checks["trust-store"]?["finding"] as? String)?.contains("1 CSCA certificate from 1 country") == true)
        #expect((checks["trust-store"]?["finding"] as? String)?.contains("TEST anchors trusted") == true)
        #expect((checks["trust-store"]?["fix"] as? String)?.contains("remove the test CSCA") == true)
        #expect(status == 0, "a warning is not an error")
        #expect((checks["libnfc"]?["finding"] as? String)?.contains("not used") == true)
        // Nothing of the document: no MRZ, no name, no document number.
        #expect(!text.contains("L898902C3") && !text.contains("ERIKSSON") && !text.contains("X9Q7R2K4"))
    }

    @Test("the confined image decoder: ok beside the binary (a probe decoded in it); an error with a fix when the binary stands alone")
    func imageDecoder() async throws {
        let beside = try await Self.doctor(["--port", String(try Self.freePort())])
        #expect(Self.status(beside.checks["image-decoder"]) == "ok", "\(beside.checks["image-decoder"] ?? [:])")
        #expect((beside.checks["image-decoder"]?["finding"] as? String)?.contains("confinement") == true)
        // The binary copied alone (as a checkout's `swift build --product gbgbridge` left it): no decoder.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let alone = directory.appendingPathComponent("gbgbridge").path
        try FileManager.default.copyItem(atPath: GBGBridgeBinary.path, toPath: alone)
        let outcome = try await runCommand(alone, ["doctor", "--json", "--config", "/dev/null", "--port", String(try Self.freePort())],
                                           timeout: .seconds(60), environment: ["GBGBRIDGE_DECODE": "/nonexistent"])
        let (status, checks, _) = try Self.parse(outcome)
        #expect(status == 1)
        #expect(Self.status(checks["image-decoder"]) == "error")
        #expect((checks["image-decoder"]?["fix"] as? String)?.contains("gbgbridge-decode") == true)
    }

    @Test("an expired CSCA, a CRL past its nextUpdate and a taken port are reported with fixes; exit 1 for the error")
    func staleTrustAndTakenPort() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Python's cryptography, independent of our OpenSSL wrappers, writes the stale PKI.
        let script = """
            import datetime, sys
            from cryptography import x509
            from cryptography.x509.oid import NameOID
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            key = ec.generate_private_key(ec.SECP256R1())
            name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "ZZ"), x509.NameAttribute(NameOID.COMMON_NAME, "Expired CSCA")])
            past = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
            cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                    .serial_number(7).not_valid_before(past - datetime.timedelta(days=3650)).not_valid_after(past)
                    .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(key, hashes.SHA256()))
            open(sys.argv[1] + "/expired-csca.pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
            crl = (x509.CertificateRevocationListBuilder().issuer_name(name).last_update(past - datetime.timedelta(days=30))
                   .next_update(past).sign(key, hashes.SHA256()))
            open(sys.argv[1] + "/stale.crl.pem", "wb").write(crl.public_bytes(serialization.Encoding.PEM))
            """
        let python = try await runCommand("/usr/bin/python3", ["-c", script, directory.path], timeout: .seconds(60))
        try #require(python.status == 0, "python3 with cryptography is needed (scripts/install-deps.sh): \(python.standardError)")
        // A port that is taken: this test listens on it.
        let listener = try LoopbackSocket(listening: true)
        let port = listener.port
        let (status, checks, text) = try await Self.doctor(["--trust", directory.path, "--trust", "Fixtures/pki/csca.cert.pem", "--port", String(port)])
        withExtendedLifetime(listener) {}
        #expect(status == 1, "\(text)")
        let trust = try #require(checks["trust-store"])
        // A CRL past its nextUpdate is an error (issue 45): a revoked signer can no longer be told.
        #expect(Self.status(trust) == "error")
        let finding = trust["finding"] as? String ?? ""
        #expect(finding.contains("1 expired") && finding.contains("past nextUpdate") && finding.contains("2 countries"), "\(finding)")
        #expect(!(trust["fix"] as? String ?? "").isEmpty)
        #expect(Self.status(checks["port"]) == "error")
        #expect((checks["port"]?["fix"] as? String)?.contains("--port") == true)
    }

    @Test("no pcscd to talk to is an error with the fix; the other checks still run")
    func pcscdUnreachable() async throws {
        let (status, checks, _) = try await Self.doctor(["--port", String(try Self.freePort())],
                                                        environment: ["PCSCLITE_CSOCK_NAME": "/nonexistent/pcscd.comm"])
        #expect(status == 1)
        #expect(Self.status(checks["pcscd"]) == "error")
        #expect((checks["pcscd"]?["fix"] as? String)?.contains("pcscd") == true)
        #expect(checks["readers"] == nil || Self.status(checks["readers"]) != "ok")
    }

    @Test("a configuration file with an unknown key is an error naming it; a good one feeds port and trust")
    func configurationFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-conf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bad = directory.appendingPathComponent("bad.conf")
        try Data("port: 8450\ntrusts: /etc/gbgbridge/trust\n".utf8).write(to: bad)
        let (badStatus, badChecks, _) = try await Self.doctor(["--config", bad.path])
        #expect(badStatus == 1)
        #expect(Self.status(badChecks["config"]) == "error")
        #expect((badChecks["config"]?["finding"] as? String)?.contains("unknown key 'trusts'") == true)
        let good = directory.appendingPathComponent("good.conf")
        let port = try Self.freePort()
        try Data("port: \(port)\ntrust: \(TestFixtures.url("pki/csca.cert.pem").path)\ndiagnostics: true\n".utf8).write(to: good)
        let (_, checks, _) = try await Self.doctor(["--config", good.path])
        #expect(Self.status(checks["config"]) == "ok")
        #expect((checks["config"]?["finding"] as? String)?.contains("port \(port)") == true)
        #expect((checks["trust-store"]?["finding"] as? String)?.contains("1 CSCA certificate") == true, "\(checks["trust-store"] ?? [:])")
        #expect((checks["port"]?["finding"] as? String)?.contains("\(port)") == true, "\(checks["port"] ?? [:])")
        #expect(Self.status(checks["terminal-authentication"]) == "ok")
        #expect((checks["terminal-authentication"]?["finding"] as? String)?.contains("not configured") == true)

        // The cameras the file names: a stub is fine; a device that is not there is an error with the fix.
        let cameras = directory.appendingPathComponent("cameras.conf")
        try Data("port: \(port)\ndocument-camera: /dev/video-gbgbridge-none\nselfie-camera: stub\n".utf8).write(to: cameras)
        let (cameraStatus, cameraChecks, _) = try await Self.doctor(["--config", cameras.path])
        #expect(cameraStatus == 1)
        #expect(Self.status(cameraChecks["camera.document"]) == "error")
        #expect((cameraChecks["camera.document"]?["finding"] as? String)?.contains("/dev/video-gbgbridge-none") == true)
        #expect((cameraChecks["camera.document"]?["fix"] as? String)?.contains("gbgbridge camera list") == true)
        #expect(Self.status(cameraChecks["camera.selfie"]) == "ok")
        #expect((cameraChecks["camera.selfie"]?["finding"] as? String)?.contains("drawn placeholder") == true)
    }

    @Test("Terminal Authentication credentials in the configuration: usable, or the key is not the certificate's")
    func terminalCredentials() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-ta-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cvc = TestFixtures.url("cvc").path
        for (key, expected) in [("UTIS0000001.pkcs8", "ok"), ("UTDVIS00001.pkcs8", "error")] {
            let file = directory.appendingPathComponent("\(key).conf")
            try Data("terminal-certificates: [\(cvc)]\nterminal-key: \(cvc)/\(key)\n".utf8).write(to: file)
            let (_, checks, _) = try await Self.doctor(["--config", file.path])
            let check = checks["terminal-authentication"]
            #expect(Self.status(check) == expected, "\(key): \(check ?? [:])")
            let finding = check?["finding"] as? String ?? ""
            #expect(expected == "ok" ? finding.contains("UTIS0000001 may read DG3 and DG4") : finding.contains("another key"), "\(finding)")
        }
    }

    static func doctorRun(environment: [String: String]) async throws -> CommandOutcome {
        try await runCommand(GBGBridgeBinary.path, ["doctor", "--json", "--config", "/dev/null"], timeout: .seconds(60), environment: environment)
    }

    /// A private D-Bus as the system bus, with the stand-in BlueZ in `mode` when given.
    static func withPrivateBus(bluez mode: String?, _ body: @Sendable (String) async throws -> CommandOutcome) async throws -> CommandOutcome {
        try await PrivateDBus.with(script: mode == nil ? nil : "Tests/MdocTests/Independent/fake_bluez.py", arguments: mode.map { [$0] } ?? [], body).0
    }

    @Test("bluetooth: no system bus, no BlueZ, BlueZ refusing, no adapter, an adapter off, a powered one, a flood of objects",
          .enabled(if: PrivateDBus.available, "needs dbus-daemon and /usr/bin/python3 with dbus and gi (dbus, python3-dbus, python3-gi)"))
    func bluetooth() async throws {
        let noBus = try await Self.doctor([], environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/gbg-bus"])
        #expect(Self.status(noBus.checks["bluetooth"]) == "warning")
        #expect(noBus.checks["bluetooth"]?["details"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "NO_SYSTEM_BUS")
        let cases: [(String?, String, String, String)] = [
            (nil, "warning", "BLUEZ_NOT_RUNNING", "apt install bluez"),
            ("denied", "warning", "BLUEZ_ACCESS_DENIED", "bluetooth group"),
            ("none", "warning", "NO_ADAPTER", "Bluetooth LE adapter"),
            ("off", "warning", "NOT_POWERED", "bluetoothctl power on"),
            ("many", "warning", "BLUEZ_FAILED", "journalctl"),
        ]
        for (mode, status, code, fix) in cases {
            let outcome = try Self.parse(try await Self.withPrivateBus(bluez: mode) { address in
                try await Self.doctorRun(environment: ["DBUS_SYSTEM_BUS_ADDRESS": address])
            })
            let check = outcome.checks["bluetooth"]
            #expect(Self.status(check) == status, "\(mode ?? "no BlueZ"): \(check ?? [:])")
            #expect((check?["details"] as? [String: Any])?["code"] as? String == code, "\(mode ?? "no BlueZ"): \(check ?? [:])")
            #expect((check?["fix"] as? String)?.contains(fix) == true, "\(mode ?? "no BlueZ"): \(check ?? [:])")
            #expect((check?["finding"] as? String)?.contains("NFC holders only") == true)
        }
        // BlueZ's main.conf: one ATT channel is ok; Enhanced ATT (set, or BlueZ's default of 3) is a warning with the fix.
        let configuration = FileManager.default.temporaryDirectory.appendingPathComponent("main-\(UUID().uuidString).conf")
        defer { try? FileManager.default.removeItem(at: configuration) }
        // (The file's parsing is MdocBLETests' job; one run each way here.)
        for (text, status, channels) in [("[GATT]\n#Channels = 1\n", "warning", 3)] {
            try text.write(to: configuration, atomically: true, encoding: .utf8)
            let outcome = try Self.parse(try await Self.withPrivateBus(bluez: "powered") { address in
                try await Self.doctorRun(environment: ["DBUS_SYSTEM_BUS_ADDRESS": address, "GBGBRIDGE_BLUEZ_MAIN_CONF": configuration.path])
            })
            let check = try #require(outcome.checks["bluetooth"])
            #expect(Self.status(check) == status, "\(text): \(check)")
            #expect((check["details"] as? [String: Any])?["attChannels"] as? Int == channels, "\(check)")
            if status == "warning" {
                #expect((check["details"] as? [String: Any])?["code"] as? String == "ENHANCED_ATT")
                #expect((check["fix"] as? String)?.contains("Channels = 1") == true, "\(check)")
            }
        }
        try "[GATT]\nChannels = 1\n".write(to: configuration, atomically: true, encoding: .utf8)
        let powered = try Self.parse(try await Self.withPrivateBus(bluez: "powered") { address in
            try await Self.doctorRun(environment: ["DBUS_SYSTEM_BUS_ADDRESS": address, "GBGBRIDGE_BLUEZ_MAIN_CONF": configuration.path])
        })
        let check = try #require(powered.checks["bluetooth"])
        #expect(Self.status(check) == "ok", "\(check)")
        #expect((check["finding"] as? String)?.contains("adapter hci1 is powered") == true, "\(check)")
        #expect((check["details"] as? [String: Any])?["adapters"] as? [String] == ["hci0 00:AA:01:00:00:00 (off)", "hci1 00:AA:01:00:00:01"])
    }
}
