import ArgumentParser
import BoundedFiles
import CBORCoding
import COSE
import CVCertificates
import Foundation
import GBGBridge
import GBGBridgeHost
import GBGBridgeRead
import MRTD
import MRTDCrypto
import Mdoc
import MdocNFC
import MdocRead
import SmartCard

/// `gbgbridge mdoc`: ISO 18013-5 mobile documents (mDL, EU PID) at an NFC reader (Docs/mdoc.md).
struct MdocCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mdoc",
        abstract: "Read and verify ISO 18013-5 mobile documents (mDL, EU PID) presented over NFC or by QR code and BLE.",
        subcommands: [MdocReadCommand.self, MdocVerifyCommand.self]
    )
}

/// Exit statuses of `mdoc read` and `mdoc verify` (scripts depend on them).
enum MdocExit {
    static let ok: Int32 = 0
    static let verificationFailed: Int32 = 1
    static let badArguments: Int32 = 2
    static let timeout: Int32 = 4
    static let noDocument: Int32 = 5
    static let transport: Int32 = 6
    /// The camera for --qr-from-camera is missing or failed (as `read --mrz-from-camera`'s 7).
    static let camera: Int32 = 7
}

/// The trust paths an mdoc command uses: those given, else the store's iaca/ directory.
func mdocTrust(_ paths: [String], command: String) throws -> MdocTrust {
    var paths = paths
    if paths.isEmpty, FileManager.default.fileExists(atPath: TrustCommand.defaultStore) { paths = [TrustCommand.defaultStore] }
    do {
        return try MdocTrust(paths: paths)
    } catch {
        printError("gbgbridge mdoc \(command): \(error.reason)")
        throw ExitCode(MdocExit.badArguments)
    }
}

/// `--at`: RFC 3339 or YYYY-MM-DD.
func parseMdocTime(_ text: String) -> Double? {
    if let seconds = MdocTime.seconds(dateTime: text) { return seconds }
    return MdocTime.days(fullDate: text).map { Double($0) * 86_400 }
}

