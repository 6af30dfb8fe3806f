import CBORCoding
import Foundation
import Mdoc
import MdocEmulator
import MdocNFC
import TestSupport

extension FuzzSeeds {
    /// Seeds for the mdoc targets: a credential's items, MSO and a whole DeviceResponse from the
    /// emulated holder's profiles, a Handover Select, and ISO 18013-5 Annex D's vectors when
    /// `../shared/fixtures` is there.
    static func addMdocSeeds(_ add: (String, [UInt8]?) -> Void) {
        for profile in ["utopia-mdl", "utopia-pid"] {
            guard let credential = try? MdocCredential.load(profileAt: TestFixtures.url("mdoc/\(profile).json")), let mac = try? COSEMac0Seed.mac() else { continue }
            if let payload = credential.issuerAuth.payload { add("mso", payload) }
            add("cbor", credential.issuerAuth.cbor.encoded())
            let document = MdocDocument(docType: credential.docType, issuerNamespaces: credential.items, issuerAuth: credential.issuerAuth,
                                        deviceNamespacesBytes: EmbeddedCBOR(encoding: .map([:])),
                                        deviceAuth: .mac(mac))
            add("device-response", DeviceResponse(documents: [document]).encoded)
            for (_, items) in credential.items { for item in items.prefix(4) { add("cbor", item.bytes.taggedBytes) } }
        }
        if let key = try? COSEKeySeed.key(), let engagement = DeviceEngagement.make(deviceKey: key, retrievalMethods: [.nfc(maximumCommandLength: 255, maximumResponseLength: 256)]) {
            add("device-engagement", engagement.bytes)
            add("mdoc-qr-code", Array(engagement.qrCode.utf8))
            add("mdoc-qr-code", Array(engagement.qrCode.uppercased().utf8) + [0x0D, 0x0A])
            let alternative = NDEFRecord(format: .wellKnown, type: "ac", payload: [0x01, 0x03] + Array("nfc".utf8) + [0x01, 0x04] + Array("mdoc".utf8))
            let select = NDEFRecord(format: .wellKnown, type: "Hs", payload: [0x15] + NDEFMessage(records: [alternative]).encoded)
            let carrier = NDEFRecord(format: .external, type: "iso.org:18013:nfc", identifier: "nfc", payload: [0x01, 0x03, 0x01, 0xFF, 0xFF, 0x04, 0x02, 0x01, 0x00, 0x00])
            let record = NDEFRecord(format: .external, type: "iso.org:18013:deviceengagement", identifier: "mdoc", payload: engagement.bytes)
            add("ndef-handover", NDEFMessage(records: [select, carrier, record]).encoded)
            add("ndef-handover", HandoverRequest.message(random: [1, 2]))
        }
        // A VICAL listing the test IACA, signed by the test document signer (its x5chain the signer's certificate).
        if let iaca = try? Data(contentsOf: TestFixtures.url("mdoc/iaca.cert.pem")), let certificate = try? Certificate(bytes: Array(iaca)),
           let signer = try? Data(contentsOf: TestFixtures.url("mdoc/ds.cert.pem")), let signerCertificate = try? Certificate(bytes: Array(signer)),
           let keyFile = try? Data(contentsOf: TestFixtures.url("mdoc/ds.key.pem")), let key = try? PrivateKey(bytes: Array(keyFile)) {
            let list: CBOR = .map(["version": "1.0", "vicalProvider": "seed", "date": .tagged(0, "2026-01-01T00:00:00Z"), "vicalIssueID": 1,
                                   "certificateInfos": .array([.map(["certificate": .bytes(certificate.derBytes), "docType": .array(["org.iso.18013.5.1.mDL"]),
                                                                     "issuingCountry": "UT"])])])
            if let signed = try? COSESign1.sign(payload: list.encoded(), key: key, algorithm: .es256, unprotected: [CBOR(33): .bytes(signerCertificate.derBytes)]) {
                add("vical", CBOR.tagged(18, signed.cbor).encoded())
            }
        }
        guard TestFixtures.sharedFixturesAvailable,
              let data = try? Data(contentsOf: TestFixtures.sharedURL("mdoc-annex-d/vectors.json")),
              let vectors = try? JSONSerialization.jsonObject(with: data) as? [String: String] else { return }
        for (name, hex) in vectors {
            let bytes = FuzzTarget.hex(hex)
            add("cbor", bytes)
            switch name {
            case "DEVICE_RESPONSE": add("device-response", bytes)
            case "DEVICE_ENGAGEMENT":
                add("device-engagement", bytes)
                if let engagement = try? DeviceEngagement(bytes: bytes) { add("mdoc-qr-code", Array(engagement.qrCode.utf8)) }
            case "SESSION_TRANSCRIPT_BYTES":
                if let transcript = try? SessionTranscript(bytes: bytes), let handover = transcript.item.arrayValue?.last?.arrayValue {
                    for message in handover { if let raw = message.bytesValue { add("ndef-handover", raw) } }
                }
            default: break
            }
        }
    }
}

import COSE
import MRTDCrypto

enum COSEMac0Seed {
    static func mac() throws -> COSEMac0 { try COSEMac0.mac(payload: [0x01], detached: true, key: [UInt8](repeating: 7, count: 32)) }
}

enum COSEKeySeed {
    static func key() throws -> COSEKey {
        let pair = try EllipticCurve.nistP256.generateKeyPair()
        return COSEKey(curve: .p256, publicKey: pair.publicKey)
    }
}
