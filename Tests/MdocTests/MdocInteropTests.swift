import Foundation
import MRTDCrypto
import Mdoc
import MdocEmulator
import MdocNFC
import SmartCard
import TestSupport
import Testing

/// Both directions against an mdoc reader, holder and verifier written elsewhere — from the
/// standard, in Python with cbor2, cryptography and pyscard (Tests/MdocTests/Independent) —
/// through the same pcscd + vpcd.
@Suite("mdoc interoperability with an independent Python holder, reader and verifier", .serialized,
       .enabled(if: IndependentPython.available, "needs /usr/bin/python3 with cbor2, cryptography and pyscard (scripts/install-deps.sh)"))
struct MdocInteropTests {
    static let python = IndependentPython.path
    static let directory = TestFixtures.packageRoot.appendingPathComponent("Tests/MdocTests/Independent")

    static let configurations = [("static", "signature"), ("static", "mac"), ("negotiated", "signature"), ("negotiated", "mac")]

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mdoc-interop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("an independent holder, read by our reader: issuer and device valid, the elements asked for", arguments: configurations)
    func independentHolderReadByOurReader(handover: String, auth: String) async throws {
        let work = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let iacaPath = work.appendingPathComponent("iaca.pem").path
        let script = Self.directory.appendingPathComponent("mdoc_holder.py").path
        let request = try MdocDocType.request(docType: MdocDocType.mDL, spec: "identity")
        let (outcome, verification) = try await PCSCDHarness.withCardProcess(Self.python, arguments: { [script, String($0), iacaPath, handover, auth] }) {
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            let outcome = try await MdocNFCReader.read(connection: connection, options: MdocReadOptions(requests: [request], timeout: .seconds(20)))
            await connection.disconnect()
            let iaca = try Certificate(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: iacaPath))))
            let document = try #require(outcome.response.documents.first)
            return (outcome, MdocVerifier(trustAnchors: [iaca], time: Date().timeIntervalSince1970)
                .verify(document, transcript: outcome.transcript, request: request, readerKey: outcome.readerEphemeralKey))
        }
        #expect(outcome.handover == handover)
        #expect(verification.issuer == .valid, "\(verification.issuerReason ?? "")")
        #expect(verification.device == .valid, "\(verification.deviceReason ?? "")")
        #expect(verification.deviceAuthentication == auth)
        #expect(verification.value("family_name") == .text("Independent"))
        #expect(verification.value("birth_date") == .tagged(1004, .text("1980-02-29")))
        #expect(verification.withheld.isEmpty)
    }

    /// `gbgbridge mdoc read` on a holder that behaves as the phone wallets do (the independent
    /// holder with `ble`): NFC engagement through pcscd, then the session over BLE — the GATT side
    /// on a stand-in bluetoothd on a private D-Bus, given to the CLI as its system bus.
    static func readOverBLE(handover: String, transport: String, bus: Bool = true) async throws -> CommandOutcome {
        let work = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let iacaPath = work.appendingPathComponent("iaca.pem").path
        let script = Self.directory.appendingPathComponent("mdoc_holder.py").path
        let service = "7d2fe1a4-3c55-4c4e-9d2b-6f1e0a8b5c31"
        return try await PrivateDBus.with(script: nil) { address in
            try await PCSCDHarness.withCardProcess(Self.python, arguments: { [script, String($0), iacaPath, handover, "signature", "ble", service, address] }) {
                try await runCommand(GBGBridgeBinary.path, ["mdoc", "read", "--reader", PCSCDHarness.vpcdReaderName, "--timeout", "20", "--json",
                                                            "--trust", iacaPath, "--transport", transport],
                                     timeout: .seconds(90), environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus ? address : "unix:path=/nonexistent/gbg-bus"])
            }
        }.0
    }

    @Test("a wallet-like holder (BLE alone) engaged over NFC is read over BLE with --transport auto, and verifies",
          .enabled(if: PrivateDBus.available, "needs dbus-daemon and python3-dbus, python3-gi"),
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary"),
          arguments: ["static", "negotiated"])
    func walletLikeHolderOverBLE(handover: String) async throws {
        let outcome = try await Self.readOverBLE(handover: handover, transport: "auto")
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any], "\(outcome.standardOutput)")
        #expect(report["issuer"] as? String == "valid" && report["device"] as? String == "valid", "\(report)")
        let transport = try #require(report["transport"] as? [String: Any])
        #expect(transport["carrier"] as? String == "ble")
        #expect(transport["handover"] as? String == handover)
        let timings = try #require(transport["timings"] as? [String: Double])
        #expect(Set(timings.keys) == ["engagement", "scan", "connect", "transfer"], "\(timings)")
        let elements = try #require((report["elements"] as? [String: Any])?["org.iso.18013.5.1"] as? [String: Any])
        #expect(elements["family_name"] as? String == "Independent")
    }

    @Test("that holder with --transport nfc, or with no Bluetooth on the kiosk, is refused saying why",
          .enabled(if: PrivateDBus.available, "needs dbus-daemon and python3-dbus, python3-gi"),
          .enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary"))
    func walletLikeHolderWithoutBLE() async throws {
        let nfc = try await Self.readOverBLE(handover: "static", transport: "nfc")
        #expect(nfc.status != 0)
        #expect(nfc.standardError.contains("over ble, not NFC, and the read was limited to NFC"), "\(nfc.standardError)")
        let noBluetooth = try await Self.readOverBLE(handover: "static", transport: "auto", bus: false)
        #expect(noBluetooth.status != 0)
        #expect(noBluetooth.standardError.contains("BLE needs a powered Bluetooth adapter"), "\(noBluetooth.standardError)")
    }

    @Test("our emulated holder, read by the independent reader: every check holds", arguments: configurations)
    func ourHolderReadByIndependentReader(handover: String, auth: String) async throws {
        let holder = try MdocNFCReadTests.holder(MdocHolder.Handover(rawValue: handover) ?? .static, MdocHolder.DeviceAuth(rawValue: auth) ?? .signature)
        let script = Self.directory.appendingPathComponent("mdoc_reader.py").path
        let iaca = TestFixtures.url("mdoc/iaca.cert.pem").path
        let outcome = try await PCSCDHarness.withEmulatedCard(holder) { _ in
            try await runCommand(Self.python, [script, PCSCDHarness.vpcdReaderName, iaca, "family_name,birth_date,portrait,age_over_18"],
                                 timeout: .seconds(60), directory: Self.directory)
        }
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        #expect(json["handover"] as? String == handover)
        let document = try #require((json["documents"] as? [[String: Any]])?.first)
        #expect(document["issuerSignature"] as? Bool == true)
        #expect(document["chain"] as? Bool == true)
        #expect(document["device"] as? Bool == true)
        #expect(document["deviceAuthentication"] as? String == auth)
        let digests = try #require(document["digests"] as? [String: Bool])
        #expect(Set(digests.keys) == ["family_name", "birth_date", "portrait", "age_over_18"])
        #expect(digests.values.allSatisfy { $0 })
    }

    @Test("what our reader received verifies in the independent verifier: transcript, response, ephemeral key", arguments: [MdocHolder.DeviceAuth.signature, .mac])
    func ourTranscriptsVerifyIndependently(auth: MdocHolder.DeviceAuth) async throws {
        let (outcome, _) = try await MdocNFCReadTests.read(try MdocNFCReadTests.holder(.negotiated, auth))
        let work = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let key = outcome.readerEphemeralKey
        let point = try key.curve.multiply(key.scalar)
        try Data(outcome.responseBytes).write(to: work.appendingPathComponent("response.cbor"))
        try Data(outcome.transcript.bytes.taggedBytes).write(to: work.appendingPathComponent("transcript.cbor"))
        try Data(COSEKeyFile.encode(curve: key.curve, point: point, scalar: key.scalar)).write(to: work.appendingPathComponent("key.cbor"))
        let result = try await runCommand(Self.python, [Self.directory.appendingPathComponent("mdoc_verify.py").path,
                                                        work.appendingPathComponent("response.cbor").path, work.appendingPathComponent("transcript.cbor").path,
                                                        work.appendingPathComponent("key.cbor").path, TestFixtures.url("mdoc/iaca.cert.pem").path],
                                          directory: Self.directory)
        #expect(result.status == 0, "\(result.standardError)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let document = try #require((json["documents"] as? [[String: Any]])?.first)
        for check in ["issuerSignature", "chain", "device", "msoDocType"] { #expect(document[check] as? Bool == true, "\(check)") }
        #expect((document["digests"] as? [String: Bool])?.values.allSatisfy { $0 } == true)
    }
}

import CBORCoding
import COSE

/// Debian's Python with the independent implementation's libraries.
enum IndependentPython {
    static let path = "/usr/bin/python3"
    static let available = debianPythonImports("import cbor2, cryptography, smartcard")
}

/// A COSE_Key with its private part, as `mdoc read --save-session` writes the ephemeral reader key.
enum COSEKeyFile {
    static func encode(curve: EllipticCurve, point: [UInt8], scalar: [UInt8]) throws -> [UInt8] {
        let name = try #require(COSEKey.Curve(curve))
        return COSEKey(curve: name, publicKey: point, privateKey: scalar).cbor(includingPrivate: true).encoded()
    }
}
