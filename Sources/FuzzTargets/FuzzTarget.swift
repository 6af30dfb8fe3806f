import Biometrics
import CBORCoding
import Mdoc
import MdocNFC
import CVCertificates
import Foundation
import GBGBridge
import HostConfiguration
import ImageCodecs
import LDS
import MRTD
import MRTDEmulator
import MRTDVerification
import MRZ
import MRTDCrypto
import SmartCardCore

/// Every parser that takes what strangers control, as a function of one input (issue 44): chip
/// answers (BER-TLV, secure messaging, each LDS file, EF.SOD's CMS through OpenSSL, SecurityInfos,
/// CV certificates, biometric records), pages (bridge messages), files (configuration, evidence,
/// trust material) and PN532 frames, and images. `gbgbridge-fuzz` runs them under libFuzzer
/// (`scripts/fuzz.sh`) or replays files through them; the regression tests call them with the
/// inputs that once broke them. A target returns normally on any input: an error thrown by the
/// parser is the expected answer to garbage; only a crash, a hang or a sanitizer report is a
/// finding. Not in the package the .deb ships.
public struct FuzzTarget: Sendable {
    public let name: String
    /// What it parses, in words.
    public let summary: String
    public let run: @Sendable ([UInt8]) -> Void

    /// All targets, by name.
    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "ber-tlv", summary: "BER-TLV (every chip answer's structure)") { bytes in
            if let objects = try? BERTLV.parseAll(bytes) {
                for object in objects.prefix(64) where BERTLV.isConstructed(object.tag) { _ = try? object.children() }
            }
        },
        FuzzTarget(name: "secure-messaging", summary: "a protected response unwrapped with a fixed 3DES session (ICAO 9303-11 D.4's keys)") { bytes in
            guard let response = try? ResponseAPDU(bytes: bytes) else { return }
            var session = FuzzTarget.session
            _ = try? session.unprotect(response)
        },
        FuzzTarget(name: "ef-com", summary: "EF.COM") { _ = try? EFCOM(bytes: $0) },
        FuzzTarget(name: "ef-sod", summary: "EF.SOD (the security object, its CMS)") { _ = try? SecurityObject(bytes: $0) },
        FuzzTarget(name: "dg1", summary: "DG1 (the MRZ)") { _ = try? DataGroup1(bytes: $0) },
        FuzzTarget(name: "dg2", summary: "DG2 (face records: ISO 19794-5, 39794-5) and the image's header") { bytes in
            guard let group = try? DataGroup2(bytes: bytes) else { return }
            for face in group.faces.prefix(4) { _ = ImageInfo.inspect(face.data) }
        },
        FuzzTarget(name: "dg7", summary: "DG7 (the signature image)") { _ = try? DataGroup7(bytes: $0) },
        FuzzTarget(name: "dg11", summary: "DG11 (additional personal details)") { _ = try? DataGroup11(bytes: $0) },
        FuzzTarget(name: "dg12", summary: "DG12 (additional document details)") { _ = try? DataGroup12(bytes: $0) },
        FuzzTarget(name: "security-infos", summary: "SecurityInfos (DG14, EF.CardAccess, EF.CardSecurity)") { bytes in
            guard let infos = try? SecurityInfos(bytes: bytes) else { return }
            _ = ChipAuthentication.offer(in: infos)
        },
        FuzzTarget(name: "dg15", summary: "DG15 (the Active Authentication key)") { _ = try? DataGroup15(bytes: $0) },
        FuzzTarget(name: "passive-authentication", summary: "EF.SOD verified through OpenSSL (CMS signature, chain, hashes) against the test PKI") { bytes in
            guard let sod = try? SecurityObject(bytes: bytes) else { return }
            _ = PassiveAuthentication.verify(sod: sod, dataGroups: [1: Array(bytes.prefix(93))], trustStore: FuzzTarget.trust)
        },
        FuzzTarget(name: "cv-certificate", summary: "CV certificates and requests (BSI TR-03110-3)") { bytes in
            if let certificate = try? CVCertificate(bytes: bytes) { _ = certificate.description }
            _ = try? CVCertificateRequest(bytes: bytes)
        },
        FuzzTarget(name: "biometrics", summary: "DG3/DG4 (ISO 19794-4/-6 and 39794-4/-6 records)") { _ = try? BiometricDataGroup(bytes: $0) },
        FuzzTarget(name: "bridge-message", summary: "a page's bridge message (strict JSON)") { bytes in
            _ = try? BridgeMessage.decode(data: Data(bytes))
        },
        FuzzTarget(name: "mrz-text", summary: "MRZ text (access keys, the field rules, check digits)") { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            _ = try? AccessKey.mrz(text)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).prefix(4).map(String.init)
            _ = MRZReading(text: lines)
        },
        FuzzTarget(name: "configuration", summary: "serve's configuration file (YAML)") { bytes in
            _ = try? ServeSettings.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.conf")
        },
        FuzzTarget(name: "evidence", summary: "chip evidence (JSON) verified against the test PKI") { bytes in
            guard let evidence = try? ChipEvidence(json: Data(bytes)) else { return }
            _ = try? EvidenceVerifier(trustStore: FuzzTarget.trust).verify(evidence)
        },
        FuzzTarget(name: "trust-file", summary: "trust material: certificates, master lists, CRLs (trust import)") { bytes in
            var store = TrustStore()
            _ = try? store.add(bytes: bytes)
        },
        FuzzTarget(name: "pn532", summary: "PN532 frames from the host (the emulated reader's parser)") { bytes in
            _ = FuzzTarget.pn532.receive(bytes)
        },
        FuzzTarget(name: "cbor", summary: "CBOR (every mdoc message's structure), decoded and encoded again") { bytes in
            if let item = try? CBOR.decode(bytes) { _ = item.encoded() }
        },
        FuzzTarget(name: "ndef-handover", summary: "an NFC engagement: NDEF messages, a Handover Select with its carriers and DeviceEngagement") { bytes in
            _ = try? NDEFMessage(bytes: bytes)
            _ = try? HandoverSelect(bytes: bytes)
        },
        FuzzTarget(name: "device-engagement", summary: "DeviceEngagement (the holder's key and retrieval methods)") { _ = try? DeviceEngagement(bytes: $0) },
        FuzzTarget(name: "mdoc-qr-code", summary: "a QR engagement's text (mdoc: and base64url), and what it decodes to") { bytes in
            // What parses must come back the same through the holder's encoding.
            if let engagement = try? DeviceEngagement(qrCode: bytes), (try? DeviceEngagement(qrCode: Array(engagement.qrCode.utf8)))?.bytes != engagement.bytes {
                fatalError("a QR engagement that does not survive its own encoding") // trap: the fuzzer reports a broken invariant as a crash
            }
        },
        FuzzTarget(name: "device-response", summary: "a DeviceResponse verified against a fixed transcript and the test IACA") { bytes in
            guard let response = try? DeviceResponse(bytes: bytes) else { return }
            for document in response.documents.prefix(2) {
                _ = FuzzTarget.mdocVerifier.verify(document, transcript: FuzzTarget.transcript, request: nil, readerKey: nil)
            }
        },
        FuzzTarget(name: "mso", summary: "the MobileSecurityObject (issuerAuth's payload)") { _ = try? MobileSecurityObject(payload: $0) },
        FuzzTarget(name: "vical", summary: "a VICAL (the COSE-signed list of IACAs)") { bytes in
            guard let list = try? VICAL(bytes: bytes) else { return }
            _ = try? list.verify(anchors: [])
        },
        FuzzTarget(name: "image", summary: "JPEG, JPEG 2000 and PNG decoding within a chip image's limits (in process, under the sanitizer)") { bytes in
            let limits = ImageCodecs.Limits(maxPixels: 1 << 20, maxBytes: 32 << 20)
            if bytes.starts(with: [0xFF, 0xD8]) {
                _ = try? ImageCodecs.decodeJPEG(bytes, limits: limits)
            } else if bytes.starts(with: [0x89, 0x50]) {
                _ = try? ImageCodecs.decodePNG(bytes, limits: limits)
            } else {
                _ = try? ImageCodecs.decodeJPEG2000(bytes, limits: limits)
            }
        },
    ]

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    /// The fixed session the device-response target verifies against.
    static let transcript = SessionTranscript(deviceEngagement: [0xA0], readerKey: EmbeddedCBOR(wrapping: [0xA0]), handover: .null)
    static let mdocVerifier: MdocVerifier = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let iaca = (try? Data(contentsOf: root.appendingPathComponent("Fixtures/mdoc/iaca.cert.pem"))).flatMap { try? Certificate(bytes: Array($0)) }
        return MdocVerifier(trustAnchors: iaca.map { [$0] } ?? [], time: 1_800_000_000)
    }()

    /// ICAO 9303-11 Appendix D.4's session keys (BAC): a fixed session, so that inputs are
    /// judged by the same keys every time.
    static let session = SecureMessaging(cipher: .tripleDES, encryptionKey: hex("979EC13B1CBFE9DCD01AB0FED307EAE5"),
                                         macKey: hex("F1CB1F1FB5ADF208806B89DC579DC1F8"), ssc: hex("887022120C06C226"))

    static let trust: TrustStore = {
        var store = TrustStore()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        try? store.add(path: root.appendingPathComponent("Fixtures/pki/csca.cert.pem"))
        return store
    }()

    static let pn532 = PN532Emulator(chip: nil)

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }
}
