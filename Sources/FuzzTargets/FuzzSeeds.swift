import Foundation
import MRTDEmulator
import MRTDVerification
import LDS
import MRTD
import SmartCardCore
import TestSupport

/// Seed corpora, one directory per target: the virtual passports' files (BAC, PACE, EAC, an ID
/// card), the test PKI and its CRLs, CV certificates, bridge messages, the configuration file,
/// faces, PN532 frames — and, where `../shared/fixtures` is there, real EF.SODs, master lists and
/// LDS files (read from there at run time, never copied into the repository).
public enum FuzzSeeds {
    /// Writes each target's seeds under `directory/TARGET/`; returns how many each got.
    public static func write(to directory: URL) throws -> [String: Int] {
        var seeds: [String: [[UInt8]]] = [:]
        func add(_ target: String, _ bytes: [UInt8]?) { if let bytes, !bytes.isEmpty { seeds[target, default: []].append(bytes) } }
        func file(_ url: URL) -> [UInt8]? { (try? Data(contentsOf: url)).map(Array.init) }

        // The virtual passports: every file they hold.
        var passports: [EmulatedPassport] = []
        for name in TestFixtures.passportNames + TestFixtures.pacePassportNames {
            if let passport = try? TestFixtures.passport(name) { passports.append(passport) }
        }
        if var description = try? TestFixtures.description("utopia-td3-pace") {
            description.biometrics = true
            if let passport = try? EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                    signer: try TestFixtures.documentSigner()) { passports.append(passport) }
        }
        let byFID: [UInt16: String] = [0x011E: "ef-com", 0x011D: "ef-sod", 0x0101: "dg1", 0x0102: "dg2", 0x0103: "biometrics",
                                       0x0104: "biometrics", 0x0107: "dg7", 0x010B: "dg11", 0x010C: "dg12", 0x010E: "security-infos",
                                       0x010F: "dg15"]
        for passport in passports {
            for (fid, content) in passport.applicationFiles {
                if let target = byFID[fid] { add(target, content) }
                add("ber-tlv", Array(content.prefix(4_096)))
                if fid == 0x011D { add("passive-authentication", content) }
            }
            for (_, content) in passport.masterFiles { add("security-infos", content); add("ber-tlv", content) }
        }
        // Trust material, CV certificates, faces, bridge messages, the configuration.
        for name in ["pki/csca.cert.der", "pki/csca.cert.pem", "pki/ds.cert.pem", "pki/ds-rsa.cert.pem", "crl/csca-empty.crl.pem",
                     "crl/csca-revokes-ds.crl.pem"] { add("trust-file", file(TestFixtures.url(name))) }
        for name in ["UTCVCA00001", "UTDVIS00001", "UTIS0000001"] { add("cv-certificate", file(TestFixtures.url("cvc/\(name).cvcert"))) }
        for name in ["faces/face-jpeg.jpg", "faces/face-jpeg2000.jp2", "faces/face-drawn.jpg"] { add("image", file(TestFixtures.url(name))) }
        let bridge = TestFixtures.url("bridge")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: bridge.path)) ?? [] where name.hasSuffix(".json") {
            add("bridge-message", file(bridge.appendingPathComponent(name)))
        }
        add("bridge-message", Array(#"{"id":"1","action":"nfc.read","payload":{"data":{"accessKey":{"can":"123456"}}}}"#.utf8))
        add("configuration", file(TestFixtures.packageRoot.appendingPathComponent("packaging/debian/gbgbridge.conf")))
        add("configuration", Array("port: 8450\ntrust: [/etc/gbgbridge/trust]\nkiosk: https://journey.example/\nread-timeout: 30\n".utf8))
        // MRZ text: ICAO's specimens.
        for text in ["P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10",
                     "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<",
                     "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<\nD231458907UTO7408122F1204159<<<<<<<6"] { add("mrz-text", Array(text.utf8)) }
        // Secure messaging: protected answers as chips send them (DO87, DO99, DO8E).
        add("secure-messaging", FuzzTarget.hex("990290008E08FA855A5D4C50A8ED9000"))
        add("secure-messaging", FuzzTarget.hex("8709019FF0EC34F9922651990290008E08AD55CC17140B2DED9000"))
        // PN532 frames as libnfc sends them: GetFirmwareVersion, SAMConfiguration, InListPassiveTarget, InDataExchange.
        for frame in ["0000FF02FED4022A00", "0000FF05FBD4140114010200", "0000FF04FCD44A0100E100", "0000FF0AF6D4400100A4040C0000000000"] {
            add("pn532", FuzzTarget.hex(frame))
        }
        // Real-world data, when it is beside the checkout.
        if TestFixtures.sharedFixturesAvailable {
            let shared = TestFixtures.shared
            func each(_ folder: String, _ body: (URL) -> Void) {
                let url = shared.appendingPathComponent(folder)
                for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] { body(url.appendingPathComponent(name)) }
            }
            each("real-sod") { url in add("ef-sod", file(url)); add("passive-authentication", file(url)); add("security-infos", file(url)) }
            each("trust") { add("trust-file", file($0)) }
            each("dg2") { url in url.pathExtension == "bin" ? add("dg2", file(url)) : add("image", file(url)) }
            each("lds/bsi2008") { url in
                let name = url.lastPathComponent
                if name.contains("Datagroup3") || name.contains("Datagroup4") { add("biometrics", file(url)) }
                if name.contains("Datagroup14") { add("security-infos", file(url)) }
                if name.contains("Datagroup15") { add("dg15", file(url)) }
                if name.contains("EF_SOD") { add("ef-sod", file(url)) }
            }
        }
        // Evidence as a read writes it (the passports' files, verified offline), and DG7.
        for passport in passports.prefix(2) {
            var files: [LDSFile: [UInt8]] = [:]
            for (fid, content) in passport.applicationFiles {
                if fid == 0x011E { files[.com] = content } else if fid == 0x011D { files[.sod] = content }
                else if (0x0101...0x0110).contains(fid) { files[.dataGroup(Int(fid - 0x0100))] = content }
            }
            let result = PassportReadResult.offline(files: files, trustStore: TestFixtures.testTrustStore)
            add("evidence", (try? JSONEncoder().encode(ChipEvidence(result))).map(Array.init))
        }
        add("evidence", Array(#"{"chip":{"lds":[]},"auth":[]}"#.utf8))
        if let face = file(TestFixtures.url("faces/face-jpeg.jpg")) {
            add("dg7", BERTLV.encode(tag: 0x67, value: BERTLV.encode(tag: 0x02, value: [1]) + BERTLV.encode(tag: 0x5F43, value: face)))
        }
        // mdoc: the emulated holder's messages and the Annex D vectors where they are.
        addMdocSeeds(add)
        var counts: [String: Int] = [:]
        for (target, inputs) in seeds {
            let folder = directory.appendingPathComponent(target)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (index, input) in inputs.enumerated() {
                try Data(input).write(to: folder.appendingPathComponent("seed-\(index)"))
            }
            counts[target] = inputs.count
        }
        return counts
    }
}
