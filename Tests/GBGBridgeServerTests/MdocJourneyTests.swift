import Foundation
import GBGBridge
import GBGBridgeHost
@testable import GBGBridgeMdoc
import MRTDCrypto
import MRTDEmulator
import Mdoc
import MdocEmulator
import MdocNFC
import MdocRead
import TestSupport
import Testing

/// mdoc.read from a page: capability.query announces it; a phone at the reader is read,
/// verified and shown by the sample journey (in headless Chromium); one read of either kind at a time.
@Suite("mdoc.read over the bridge", .serialized)
struct MdocJourneyTests {
    static func rig(hostile: Set<MdocHostileMode> = [], handover: MdocHolder.Handover = .static) async throws -> ServerRig {
        let credential = try MdocCredential.load(profileAt: TestFixtures.url("mdoc/utopia-mdl.json"))
        let holder = MdocHolder(credential: credential, handover: handover, deviceAuth: .mac, hostile: hostile)
        var trust = MdocTrust()
        try trust.add(path: TestFixtures.url("mdoc/iaca.cert.pem").path)
        return try await ServerRig.start(staticDirectory: TestFixtures.url("journey").path, backend: EmulatedReaderBackend(chip: holder), mdocTrust: trust)
    }

    static func exchange(_ rig: ServerRig, _ action: String, _ data: [String: JSONValue]? = nil) async throws -> BridgeMessage {
        try await JourneyWebSocket.request(rig, action: action, data: data)
    }

