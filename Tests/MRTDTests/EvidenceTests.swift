import Foundation
import MRTD
import MRTDCrypto
import MRTDEmulator
import SmartCard
import TestSupport
import Testing

/// Chip evidence (issue: zero-trust kiosk): what a backend receives and what it can check itself.
@Suite("Chip evidence and the offline EvidenceVerifier")
struct EvidenceTests {
    static let trust = TestFixtures.testTrustStore
    /// BAC and PACE, RSA and ECDSA AA, CA or none: every fixture passport and three field profiles.
    static let passports = TestFixtures.passportNames + TestFixtures.pacePassportNames
        + ["utopia-demo", "field/hk-passport-2025", "field/fi-idcard-2023", "field/us-passport-2021"]
    static let challenge: [UInt8] = [0x4B, 0x10, 0x7E, 0x02, 0xC9, 0x55, 0xA0, 0x31]

    static func read(_ name: String, challenge: [UInt8]? = Self.challenge) async throws -> PassportReadResult {
        let description = try TestFixtures.description(name)
        let chip = VirtualPassportChip(passport: try TestFixtures.passport(name))
        let backend = EmulatedReaderBackend(chip: chip)
        var options = ReadOptions.forTest(trustStore: trust)
        options.activeAuthenticationChallenge = challenge
        return try await PassportReader(connection: try await backend.connect(reader: backend.readerName),
                                        accessKey: try AccessKey.mrz(description.mrz.lines.joined(separator: "\n")), options: options).read()
    }

    static func decoded(_ evidence: ChipEvidence) -> [String: [UInt8]] {
        Dictionary(uniqueKeysWithValues: evidence.chip.lds.map { ($0.name, Array(Data(base64Encoded: $0.data)!)) })
    }

