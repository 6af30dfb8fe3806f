import Biometrics
import CVCertificates
import Foundation
import MRTD
import MRTDCrypto
import MRTDEmulator
import SmartCard
import TestSupport
import Synchronization
import Testing

/// Terminal Authentication (EAC v1) against the emulated EAC chip, with the CVCA → DV → IS chain
/// OpenPACE's cvc-create made (Fixtures/cvc): DG3/DG4 open with the right chain and key, and each
/// refusal — no chain to the chip's CVCA, an expired certificate, a wrong key, no DG3 rights, no
/// Chip Authentication — is a typed outcome while the other data groups are still read.
@Suite("Terminal Authentication (EAC v1)")
struct TerminalAuthenticationTests {
    static func cvc(_ name: String) throws -> CVCertificate {
        try CVCertificate(bytes: [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(name).cvcert"))))
    }

    static func key(_ name: String) throws -> PrivateKey {
        try PrivateKey(bytes: [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(name).pkcs8"))))
    }

    /// utopia-demo (PACE, Chip Authentication, AA) with DG3/DG4 behind EAC, trusting UTCVCA00001.
    static func chip(passport name: String = "utopia-demo", date: String = "261124", trustPoints: [CVCertificate]? = nil) throws -> VirtualPassportChip {
        var description = try TestFixtures.description(name)
        description.biometrics = true
        var passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports/\(name)").deletingLastPathComponent(),
                                            signer: try TestFixtures.documentSigner())
        passport.eac = EACConfiguration(trustPoints: try trustPoints ?? [cvc("UTCVCA00001")], date: try #require(CVDate(date)))
        return VirtualPassportChip(passport: passport)
    }

    /// A CVCA of its own (brainpoolP256r1, DG3+DG4, valid 2026–2040) and its key.
    static func selfSignedCVCA(_ reference: String, from: String = "260101") throws -> (certificate: CVCertificate, key: PrivateKey) {
        let key = try PrivateKey.generateEC(curveName: "brainpoolP256r1")
        var certificate = CVCertificate(authorityReference: reference,
                                        publicKey: try CVPublicKey(key: key, algorithm: .ecdsaSHA256, withDomainParameters: true),
                                        holderReference: reference, authorization: .inspectionSystem(role: .cvca, readDG3: true, readDG4: true),
                                        effectiveDate: try #require(CVDate(from)), expirationDate: try #require(CVDate("401231")))
        try certificate.sign(with: key, algorithm: .ecdsaSHA256)
        return (certificate, key)
    }

    static func credentials(terminal: CVCertificate? = nil, key: PrivateKey? = nil) throws -> TerminalCredentials {
        try TerminalCredentials(certificates: [try cvc("UTDVIS00001"), try terminal ?? cvc("UTIS0000001")],
                                signer: PrivateKeySigner(key: try key ?? Self.key("UTIS0000001")))
    }

    static func read(_ chip: VirtualPassportChip, passport: String = "utopia-demo", credentials: TerminalCredentials?,
                     dataGroups: [Int]? = nil) async throws -> PassportReadResult {
        var options = ReadOptions.forTest(dataGroups: dataGroups, trustStore: TestFixtures.testTrustStore)
        options.terminal = credentials
        return try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try TestFixtures.accessKey(passport),
                                        options: options).read()
    }

    @Test func aValidChainOpensDG3AndDG4() async throws {
        let chip = try Self.chip()
        let result = try await Self.read(chip, credentials: try Self.credentials())
        #expect(result.terminal.status == .valid, "\(result.terminal.detail)")
        #expect(result.terminal.detail.contains("UTIS0000001") && result.terminal.detail.contains("DG3 and DG4"))
        #expect(result.files[.dataGroup(3)]?.first == 0x63 && result.files[.dataGroup(4)]?.first == 0x76)
        #expect(result.files[.cvca] != nil)
        #expect(result.passiveOutcome.status == .valid, "DG3 and DG4 are hashed in EF.SOD: \(result.passiveOutcome.detail)")
        #expect(result.chip.status == .valid)
        #expect(result.steps.contains { $0.name == "terminal authentication" && $0.outcome == "done" })
        // The synthesised records parse as ISO/IEC 19794-4 and -6.
        let fingers = try BiometricDataGroup(bytes: try #require(result.files[.dataGroup(3)]))
        #expect(fingers.images.map(\.positionName) == ["right index finger", "left index finger"])
        #expect(fingers.images.allSatisfy { $0.format == "raw" && $0.width == 64 && $0.data.count == 64 * 64 })
        let irises = try BiometricDataGroup(bytes: try #require(result.files[.dataGroup(4)]))
        #expect(irises.images.map(\.positionName) == ["right eye", "left eye"] && irises.unparsed.isEmpty)
    }

    @Test func withoutCredentialsDG3AndDG4AreProtectedAndTheRestIsRead() async throws {
        let result = try await Self.read(try Self.chip(), credentials: nil)
        #expect(result.terminal.status == .notChecked)
        #expect(result.absent[.dataGroup(3)] == .protected && result.absent[.dataGroup(4)] == .protected)
        #expect(result.files[.dataGroup(1)] != nil && result.files[.dataGroup(2)] != nil)
    }

    @Test func aChainToAnotherCVCAIsRefused() async throws {
        // The chip trusts only a CVCA of its own; our chain leads to UTCVCA00001.
        let other = try Self.selfSignedCVCA("ZZCVCA00001").certificate
        let result = try await Self.read(try Self.chip(trustPoints: [other]), credentials: try Self.credentials())
        #expect(result.terminal.status == .invalid)
        #expect(result.terminal.detail.contains("ZZCVCA00001"), "\(result.terminal.detail)")
        #expect(result.absent[.dataGroup(3)] == .protected && result.files[.dataGroup(2)] != nil)
    }

    @Test func anExpiredTerminalCertificateIsRefusedByTheChip() async throws {
        // The chip's date is past the IS certificate's expiry (2036-12-31).
        let result = try await Self.read(try Self.chip(date: "370101"), credentials: try Self.credentials())
        #expect(result.terminal.status == .invalid)
        #expect(result.terminal.detail.contains("PSO:Verify Certificate"), "\(result.terminal.detail)")
        #expect(result.absent[.dataGroup(3)] == .protected && result.files[.dataGroup(1)] != nil)
    }

    @Test func aWrongTerminalKeyIsRefusedAtExternalAuthenticate() async throws {
        let result = try await Self.read(try Self.chip(), credentials: try Self.credentials(key: try Self.key("UTDVIS00001")))
        #expect(result.terminal.status == .invalid)
        #expect(result.terminal.detail.contains("EXTERNAL AUTHENTICATE"), "\(result.terminal.detail)")
        #expect(result.absent[.dataGroup(3)] == .protected && result.files[.dataGroup(2)] != nil)
    }

    @Test func aTerminalWithoutFingerRightsGetsOnlyDG4() async throws {
        let dvKey = try Self.key("UTDVIS00001")
        let terminalKey = try PrivateKey.generateEC(curveName: "brainpoolP256r1")
        var irisOnly = CVCertificate(authorityReference: "UTDVIS00001",
                                     publicKey: try CVPublicKey(key: terminalKey, algorithm: .ecdsaSHA256, withDomainParameters: false),
                                     holderReference: "UTISIRIS0001", authorization: .inspectionSystem(role: .terminal, readDG3: false, readDG4: true),
                                     effectiveDate: try #require(CVDate("261101")), expirationDate: try #require(CVDate("301231")))
        try irisOnly.sign(with: dvKey, algorithm: .ecdsaSHA256)
        let result = try await Self.read(try Self.chip(), credentials: try Self.credentials(terminal: irisOnly, key: terminalKey))
        #expect(result.terminal.status == .valid, "\(result.terminal.detail)")
        #expect(result.absent[.dataGroup(3)] == .protected)
        #expect(result.files[.dataGroup(4)] != nil)
    }

    @Test func withoutChipAuthenticationThereIsNoTerminalAuthentication() async throws {
        var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
        options.verifyChip = false
        options.terminal = try Self.credentials()
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: try Self.chip()),
                                              accessKey: try TestFixtures.accessKey("utopia-demo"), options: options).read()
        #expect(result.terminal.status == .invalid)
        #expect(result.terminal.detail.contains("needs Chip Authentication"), "\(result.terminal.detail)")
        #expect(result.absent[.dataGroup(3)] == .protected && result.files[.dataGroup(1)] != nil)
    }

    /// The EU documents among the field profiles carry DG3/DG4 behind EAC. DE passports do PACE-CAM
    /// and offer Chip Authentication too (TA v1 signs CA's ephemeral key: CA runs after PACE-CAM);
    /// FI documents do PACE-CAM only (TA signs the terminal's PACE key); the others PACE-GM + CA.
    @Test(arguments: ["field/de-passport-2023", "field/fi-passport-2024", "field/fi-idcard-2023", "field/at-passport-2023",
                      "field/fr-passport-2017", "field/fr-idcard-2024", "field/nl-passport-2025", "field/pt-passport-2026"])
    func euFieldProfilesOpenDG3AndDG4(profile: String) async throws {
        #expect(try TestFixtures.description(profile).biometrics == true, "an EU document carries fingerprints")
        let chip = try Self.chip(passport: profile)
        let result = try await Self.read(chip, passport: profile, credentials: try Self.credentials())
        #expect(result.terminal.status == .valid, "\(profile): \(result.terminal.detail)")
        #expect(result.files[.dataGroup(3)] != nil && result.files[.dataGroup(4)] != nil, "\(profile): \(result.absent)")
        #expect(result.chip.status == .valid, "\(profile): \(result.chip.detail)")
        #expect(result.passiveOutcome.status == .valid, "\(profile): \(result.passiveOutcome.detail)")
        // Without credentials the same chip keeps them closed (6982), the rest is read.
        let closed = try await Self.read(try Self.chip(passport: profile), passport: profile, credentials: nil)
        #expect(closed.absent[.dataGroup(3)] == .protected && closed.absent[.dataGroup(4)] == .protected)
        #expect(closed.files[.dataGroup(1)] != nil)
    }

    @Test func afterPACECAMWithChipAuthenticationOfferedCAIsRunForTA() async throws {
        let profile = "field/de-passport-2023"
        let chip = try Self.chip(passport: profile)
        let lines = Mutex<[String]>([])
        var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
        options.terminal = try Self.credentials()
        options.trace = APDUTrace { line in lines.withLock { $0.append(line) } }
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try TestFixtures.accessKey(profile),
                                              options: options).read()
        #expect(result.terminal.status == .valid, "\(result.terminal.detail)")
        #expect(result.chip.detail.contains("PACE-CAM"), "the chip was proved by PACE-CAM: \(result.chip.detail)")
        let steps = lines.withLock { $0 }.compactMap { line -> String? in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["step"] as? String
        }
        let ca = try #require(steps.lastIndex(of: "CA"), "Chip Authentication ran: \(Set(steps))")
        let ta = try #require(steps.firstIndex(of: "TA"))
        #expect(ca < ta)
    }

    @Test func withoutATrustPointAnEACChipKeepsDG3Closed() async throws {
        // A biometrics chip with no EAC configuration: no terminal can authenticate; DG3/DG4 stay 6982.
        var description = try TestFixtures.description("field/de-passport-2023")
        description.biometrics = true
        let passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports/field"),
                                            signer: try TestFixtures.documentSigner())
        let result = try await Self.read(VirtualPassportChip(passport: passport), passport: "field/de-passport-2023", credentials: try Self.credentials())
        #expect(result.terminal.status == .invalid, "\(result.terminal.detail)")
        #expect(result.absent[.dataGroup(3)] == .protected && result.files[.dataGroup(1)] != nil)
    }

    /// A chip without extended length and certificates longer than a protected short APDU (RSA
    /// 3072: ~0.8 KB for the CVCA, ~0.4 KB for DV and IS): PSO:Verify Certificate goes as a
    /// command chain (CLA 1C … 1C, then 0C), and the chip assembles and verifies each certificate.
    @Test func longCertificatesGoAsCommandChainsToAShortAPDUChip() async throws {
        func certificate(_ key: PrivateKey, issuer: PrivateKey, car: String, chr: String, role: CertificateHolderAuthorization.Role) throws -> CVCertificate {
            var certificate = CVCertificate(authorityReference: car, publicKey: try CVPublicKey(key: key, algorithm: .rsaPSSSHA256, withDomainParameters: false),
                                            holderReference: chr, authorization: .inspectionSystem(role: role, readDG3: true, readDG4: true),
                                            effectiveDate: try #require(CVDate("260101")), expirationDate: try #require(CVDate("301231")))
            try certificate.sign(with: issuer, algorithm: .rsaPSSSHA256)
            return certificate
        }
        let (cvcaKey, dvKey, isKey) = (try PrivateKey.generateRSA(bits: 3072), try PrivateKey.generateRSA(bits: 3072), try PrivateKey.generateRSA(bits: 3072))
        let cvca = try certificate(cvcaKey, issuer: cvcaKey, car: "UTRSACVCA001", chr: "UTRSACVCA001", role: .cvca)
        let dv = try certificate(dvKey, issuer: cvcaKey, car: "UTRSACVCA001", chr: "UTRSADV00001", role: .dvDomestic)
        let terminal = try certificate(isKey, issuer: dvKey, car: "UTRSADV00001", chr: "UTRSAIS00001", role: .terminal)
        #expect(dv.verifyCertificateData.count > 255 && terminal.verifyCertificateData.count > 255)

        var description = try TestFixtures.description("utopia-demo")
        description.biometrics = true
        description.chip = PassportDescription.ChipSettings(extendedLength: false)
        var passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"), signer: try TestFixtures.documentSigner())
        passport.eac = EACConfiguration(trustPoints: [cvca], date: try #require(CVDate("261124")))
        let lines = Mutex<[String]>([])
        var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
        options.terminal = try TerminalCredentials(certificates: [dv, terminal], signer: PrivateKeySigner(key: isKey))
        options.trace = APDUTrace { line in lines.withLock { $0.append(line) } }
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: VirtualPassportChip(passport: passport)),
                                              accessKey: try TestFixtures.accessKey("utopia-demo"), options: options).read()
        #expect(result.terminal.status == .valid, "\(result.terminal.detail)")
        #expect(result.files[.dataGroup(3)] != nil && result.files[.dataGroup(4)] != nil)
        #expect(result.statistics.extendedLength == false)
        let commands = lines.withLock { $0 }.compactMap { line -> String? in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["command"] as? String
        }
        let chained = commands.filter { $0.hasPrefix("1C2A00BE") }.count
        let last = commands.filter { $0.hasPrefix("0C2A00BE") }.count
        #expect(last == 2 && chained >= 2, "PSO:Verify Certificate: \(chained) chained links, \(last) final")
        #expect(commands.allSatisfy { $0.count / 2 <= 261 }, "only short APDUs")
    }

    /// One Inspection System key, two terminal certificates: one under the UT chain, one under a
    /// foreign state's (ZZ: its CVCA issued our DV a certificate, our DV issued the IS one). Each
    /// state's chip gets the chain to its own CVCA; one set of credentials reads both.
    @Test func oneKeyWithATerminalCertificatePerIssuingState() async throws {
        let (foreignCVCA, foreignCVCAKey) = try Self.selfSignedCVCA("ZZCVCA00001")
        let dvKey = try Self.key("UTDVIS00001")
        var foreignDV = CVCertificate(authorityReference: "ZZCVCA00001",
                                      publicKey: try CVPublicKey(key: dvKey, algorithm: .ecdsaSHA256, withDomainParameters: false),
                                      holderReference: "UTDVZZ00001", authorization: .inspectionSystem(role: .dvForeign, readDG3: true, readDG4: true),
                                      effectiveDate: try #require(CVDate("261101")), expirationDate: try #require(CVDate("301231")))
        try foreignDV.sign(with: foreignCVCAKey, algorithm: .ecdsaSHA256)
        let ourIS = try Self.cvc("UTIS0000001")
        var foreignIS = CVCertificate(authorityReference: "UTDVZZ00001", publicKey: ourIS.publicKey, holderReference: "UTIS0000001",
                                      authorization: .inspectionSystem(role: .terminal, readDG3: true, readDG4: true),
                                      effectiveDate: try #require(CVDate("261101")), expirationDate: try #require(CVDate("291231")))
        try foreignIS.sign(with: dvKey, algorithm: .ecdsaSHA256)
        let credentials = try TerminalCredentials(certificates: [try Self.cvc("UTDVIS00001"), ourIS, foreignDV, foreignIS],
                                                  signer: PrivateKeySigner(key: try Self.key("UTIS0000001")))
        #expect(credentials.terminals.count == 2)
        for (trustPoint, via) in [(try Self.cvc("UTCVCA00001"), "UTCVCA00001"), (foreignCVCA, "ZZCVCA00001")] {
            let result = try await Self.read(try Self.chip(trustPoints: [trustPoint]), credentials: credentials)
            #expect(result.terminal.status == .valid, "\(via): \(result.terminal.detail)")
            #expect(result.terminal.detail.contains("chain from \(via)"), "\(result.terminal.detail)")
            #expect(result.files[.dataGroup(3)] != nil)
        }
    }

    /// A chip with two trust points (EF.CVCA names both) authenticates a chain to the second.
    @Test func aChainToTheSecondTrustPointIsAccepted() async throws {
        let other = try Self.selfSignedCVCA("ZZCVCA00001").certificate
        let chip = try Self.chip(trustPoints: [other, try Self.cvc("UTCVCA00001")])
        let result = try await Self.read(chip, credentials: try Self.credentials())
        #expect(result.terminal.status == .valid, "\(result.terminal.detail)")
        #expect(TerminalAuthenticationProtocol.trustPoints(inCVCA: try #require(result.files[.cvca])) == ["ZZCVCA00001", "UTCVCA00001"])
        #expect(result.files[.dataGroup(3)] != nil)
    }

    /// A chip that still trusts the previous CVCA: the link certificate (old CVCA → new CVCA) goes
    /// first, then the DV and terminal certificates the new CVCA issued; the chip takes the new
    /// CVCA as a trust point. Without the link certificate there is no chain.
    @Test func aLinkCertificateIsSentFirstToAChipThatTrustsTheOldCVCA() async throws {
        let (old, oldKey) = try Self.selfSignedCVCA("UTCVCA00000", from: "240101")
        let current = try Self.cvc("UTCVCA00001")
        var link = CVCertificate(authorityReference: "UTCVCA00000", publicKey: current.publicKey, holderReference: "UTCVCA00001",
                                 authorization: current.authorization, effectiveDate: current.effectiveDate, expirationDate: current.expirationDate)
        try link.sign(with: oldKey, algorithm: .ecdsaSHA256)

        let withoutLink = try await Self.read(try Self.chip(trustPoints: [old]), credentials: try Self.credentials())
        #expect(withoutLink.terminal.status == .invalid && withoutLink.terminal.detail.contains("UTCVCA00000"), "\(withoutLink.terminal.detail)")

        let credentials = try TerminalCredentials(certificates: [link, try Self.cvc("UTDVIS00001"), try Self.cvc("UTIS0000001")],
                                                  signer: PrivateKeySigner(key: try Self.key("UTIS0000001")))
        let chip = try Self.chip(trustPoints: [old])
        let result = try await Self.read(chip, credentials: credentials)
        #expect(result.terminal.status == .valid, "\(result.terminal.detail)")
        #expect(result.terminal.detail.contains("chain from UTCVCA00000, 3 certificates"), "\(result.terminal.detail)")
        #expect(result.files[.dataGroup(3)] != nil && result.files[.dataGroup(4)] != nil)
    }

    @Test("through pcscd + vpcd: a valid chain reads DG3 and DG4")
    func throughPCSCD() async throws {
        let chip = try Self.chip()
        let credentials = try Self.credentials()
        let result = try await PCSCDHarness.withEmulatedCard(chip) { _ in
            var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
            options.terminal = credentials
            let backend = PCSCBackend()
            let connection = try await backend.connect(reader: PCSCDHarness.vpcdReaderName)
            let read = PassportReader(connection: connection, accessKey: try TestFixtures.accessKey("utopia-demo"), options: options)
            let result = try await read.read()
            await read.connection.disconnect()
            return result
        }
        #expect(result.terminal.status == .valid, "\(result.terminal.detail)")
        #expect(result.files[.dataGroup(3)] != nil && result.files[.dataGroup(4)] != nil)
    }
}