    @Test func capabilityQueryAnnouncesMdocRead() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.stop() } }
        let answer = try await Self.exchange(rig, "capability.query")
        let capabilities = try #require(answer.payload.data?["capabilities"]?.objectValue)
        let mdoc = try #require(capabilities["mdoc.read"]?.objectValue)
        #expect(mdoc["supported"]?.boolValue == true)
        let constraints = try #require(mdoc["constraints"]?.objectValue)
        #expect(constraints["docTypes"]?.arrayValue?.compactMap(\.stringValue) == MdocDocType.known)
        #expect(constraints["transports"]?.arrayValue?.compactMap(\.stringValue) == ["nfc"])
        // QR engagement needs BLE, which this rig's host does not have.
        #expect(constraints["engagement"]?.arrayValue?.compactMap(\.stringValue) == ["nfc"])
    }

    /// mdoc.read with the holder's QR code as the page read it: checked before anything is
    /// started; without BLE it is refused saying why (the read over BLE itself: MdocQREngagementTests
    /// and the BLE VM test, through the CLI that shares MdocReadJob).
    @Test func aQRCodeEngagementIsCheckedAndNeedsBLE() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.stop() } }
        // {0: "1.0", 1: [1, 24(<<P-256 COSE_Key>>)], 2: [[2, 1, {0: true, 1: false, 10: uuid}]]} in base64url.
        let key: [UInt8] = [0xA4, 0x01, 0x02, 0x20, 0x01, 0x21, 0x58, 0x20] + [UInt8](repeating: 0x11, count: 32) + [0x22, 0x58, 0x20] + [UInt8](repeating: 0x22, count: 32)
        let engagement: [UInt8] = [0xA3, 0x00, 0x63, 0x31, 0x2E, 0x30, 0x01, 0x82, 0x01, 0xD8, 0x18, 0x58, UInt8(key.count)] + key
            + [0x02, 0x81, 0x83, 0x02, 0x01, 0xA3, 0x00, 0xF5, 0x01, 0xF4, 0x0A, 0x50] + [UInt8](repeating: 0xA5, count: 16)
        let code = "mdoc:" + Data(engagement).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        for data: [String: JSONValue] in [["qrCode": .string("https://example.org")], ["qrCode": .number(1)], ["qrCode": .string("mdoc:!!")],
                                          ["qrCode": .string(code), "reader": .string("Virtual PCD 00 00")],
                                          ["qrCode": .string(code), "transport": .string("nfc")]] {
            let answer = try await Self.exchange(rig, "mdoc.read", data)
            #expect(answer.payload.error?.code == "INVALID_REQUEST", "\(data)")
        }
        let answer = try await Self.exchange(rig, "mdoc.read", ["qrCode": .string(code), "readTimeoutSeconds": .number(5)])
        #expect(answer.payload.error?.code == "UNSUPPORTED", "\(String(describing: answer.payload.error))")
        #expect(answer.payload.error?.message.contains("BLE") == true, "\(String(describing: answer.payload.error))")
    }

    /// mdoc.read's `qrCode: {"fromCamera": true}`: the kiosk's document camera looks for the
    /// holder's code. Checked before anything starts; a kiosk whose document slot is the drawn
    /// stub has no camera for it (UNSUPPORTED, and capability.query says `qrFromCamera: false`);
    /// one with a camera but no BLE refuses before the holder is asked to show the code; a camera
    /// that fails is CAMERA_ERROR. (Reading a real camera's frames: the BLE VM's `qr-camera` case,
    /// through the CLI's `--qr-from-camera`, which shares `CameraQR.read`.)
    @Test func aQRCodeFromTheKioskCameraIsCheckedAndNeedsACameraAndBLE() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.stop() } }
        for data: [String: JSONValue] in [["qrCode": .object(["fromCamera": .bool(false)])], ["qrCode": .object([:])],
                                          ["qrCode": .object(["fromCamera": .bool(true), "device": .string("/dev/video0")])],
                                          ["qrCode": .object(["fromCamera": .bool(true)]), "reader": .string("Virtual PCD 00 00")],
                                          ["qrCode": .object(["fromCamera": .bool(true)]), "handover": .string("static")],
                                          ["qrCode": .object(["fromCamera": .bool(true)]), "transport": .string("nfc")]] {
            let answer = try await Self.exchange(rig, "mdoc.read", data)
            #expect(answer.payload.error?.code == "INVALID_REQUEST", "\(data)")
        }
        let stub = try await Self.exchange(rig, "mdoc.read", ["qrCode": .object(["fromCamera": .bool(true)])])
        #expect(stub.payload.error?.code == "UNSUPPORTED" && stub.payload.error?.message.contains("no document camera") == true,
                "\(String(describing: stub.payload.error))")
        let query = try await Self.exchange(rig, "capability.query")
        #expect(query.payload.data?["capabilities"]?.objectValue?["mdoc.read"]?.objectValue?["constraints"]?.objectValue?["qrFromCamera"]?.boolValue == false)

        let missing = "/dev/gbgbridge-test-no-such-camera"
        let camera = try #require(CameraQR.engagement(from: .device(missing)))
        #expect(CameraQR.engagement(from: .stub) == nil)
        let withCamera = try await ServerRig.start(staticDirectory: TestFixtures.url("journey").path,
                                                   backend: EmulatedReaderBackend(chip: MdocHolder(credential: try MdocCredential.load(profileAt: TestFixtures.url("mdoc/utopia-mdl.json")))),
                                                   mdocTrust: MdocTrust(), configureMdoc: { $0.qrCamera = camera })
        defer { Task { await withCamera.stop() } }
        // Without BLE (no powered adapter, as on CI): refused before the holder is asked for the
        // code; with it, the missing camera answers.
        let answer = try await Self.exchange(withCamera, "mdoc.read", ["qrCode": .object(["fromCamera": .bool(true)]), "timeoutSeconds": .number(2)])
        if await MdocReadJob.bluetooth(for: MdocReadOptions(requests: [])) != nil {
            #expect(answer.payload.error?.code == "CAMERA_ERROR", "\(String(describing: answer.payload.error))")
        } else {
            #expect(answer.payload.error?.code == "UNSUPPORTED" && answer.payload.error?.message.contains("BLE") == true, "\(String(describing: answer.payload.error))")
        }
        // The camera itself, failing: MDOC_CAMERA, which a page sees as CAMERA_ERROR (recoverable).
        do {
            _ = try await camera(.seconds(2))
            Issue.record("a missing camera gave an engagement")
        } catch {
            #expect(error.code == .cameraUnavailable, "\(error.code.rawValue): \(error.reason)")
        }
        let (code, recoverable) = MdocReadService.bridgeCode(MdocError(.cameraUnavailable, "the camera went away"))
        #expect(code == .cameraError && recoverable)
    }

    @Test func aPageReadsThePhoneAndGetsVerifiedElementsAndAReencodedPortrait() async throws {
        let rig = try await Self.rig(handover: .negotiated)
        defer { Task { await rig.stop() } }
        let answer = try await Self.exchange(rig, "mdoc.read", ["docType": .string(MdocDocType.mDL), "elements": .object(["org.iso.18013.5.1": .array([.string("family_name"), .string("portrait"), .string("age_over_18")])])])
        #expect(answer.payload.status == .success, "\(String(describing: answer.payload.error))")
        let data = try #require(answer.payload.data)
        #expect(data["issuer"]?.stringValue == "valid")
        #expect(data["device"]?.stringValue == "valid")
        let elements = try #require(data["elements"]?.objectValue?["org.iso.18013.5.1"]?.objectValue)
        #expect(Set(elements.keys) == ["family_name", "age_over_18"])
        let portrait = try #require(data["portrait"]?.objectValue)
        let jpeg = try #require(Data(base64Encoded: portrait["data"]?.stringValue ?? ""))
        #expect(jpeg.starts(with: [0xFF, 0xD8, 0xFF]))
        // Encoded anew: not the holder's bytes.
        #expect(jpeg != (try Data(contentsOf: TestFixtures.url("faces/face-jpeg.jpg"))))
        // The answer's data matches Docs/mdoc-read.schema.json (Python's jsonschema).
        let text = String(decoding: try JSONEncoder().encode(JSONValue.object(data)), as: UTF8.self)
        #expect(try await NFCReadSchema.problems(in: [text], schema: NFCReadSchema.mdocPath) == [])
    }

    @Test func aBadRequestNamesTheField() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.stop() } }
        for data: [String: JSONValue] in [["preset": .string("everything")], ["elements": .array([])], ["timeoutSeconds": .number(-1)], ["sneaky": .bool(true)]] {
            let answer = try await Self.exchange(rig, "mdoc.read", data)
            #expect(answer.payload.error?.code == "INVALID_REQUEST", "\(data)")
        }
    }

    @Test func aHolderThatDeclinesIsDocumentUnavailable() async throws {
        let rig = try await Self.rig(hostile: [.decline])
        defer { Task { await rig.stop() } }
        let answer = try await Self.exchange(rig, "mdoc.read", ["timeoutSeconds": .number(5)])
        #expect(answer.payload.error?.code == "DOCUMENT_UNAVAILABLE")
        #expect(answer.payload.error?.recoverable == true)
    }

    /// After each hostile holder, the same host answers the next page's read of a good phone.
    @Test func everyHostileHolderThenAGoodOneThroughOneHost() async throws {
        let credential = try MdocCredential.load(profileAt: TestFixtures.url("mdoc/utopia-mdl.json"))
        let reader = EmulatedReaderBackend(chip: MdocHolder(credential: credential))
        var trust = MdocTrust()
        try trust.add(path: TestFixtures.url("mdoc/iaca.cert.pem").path)
        let rig = try await ServerRig.start(staticDirectory: TestFixtures.url("journey").path, backend: reader, mdocTrust: trust)
        defer { Task { await rig.stop() } }
        for mode in MdocHostileMode.allCases where mode != .slowAPDU {
            let expired = try Certificate(bytes: Array(try Data(contentsOf: TestFixtures.url("mdoc/ds-expired.cert.pem")))).derBytes
            let other = try Certificate(bytes: Array(try Data(contentsOf: TestFixtures.url("mdoc/ds-other.cert.pem")))).derBytes
            reader.insert(MdocHolder(credential: credential, deviceAuth: mode == .wrongDeviceSignature ? .signature : .mac, hostile: [mode],
                                     expiredSignerCertificate: expired, untrustedSignerCertificate: other))
            let hostile = try await Self.exchange(rig, "mdoc.read", ["readTimeoutSeconds": .number(10)])
            if hostile.payload.status == .success {
                // Read, but never valid over bad data.
                let data = try #require(hostile.payload.data)
                if ![.garbageAfterSession, .unrequestedElements].contains(mode) {
                    #expect(data["verified"]?.boolValue == false, "\(mode)")
                }
            } else {
                #expect(hostile.payload.error?.code != nil, "\(mode)")
            }
            reader.insert(MdocHolder(credential: credential))
            let good = try await Self.exchange(rig, "mdoc.read", ["preset": .string("age-over-18")])
            #expect(good.payload.data?["verified"]?.boolValue == true, "after \(mode): \(String(describing: good.payload.error))")
        }
    }

    @Test func aTamperedElementIsWithheldAndNamedInTheAnswer() async throws {
        let rig = try await Self.rig(hostile: [.badDigest])
        defer { Task { await rig.stop() } }
        let answer = try await Self.exchange(rig, "mdoc.read", ["preset": .string("identity")])
        let data = try #require(answer.payload.data)
        #expect(data["issuer"]?.stringValue == "valid")
        #expect(data["verified"]?.boolValue == false)
        let withheld = try #require(data["withheld"]?.arrayValue)
        #expect(withheld.contains { $0.objectValue?["reason"]?.stringValue == "digest-mismatch" })
    }
}