    @Test("the files are the chip's bytes, named as GBG's document object names them, and hash to EF.SOD's values", arguments: passports)
    func filesHashToTheSOD(name: String) async throws {
        let result = try await Self.read(name)
        let evidence = ChipEvidence(result)
        let files = Self.decoded(evidence)
        #expect(Set(files.keys).isSubset(of: ["EF.COM", "EF.SOD", "EF.CardAccess", "EF.CardSecurity"] + (1...16).map { "DG\($0)" }))
        for (file, bytes) in result.files where file != .atrInfo { #expect(files[file.name] == bytes, "\(name) \(file.name)") }
        let sod = try SecurityObject(bytes: try #require(files["EF.SOD"]))
        for (number, hash) in sod.dataGroupHashes where result.absent[.dataGroup(number)] != .protected {
            #expect(sod.digestAlgorithm.hash(try #require(files["DG\(number)"], "\(name): DG\(number)")) == hash, "\(name) DG\(number)")
        }
        #expect(evidence.mrz == result.dg1?.mrz.text)
        let types = evidence.chip.auth.map(\.type)
        #expect(types == ["ACCESS_CONTROL", "PASSIVE_AUTHENTICATION", "CHIP_AUTHENTICATION", "ACTIVE_AUTHENTICATION"])
        #expect(evidence.chip.auth[0].detail == (result.accessControl == "PACE" ? result.paceProtocol : "BAC"))
        #expect(evidence.chip.auth[1].result == "PASSED")
        #expect(evidence.chip.auth[2].result == (result.chip.status == .valid ? "PASSED" : "NOT_SUPPORTED"))
    }

    @Test("AA: the chip signed the backend's challenge; another challenge, a changed signature or a replay fail",
          arguments: passports.filter { (try? TestFixtures.description($0).activeAuthentication) != nil })
    func activeAuthentication(name: String) async throws {
        let evidence = ChipEvidence(try await Self.read(name))
        let exchange = try #require(evidence.chip.activeAuthentication)
        #expect(exchange.challenge == Data(Self.challenge).base64EncodedString())
        #expect(evidence.chip.auth[3].result == "PASSED" && evidence.chip.auth[3].detail.contains("the backend's"))
        let verifier = EvidenceVerifier(trustStore: Self.trust)
        let good = try verifier.verify(evidence, challenge: Self.challenge)
        #expect(good.active.status == .valid, "\(good.active.detail)")
        #expect(good.passiveOutcome.status == .valid)
        #expect(good.chip.status == .notChecked)
        // Another nonce than the backend's: a replayed answer.
        var other = Self.challenge
        other[7] ^= 1
        #expect(try verifier.verify(evidence, challenge: other).active.status == .invalid)
        // The evidence's challenge changed to the backend's new one, the old signature kept.
        var replayed = evidence
        replayed.chip.activeAuthentication?.challenge = Data(other).base64EncodedString()
        #expect(try verifier.verify(replayed, challenge: other).active.status == .invalid)
        // A changed signature.
        var forged = evidence
        var signature = Array(Data(base64Encoded: exchange.signature)!)
        signature[signature.count / 2] ^= 0x01
        forged.chip.activeAuthentication?.signature = Data(signature).base64EncodedString()
        #expect(try verifier.verify(forged, challenge: Self.challenge).active.status == .invalid)
        // The exchange left out although DG15 is there.
        var stripped = evidence
        stripped.chip.activeAuthentication = nil
        #expect(try verifier.verify(stripped, challenge: Self.challenge).active.status == .invalid)
    }

    @Test("without the backend's challenge the host picks a random one, and says so", arguments: ["utopia-td3-pace"])
    func randomChallenge(name: String) async throws {
        let evidence = ChipEvidence(try await Self.read(name, challenge: nil))
        #expect(evidence.chip.auth[3].detail.contains("random"))
        let result = try EvidenceVerifier(trustStore: Self.trust).verify(evidence)
        #expect(result.active.status == .valid)
        #expect(result.active.detail.contains("not the backend's"))
    }

    @Test("one changed byte in any signed file makes offline passive authentication invalid", arguments: passports)
    func tamperedFile(name: String) async throws {
        let evidence = ChipEvidence(try await Self.read(name))
        let verifier = EvidenceVerifier(trustStore: Self.trust)
        #expect(try verifier.verify(evidence).passiveOutcome.status == .valid)
        for (index, file) in evidence.chip.lds.enumerated() where file.name == "EF.SOD" || file.name.hasPrefix("DG") {
            var bytes = Array(Data(base64Encoded: file.data)!)
            bytes[bytes.count - 3] ^= 0x20
            var tampered = evidence
            tampered.chip.lds[index].data = Data(bytes).base64EncodedString()
            let result = try verifier.verify(tampered)
            #expect(result.passiveOutcome.status == .invalid, "\(name) \(file.name): \(result.passiveOutcome.detail)")
        }
    }

    @Test("evidence without the test CSCA in the backend's trust store is untrusted, not valid")
    func untrusted() async throws {
        let evidence = ChipEvidence(try await Self.read("utopia-td3-jpeg"))
        #expect(try EvidenceVerifier(trustStore: TrustStore()).verify(evidence).passiveOutcome.status == .untrusted)
    }

    @Test("malformed evidence is a typed error: unknown names, bad base64, no EF.SOD, a challenge of the wrong size")
    func malformed() async throws {
        let evidence = ChipEvidence(try await Self.read("utopia-td3-pace"))
        let verifier = EvidenceVerifier(trustStore: Self.trust)
        var unknown = evidence
        unknown.chip.lds.append(.init(name: "DG99", data: ""))
        var notBase64 = evidence
        notBase64.chip.lds[0].data = "***"
        var noSOD = evidence
        noSOD.chip.lds.removeAll { $0.name == "EF.SOD" }
        var shortChallenge = evidence
        shortChallenge.chip.activeAuthentication?.challenge = Data([1, 2, 3]).base64EncodedString()
        for broken in [unknown, notBase64, noSOD, shortChallenge] {
            #expect { _ = try verifier.verify(broken) } throws: { ($0 as? MRTDError)?.code == .invalidEvidence }
        }
    }

    @Test("the evidence JSON has exactly the documented shape and round-trips")
    func json() async throws {
        let evidence = ChipEvidence(try await Self.read("utopia-demo"))
        let data = try JSONEncoder().encode(evidence)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["mrz", "chip"])
        let chip = try #require(object["chip"] as? [String: Any])
        #expect(Set(chip.keys) == ["lds", "auth", "activeAuthentication"])
        let aa = try #require(chip["activeAuthentication"] as? [String: Any])
        #expect(Set(aa.keys) == ["challenge", "signature"])
        #expect(try JSONDecoder().decode(ChipEvidence.self, from: data) == evidence)
        // As a backend receives it: the evidence alone, or nfc.read's data carrying it.
        #expect(try ChipEvidence(json: data) == evidence)
        let wrapped = try JSONSerialization.data(withJSONObject: ["accessControl": "PACE", "evidence": object])
        #expect(try ChipEvidence(json: wrapped) == evidence)
        for broken in ["[]", "not json", #"{"chip":{"lds":[]}}"#, #"{"mrz":"x","chip":{"lds":"DG1","auth":[]}}"#] {
            #expect { _ = try ChipEvidence(json: Data(broken.utf8)) } throws: { ($0 as? MRTDError)?.code == .invalidEvidence }
        }
    }
}

/// The worked example of Docs/server-side-verification.md (Python with `cryptography`), run as a
/// backend would run it: independent code, written from ICAO 9303 and ISO 9796-2, not from ours.
@Suite("Evidence checked by the documented Python backend example",
       .enabled(if: PythonBackend.available, "needs python3 with the cryptography package (scripts/install-deps.sh installs python3-cryptography)"))
struct PythonBackendTests {
    @Test("the Python example passes genuine evidence and fails a replay, a changed file and a changed signature",
          arguments: ["utopia-td3-jpeg", "utopia-td3-pace", "utopia-id-pace-only", "utopia-demo", "field/ph-passport-2020", "field/sg-passport-2023"])
    func pythonVerifies(name: String) async throws {
        let evidence = ChipEvidence(try await EvidenceTests.read(name))
        let challenge = Data(EvidenceTests.challenge).base64EncodedString()
        let good = try PythonBackend.run(evidence, ["--challenge", challenge, "--csca", TestFixtures.url("pki/csca.cert.pem").path])
        #expect(good.status == 0, "\(name): \(good.standardOutput) \(good.standardError)")
        let verdict = try #require(try JSONSerialization.jsonObject(with: Data(good.standardOutput.utf8)) as? [String: Any])
        #expect((verdict["passive"] as? [String: Any])?["result"] as? String == "PASSED")
        let hasAA = evidence.chip.activeAuthentication != nil
        #expect((verdict["active"] as? [String: Any])?["result"] as? String == (hasAA ? "PASSED" : "NOT_SUPPORTED"))
        if hasAA {
            var other = EvidenceTests.challenge
            other[0] ^= 0xFF
            #expect(try PythonBackend.run(evidence, ["--challenge", Data(other).base64EncodedString()]).status == 1, "\(name): replay")
            var forged = evidence
            var signature = Array(Data(base64Encoded: evidence.chip.activeAuthentication!.signature)!)
            signature[3] ^= 0x40
            forged.chip.activeAuthentication?.signature = Data(signature).base64EncodedString()
            #expect(try PythonBackend.run(forged, ["--challenge", challenge]).status == 1, "\(name): forged signature")
        }
        var tampered = evidence
        let index = try #require(tampered.chip.lds.firstIndex { $0.name == "DG1" })
        var bytes = Array(Data(base64Encoded: tampered.chip.lds[index].data)!)
        bytes[bytes.count - 2] ^= 0x01
        tampered.chip.lds[index].data = Data(bytes).base64EncodedString()
        #expect(try PythonBackend.run(tampered, []).status == 1, "\(name): changed DG1")
    }
}

enum PythonBackend {
    static let script = TestFixtures.packageRoot.appendingPathComponent("Docs/examples/verify_evidence.py").path

    /// Debian's python3 (with python3-cryptography) where it is installed, else the first on PATH.
    static let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"

    static let available: Bool = {
        guard let outcome = try? syncRun("/usr/bin/env", [python, "-c", "import cryptography"]) else { return false }
        return outcome == 0
    }()

    static func syncRun(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    static func run(_ evidence: ChipEvidence, _ arguments: [String]) throws -> (status: Int32, standardOutput: String, standardError: String) {
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("evidence-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONEncoder().encode(evidence).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, script, file.path] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: error, as: UTF8.self))
    }
}