func printMdocReports(_ reports: [MdocReport], json: Bool) {
    if json {
        let value: JSONValue = reports.count == 1 ? reports[0].jsonValue : .object(["documents": .array(reports.map(\.jsonValue))])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        print((try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}")
        return
    }
    for report in reports {
        print("\(report.docType): issuer \(report.issuer.rawValue)\(report.issuerReason.map { " (\($0))" } ?? ""), device \(report.device.rawValue) by \(report.deviceAuthentication)\(report.deviceReason.map { " (\($0))" } ?? "")")
        for namespace in report.elements.keys.sorted() {
            for (element, value) in (report.elements[namespace] ?? [:]).sorted(by: { $0.key < $1.key }) {
                print("  \(element): \(compactText(value))")
            }
        }
        if let portrait = report.portrait {
            print(portrait.problem.map { "  portrait: not shown (\($0))" } ?? "  portrait: \(portrait.width)×\(portrait.height) JPEG (re-encoded)")
        }
        for item in report.withheld { print("  withheld: \(item.namespace) \(item.identifier) (\(item.reason.rawValue))") }
        for item in report.notReturned { print("  not returned: \(item.namespace) \(item.identifier)") }
        if let signer = report.documentSigner { print("  signed by \(signer)\(report.issuingAuthority.map { ", issued by \($0)" } ?? "")") }
    }
}

/// A value on one line for the human summary (byte strings by size, long text cut).
func compactText(_ value: JSONValue) -> String {
    switch value {
    case .null: return "null"
    case .bool(let flag): return flag ? "true" : "false"
    case .number(let number): return number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    case .string(let text): return text.count > 80 ? String(text.prefix(80)) + "…" : text
    case .array(let items): return "[" + items.map(compactText).joined(separator: ", ") + "]"
    case .object(let object):
        if case .string(let base64)? = object["base64"], object.count == 1 { return "(\(base64.count * 3 / 4) bytes)" }
        return "{" + object.keys.sorted().map { "\($0): \(compactText(object[$0] ?? .null))" }.joined(separator: ", ") + "}"
    }
}

struct MdocReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Read an mdoc a phone or card presents at an NFC reader (or by QR code), and verify it.",
        discussion: """
            Waits for a holder at the reader (PC/SC), reads its NFC engagement (static or \
            negotiated handover), sends the request over an encrypted session (ISO 18013-5 \
            §9.1.1) with ENVELOPE APDUs, and verifies what comes back: the MSO's signature by a \
            document signer chained to an IACA trusted here (--trust; default the store's iaca/ \
            directory, filled by 'gbgbridge trust import --iaca'), its validity, each element's \
            digest, and the device's signature or MAC over this session. Elements whose digest \
            fails, or that were not asked for, are withheld and named.

            With --qr-from-image, --qr-from-camera or --qr the holder engaged by QR code instead \
            (ISO 18013-5 §8.2.2.3, for phones at a kiosk without NFC): the picture's or the \
            camera frames' code is found in the confined decoder, and the session runs over BLE \
            through the powered adapters BlueZ lists; no NFC reader is used.

            Exit status: 0 read and verified; 1 read, but a verification failed; 2 usage, or a \
            picture that cannot be read; 4 no holder in time, or the read's deadline passed; \
            5 no mdoc (no holder's QR code in the picture), or the holder declined; 6 transport \
            (the reader, the APDUs, the session, BLE); 7 no camera, or the camera failed \
            (--qr-from-camera).
            """
    )

    @Option(name: .long, help: "The reader: a name or part of one (default: the first with a holder).")
    var reader: String?

    @Option(name: .customLong("doctype"), help: ArgumentHelp("The document type to ask for: org.iso.18013.5.1.mDL (default) or eu.europa.ec.eudi.pid.1.", valueName: "type"))
    var docType = MdocDocType.mDL

    @Option(name: .long, help: ArgumentHelp("What to ask for: a preset (\(MdocDocType.presetNames.joined(separator: ", "))) or NS:ELEMENT,… (a bare ELEMENT is in the document type's namespace).", valueName: "preset|list"))
    var request = "identity"

    @Flag(name: .long, help: "Say the kiosk intends to retain the elements (intentToRetain).")
    var intentToRetain = false

    @Option(name: .long, help: ArgumentHelp("IACA certificates, directories of them, or a trust store (its iaca/ directory); repeatable.", valueName: "path"))
    var trust: [String] = []

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for a holder; the read itself gets as long again.", valueName: "seconds"))
    var timeout: Double = 30

    @Option(name: .long, help: ArgumentHelp("Engagement: auto (what the holder offers), static or negotiated.", valueName: "mode"))
    var handover = "auto"

    @Option(name: .long, help: ArgumentHelp("Data retrieval after the NFC engagement: auto (NFC when the holder offers it, else BLE with a powered adapter), nfc or ble.", valueName: "carrier"))
    var transport = "auto"

    @Option(name: .long, help: ArgumentHelp("Over BLE, a holder's L2CAP channel: auto (used when its service offers one, else GATT) or never (GATT only).", valueName: "auto|never"))
    var l2cap = "auto"

    @Option(name: .customLong("qr-from-image"), help: ArgumentHelp("Engage by the holder's QR code in this picture (PNG or JPEG of its screen) instead of NFC; the session runs over BLE.", valueName: "file"))
    var qrFromImage: String?

    @Flag(name: .customLong("qr-from-camera"), help: "Engage by the holder's QR code shown to the camera (--camera, or the first that works) instead of NFC; --timeout bounds the search.")
    var qrFromCamera = false

    @Option(name: .long, help: ArgumentHelp("With --qr-from-camera: the camera, /dev/videoN or a /dev/v4l/by-id/… link.", valueName: "DEVICE"))
    var camera: String?

    @Option(name: .customLong("qr"), help: ArgumentHelp("Engage by the QR code's text as a scanner reads it (mdoc:…), or - to read it from standard input; the session runs over BLE.", valueName: "text"))
    var qrText: String?

    @Option(name: .customLong("reader-key"), help: ArgumentHelp("Reader authentication: the reader's private key (PEM/DER file) or a pkcs11: URI.", valueName: "key"))
    var readerKey: String?

    @Option(name: .customLong("reader-certificate"), help: ArgumentHelp("Reader authentication: the reader certificate, then any intermediates (PEM/DER); repeatable.", valueName: "file"))
    var readerCertificate: [String] = []

    @Option(name: .long, help: ArgumentHelp("Judge validity at this time (RFC 3339 or YYYY-MM-DD) instead of now.", valueName: "time"))
    var at: String?

    @Option(name: .long, help: ArgumentHelp("Write the portrait (decoded and re-encoded as JPEG) to this file.", valueName: "file"))
    var portrait: String?

    @Option(name: .customLong("save-session"), help: ArgumentHelp("Write device-response.cbor, session-transcript.cbor and ephemeral-reader-key.cbor (a COSE_Key with its private part) into this directory, for 'mdoc verify' elsewhere.", valueName: "dir"))
    var saveSession: String?

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard timeout > 0, timeout <= 600 else { throw ValidationError("--timeout must be between 0 and 600 seconds") }
        guard MdocReadOptions.Transport(rawValue: transport) != nil else {
            throw ValidationError("--transport is auto, nfc or ble")
        }
        guard ["auto", "never"].contains(l2cap) else { throw ValidationError("--l2cap is auto or never") }
        if l2cap == "never", transport == "nfc" { throw ValidationError("--l2cap is BLE's: not with --transport nfc") }
        guard MdocReadOptions.Handover(rawValue: handover == "auto" ? "automatic" : handover) != nil else {
            throw ValidationError("--handover is auto, static or negotiated")
        }
        if (readerKey == nil) != readerCertificate.isEmpty { throw ValidationError("--reader-key and --reader-certificate go together") }
        if camera != nil, !qrFromCamera { throw ValidationError("--camera goes with --qr-from-camera") }
        if qrFromImage != nil || qrText != nil || qrFromCamera {
            let ways = (qrFromImage == nil ? 0 : 1) + (qrText == nil ? 0 : 1) + (qrFromCamera ? 1 : 0)
            if ways > 1 {
                throw ValidationError("--qr-from-image, --qr-from-camera and --qr are ways to give one engagement: give one")
            }
            if reader != nil { throw ValidationError("--reader is the NFC reader; a QR engagement uses none") }
            if handover != "auto" { throw ValidationError("--handover is the NFC engagement's; a QR engagement has no handover") }
            if transport == "nfc" { throw ValidationError("a QR engagement retrieves over BLE: --transport auto or ble") }
        }
        if let at, parseMdocTime(at) == nil { throw ValidationError("--at is RFC 3339 (2026-11-27T12:00:00Z) or YYYY-MM-DD") }
        do { _ = try MdocDocType.request(docType: docType, spec: request) } catch { throw ValidationError("--request: \(error.reason)") }
    }

    func run() async throws {
        let trust = try mdocTrust(self.trust, command: "read")
        let request: MdocRequest
        do { request = try MdocDocType.request(docType: docType, spec: self.request, intentToRetain: intentToRetain) } catch {
            printError("gbgbridge mdoc read: \(error.reason)")
            throw ExitCode(MdocExit.badArguments)
        }
        var options = MdocReadOptions(requests: [request], timeout: .milliseconds(Int(timeout * 1000)),
                                      handover: MdocReadOptions.Handover(rawValue: handover == "auto" ? "automatic" : handover) ?? .automatic)
        options.transport = MdocReadOptions.Transport(rawValue: transport) ?? .auto
        options.l2cap = l2cap != "never"
        do {
            options.readerKey = try loadReaderKey()
        } catch {
            printError("gbgbridge mdoc read: \(error)")
            throw ExitCode(MdocExit.badArguments)
        }
        let job = MdocReadJob(reader: reader, options: options, cardTimeout: .milliseconds(Int(timeout * 1000)), trust: trust,
                              verificationTime: at.flatMap(parseMdocTime))
        let result: MdocReadJob.Result
        do {
            if let engaged = try await qrEngagement() {
                result = try await job.run(qrEngagement: engaged.engagement, engagementTime: engaged.time)
            } else {
                result = try await job.run(on: PCSCBackend())
            }
        } catch {
            if json { printJSON(["error": ["code": error.code.rawValue, "message": error.reason]]) }
            printError("gbgbridge mdoc read: \(error.reason)")
            throw ExitCode(MdocReadJob.exitStatus(for: error))
        }
        do {
            if let saveSession { try Self.save(result.outcome, to: saveSession) }
            if let portrait, let image = result.reports.first?.portrait, image.problem == nil {
                try PrivateFile.write(Data(image.jpeg), to: portrait)
            }
        } catch {
            printError("gbgbridge mdoc read: \(error)")
            throw ExitCode(MdocExit.transport)
        }
        printMdocReports(result.reports, json: json)
        if result.reports.contains(where: { !$0.verified }) { throw ExitCode(MdocExit.verificationFailed) }
    }

    /// The QR engagement given (--qr-from-image, --qr-from-camera, --qr), and how long reading it
    /// took; nil for NFC.
    func qrEngagement() async throws(MdocError) -> (engagement: DeviceEngagement, time: Duration)? {
        let started = ContinuousClock.now
        let engagement: DeviceEngagement
        if let qrFromImage {
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.read(qrFromImage, ceiling: 48 * BoundedFile.mebibyte, what: "PNG or JPEG")
            } catch {
                throw MdocError(.invalidRequest, "--qr-from-image \(error.description)")
            }
            do {
                engagement = try await MdocQREngagement.engagement(picture: bytes)
            } catch where error.code == .invalidRequest {
                throw MdocError(.invalidRequest, "--qr-from-image \(qrFromImage): \(error.reason)")
            }
        } else if qrFromCamera {
            let quiet = json
            let limit = Duration.milliseconds(Int(timeout * 1000))
            engagement = try await CameraQR.read(camera: camera, within: limit, progress: { (line: String) in
                if !quiet { printError(line) }
            })
        } else if let qrText {
            var text = Array(qrText.utf8)
            if qrText == "-" {
                guard let line = readLine(strippingNewline: true) else { throw MdocError(.invalidRequest, "--qr -: nothing on standard input") }
                text = Array(line.utf8)
            }
            do {
                engagement = try DeviceEngagement(qrCode: text)
            } catch where error.code == .engagement {
                throw MdocError(.invalidRequest, "--qr: \(error.reason)")
            }
        } else {
            return nil
        }
        return (engagement, ContinuousClock.now - started)
    }

    func loadReaderKey() throws -> ReaderAuthenticationKey? {
        guard let readerKey else { return nil }
        var chain: [[UInt8]] = []
        for path in readerCertificate {
            chain += try Certificate.all(bytes: try BoundedFile.read(path, ceiling: 64 << 10, what: "reader certificate")).map(\.derBytes)
        }
        guard let leaf = chain.first else { throw MdocError(.readerKey, "no reader certificate") }
        if readerKey.hasPrefix("pkcs11:") {
            let signer = try PKCS11Signer(uri: readerKey)
            let key = try PublicKey(subjectPublicKeyInfo: try Certificate(bytes: leaf).subjectPublicKeyInfo)
            let size = key.byteSize
            let algorithm: COSEAlgorithm = size <= 32 ? .es256 : size <= 48 ? .es384 : .es512
            let cvAlgorithm: CVSignatureAlgorithm = size <= 32 ? .ecdsaSHA256 : size <= 48 ? .ecdsaSHA384 : .ecdsaSHA512
            guard key.keyType == .ec else { throw MdocError(.readerKey, "the reader certificate's key is not EC") }
            return ReaderAuthenticationKey(algorithm: algorithm, certificateChain: chain) { message, _ in
                try await signer.sign(message, algorithm: cvAlgorithm)
            }
        }
        let key = try PrivateKey(bytes: try BoundedFile.read(readerKey, ceiling: 64 << 10, what: "reader key"))
        return try ReaderAuthenticationKey(privateKey: key, certificateChain: chain)
    }

    /// The session's evidence, owner-only, never through a symlink (it is personal data and a key).
    static func save(_ outcome: MdocReadOutcome, to directory: String) throws {
        let fd = try PrivateFile.openDirectory(directory)
        defer { close(fd) }
        try PrivateFile.write(outcome.responseBytes, name: "device-response.cbor", in: fd, displayPath: directory + "/device-response.cbor")
        try PrivateFile.write(outcome.transcript.bytes.taggedBytes, name: "session-transcript.cbor", in: fd, displayPath: directory + "/session-transcript.cbor")
        let key = outcome.readerEphemeralKey
        guard let curve = COSEKey.Curve(key.curve) else { return }
        let point = try key.curve.multiply(key.scalar)
        try PrivateFile.write(COSEKey(curve: curve, publicKey: point, privateKey: key.scalar).cbor(includingPrivate: true).encoded(),
                              name: "ephemeral-reader-key.cbor", in: fd, displayPath: directory + "/ephemeral-reader-key.cbor")
    }
}