/// One request from a page over the rig's real WebSocket, and its answer.
enum JourneyWebSocket {
    static func request(_ rig: ServerRig, action: String, data: [String: JSONValue]?) async throws -> BridgeMessage {
        let target = try #require(URL(string: rig.webSocketURL))
        let port = try #require(target.port)
        let path = target.path + (target.query.map { "?\($0)" } ?? "")
        let json = data.map { String(decoding: (try? JSONEncoder().encode(JSONValue.object($0))) ?? Data("{}".utf8), as: UTF8.self) }
        let message = requestJSON(action, id: "m1", data: json)
        let answer: BridgeMessage? = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    let socket = try RawWebSocket(port: port, path: path, origin: "ws://127.0.0.1", timeout: 60)
                    socket.sendText(message)
                    let deadline = ContinuousClock.now + .seconds(60)
                    var found: BridgeMessage?
                    while ContinuousClock.now < deadline, let text = socket.receiveText() {
                        if let decoded = try? BridgeMessage.decode(json: text), decoded.correlationId == "m1", decoded.type == .response {
                            found = decoded
                            break
                        }
                    }
                    socket.send(opcode: 8, payload: [0x03, 0xE8])
                    return found
                })
            }.start()
        }
        return try #require(answer, "no answer to \(action)")
    }
}