struct MdocVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a DeviceResponse against its session's transcript, for a backend.",
        discussion: """
            Checks a DeviceResponse (CBOR) as 'mdoc read' does: issuer data authentication \
            against the IACAs in --trust, validity at --at (default now), every element's digest, \
            and device authentication over the SessionTranscript (SessionTranscriptBytes, tagged \
            or not). A deviceMac needs the reader's ephemeral private key: a COSE_Key with its \
            private part (-4), or a PEM/DER EC private key. Exit status: 0 verified; 1 a \
            verification failed; 2 usage or unreadable input.
            """
    )

    @Option(name: .customLong("device-response"), help: ArgumentHelp("The DeviceResponse (CBOR).", valueName: "file"))
    var deviceResponse: String

    @Option(name: .customLong("session-transcript"), help: ArgumentHelp("SessionTranscriptBytes (CBOR).", valueName: "file"))
    var sessionTranscript: String

    @Option(name: .customLong("ephemeral-reader-key"), help: ArgumentHelp("The reader's ephemeral private key (COSE_Key or PEM/DER), for deviceMac.", valueName: "file"))
    var ephemeralReaderKey: String?

    @Option(name: .long, help: ArgumentHelp("IACA certificates, directories of them, or a trust store; repeatable.", valueName: "path"))
    var trust: [String] = []

    @Option(name: .long, help: ArgumentHelp("Judge validity at this time (RFC 3339 or YYYY-MM-DD) instead of now.", valueName: "time"))
    var at: String?

    @Option(name: .long, help: ArgumentHelp("Withhold elements not in this request (a preset or NS:ELEMENT,… for the document's type).", valueName: "preset|list"))
    var request: String?

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if let at, parseMdocTime(at) == nil { throw ValidationError("--at is RFC 3339 (2026-11-27T12:00:00Z) or YYYY-MM-DD") }
    }

    func run() async throws {
        let trust = try mdocTrust(self.trust, command: "verify")
        func fail(_ message: String) throws -> Never {
            if json { printJSON(["error": ["code": "MDOC_INPUT", "message": message]]) }
            printError("gbgbridge mdoc verify: \(message)")
            throw ExitCode(MdocExit.badArguments)
        }
        let response: DeviceResponse
        let transcript: SessionTranscript
        var readerKey: MdocVerifier.ReaderEphemeralKey?
        do {
            response = try DeviceResponse(bytes: try BoundedFile.read(deviceResponse, ceiling: DeviceResponse.limits.maximumBytes, what: "DeviceResponse"))
            transcript = try SessionTranscript(bytes: try BoundedFile.read(sessionTranscript, ceiling: SessionTranscript.limits.maximumBytes, what: "SessionTranscript"))
            if let ephemeralReaderKey { readerKey = try Self.loadEphemeralKey(ephemeralReaderKey) }
        } catch let error as MdocError {
            try fail(error.reason)
        } catch {
            try fail("\(error)")
        }
        guard !response.documents.isEmpty else { try fail("the DeviceResponse holds no document (status \(response.status))") }
        let time = at.flatMap(parseMdocTime) ?? Date().timeIntervalSince1970
        let verifier = MdocVerifier(trustAnchors: trust.anchors, revocationLists: trust.revocationLists, time: time)
        var reports: [MdocReport] = []
        for document in response.documents {
            var request: MdocRequest?
            if let spec = self.request {
                do { request = try MdocDocType.request(docType: document.docType, spec: spec) } catch { try fail("--request: \(error.reason)") }
            }
            let verification = verifier.verify(document, transcript: transcript, request: request, readerKey: readerKey)
            reports.append(MdocReport(verification, outcome: nil, portrait: await MdocReadJob.portrait(verification), at: time))
        }
        printMdocReports(reports, json: json)
        if reports.contains(where: { !$0.verified }) { throw ExitCode(MdocExit.verificationFailed) }
    }

    /// A COSE_Key with d, or a PEM/DER EC private key.
    static func loadEphemeralKey(_ path: String) throws -> MdocVerifier.ReaderEphemeralKey {
        let bytes = try BoundedFile.read(path, ceiling: 16 << 10, what: "ephemeral reader key")
        if let item = try? CBOR.decode(bytes, limits: DeviceEngagement.limits), item.mapValue != nil {
            let key = try COSEKey(cbor: item)
            guard let curve = key.curve.ellipticCurve, let scalar = key.privateKey else {
                throw MdocError(.invalidRequest, "the COSE_Key has no private part (-4) on an EC curve")
            }
            return .init(curve: curve, scalar: scalar)
        }
        guard let ec = try PrivateKey(bytes: bytes).ecKey else { throw MdocError(.invalidRequest, "the ephemeral reader key is not an EC key") }
        return .init(curve: ec.curve, scalar: ec.scalar)
    }
}