extension JourneyBrowserTests {
    /// The sample journey's step 6 in headless Chromium: the phone read, its elements listed, both
    /// badges valid, the re-encoded portrait shown.
    @Test func theJourneyReadsAPhonesMobileDrivingLicence() async throws {
        let rig = try await MdocJourneyTests.rig(handover: .negotiated)
        try await withPage(rig) { page in
            try await page.navigate("\(rig.origin)/?autorun=mdoc&preset=driving")
            let outcome = try await page.wait(for: "document.body.dataset.mdoc || ''", in: ["valid/valid", "error:", "invalid/invalid", "valid/invalid"], timeout: .seconds(30))
            let portrait = try await page.wait(for: "document.body.dataset.mdocPortrait || ''", in: ["148x70"], timeout: .seconds(10))
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("journey-mdoc.png"))
            let details = try await page.evaluate("document.getElementById('mdoc-details').textContent") as? String
            let badges = try await page.evaluate("document.getElementById('mdoc-badges').textContent") as? String
            #expect(outcome == "valid/valid")
            #expect(portrait == "148x70")
            #expect(details?.contains("Mustermann") == true)
            #expect(details?.contains("driving privileges") == true)
            #expect(badges?.contains("Issuer: valid") == true && badges?.contains("Device: valid") == true)
        }
    }
}
