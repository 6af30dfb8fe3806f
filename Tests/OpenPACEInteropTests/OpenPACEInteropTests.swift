import CVCertificates
import Foundation
import LDS
import MRTD
import MRTDCrypto
import MRTDEmulator
import SmartCard
import TestSupport
import Testing

/// One PACE + Chip Authentication configuration of the emulated chip.
struct InteropConfiguration: CustomStringConvertible, Sendable {
    var mapping: String
    var parameterId: Int
    var cipher: String
    var withCAN: Bool

    static let curves: [Int: String] = [12: "P256", 13: "brainpoolP256r1", 16: "brainpoolP384r1", 17: "brainpoolP512r1"]
    static let dhGroups: [Int: String] = [0: "MODP1024/160", 2: "MODP2048/256"]

    var domain: String { Self.curves[parameterId] ?? Self.dhGroups[parameterId] ?? "id \(parameterId)" }
    var chipAuthentication: String {
        Self.dhGroups[parameterId].map { "DH-\($0)-\(cipher)" } ?? "ECDH-\(domain)-\(cipher)"
    }
    var description: String { "PACE-\(mapping) \(domain) \(cipher) with the \(withCAN ? "CAN" : "MRZ") + CA \(chipAuthentication)" }

    /// The Generic Mapping on P-256, brainpoolP256r1/384r1/512r1 and two DH groups, with every
    /// cipher ICAO 9303-11 §9.2.1 allows (3DES, AES-128/192/256); the password alternates MRZ / CAN.
    /// Not here, because OpenPACE 1.1.2 does not implement them as ICAO 9303-11 does (see
    /// Docs/smartcard-and-emulator.md): the Integrated Mapping (OpenPACE has TR-03110 v2.01's
    /// draft mapping, one block cipher call and Icart's encoding, not 9303's pseudo-random function
    /// and point encoding) and the Chip Authentication Mapping (absent from OpenPACE).
    static let all: [InteropConfiguration] = {
        var all: [InteropConfiguration] = []
        for mapping in ["GM"] {
            for parameterId in [12, 13, 16, 17, 0, 2] {
                for cipher in ["AES-128", "AES-192", "AES-256", "3DES"] {
                    all.append(.init(mapping: mapping, parameterId: parameterId, cipher: cipher, withCAN: all.count % 2 == 1))
                }
            }
        }
        // GBG_INTEROP_ONLY=text runs only the configurations whose description contains it.
        if let only = ProcessInfo.processInfo.environment["GBG_INTEROP_ONLY"] { return all.filter { $0.description.contains(only) } }
        return all
    }()

    /// The specimen passport with this configuration.
    func passport() throws -> (EmulatedPassport, PassportDescription) {
        try TestFixtures.pacePassport(mapping: mapping, parameterId: parameterId, cipher: cipher, chipAuthentication: chipAuthentication) {
            if Self.dhGroups[parameterId] != nil {
                // OpenPACE 1.1.2 with OpenSSL 3 dereferences NULL on a DH key whose domain parameters
                // come as X9.42 (p, g, q) in DG14; TR-03110's standardized parameter id it reads.
                $0.chipKeyEncoding = "standardized"
            }
        }
    }

    /// The password as OpenPACE takes it. OpenPACE reads an MRZ password at TD1 offsets (document
    /// number at 5, date of birth at 30, date of expiry at 38): a TD3 MRZ is handed over re-laid
    /// in that shape, with the same fields and check digits.
    func openPACEPassword(_ description: PassportDescription) throws -> OpenPACE.Password {
        if withCAN { return .can(try #require(description.can)) }
        return try Self.openPACEMRZ(description)
    }

    static func openPACEMRZ(_ description: PassportDescription) throws -> OpenPACE.Password {
        if description.mrz.lines.count == 3 { return .mrz(description.mrz.lines.joined()) }
        let line = Array(try #require(description.mrz.lines.last))
        let number = String(line[0..<10]), birth = String(line[13..<20]), expiry = String(line[21..<28])
        let td1 = "I<UTO" + number + String(repeating: "<", count: 15) + birth + "F" + expiry
        return .mrz(td1)
    }

    /// OpenPACE 1.1.2 computes a DH shared secret with OpenSSL's DH_compute_key, which drops
    /// leading zero bytes; TR-03111 (and RFC 2631) keep the length of p, as we do. So about one
    /// DH agreement in 256 (PACE or CA) cannot agree with a 9303 peer: a DH configuration gets up
    /// to three attempts, each with fresh keys (Docs/smartcard-and-emulator.md); ECDH gets one.
    var attempts: Int { Self.dhGroups[parameterId] != nil ? 3 : 1 }

    func accessKey(_ description: PassportDescription) throws -> AccessKey {
        withCAN ? .can(try #require(description.can)) : try AccessKey.mrz(description.mrz.lines.joined(separator: "\n"))
    }
}

@Suite("OpenPACEInteropTests: OpenPACE (libeac) against our emulator and our reader", .serialized)
struct OpenPACEInteropTests {
    static func connect() async throws -> any CardConnection {
        let backend = PCSCBackend()
        let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
        return try await backend.connect(reader: info.name)
    }

    /// A SET OF SecurityInfo without its PACEInfos for the Integrated Mapping (…4.3.x, …4.4.x).
    static func withoutIntegratedMapping(_ set: [UInt8]) throws -> [UInt8] {
        let template = try #require(try OpenPACESecureMessaging.objects(set).first)
        let infos = try OpenPACESecureMessaging.objects(template.value).filter { info in
            guard let oid = try OpenPACESecureMessaging.objects(info.value).first, oid.tag == 0x06 else { return true }
            let pace: [UInt8] = [0x04, 0x00, 0x7F, 0x00, 0x07, 0x02, 0x02, 0x04]
            return !(oid.value.starts(with: pace) && oid.value.count == 10 && (oid.value[8] == 3 || oid.value[8] == 4))
        }
        return OpenPACESecureMessaging.object(0x31, infos.flatMap(\.encoded))
    }

    /// DG14's SET OF SecurityInfo (inside tag 6E).
    static func securityInfos(dg14: [UInt8]) throws -> [UInt8] {
        let template = try #require(try OpenPACESecureMessaging.objects(dg14).first)
        #expect(template.tag == 0x6E)
        return template.value
    }

    @Test("an OpenPACE terminal opens our emulated chip with PACE and Chip Authentication through pcscd + vpcd and reads DG1",
          arguments: InteropConfiguration.all)
    func openPACETerminalReadsOurChip(configuration: InteropConfiguration) async throws {
        let (passport, description) = try configuration.passport()
        let password = try configuration.openPACEPassword(description)
        for attempt in 1...configuration.attempts {
            let chip = VirtualPassportChip(passport: passport)
            do {
                try await PCSCDHarness.withEmulatedCard(chip) { _ in
                    let connection = try await Self.connect()
                    defer { Task { await connection.disconnect() } }
                    let terminal = OpenPACETerminal(connection: connection)
                    let cardAccess = try await terminal.readFile(0x011C)
                    #expect(cardAccess == passport.masterFiles[0x011C])
                    try await terminal.performPACE(cardAccess: cardAccess, index: 0, parameterId: configuration.parameterId,
                                                   tr0301Version201: configuration.mapping == "IM", password: password)
                    try await terminal.expectSuccess(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x0C, data: CardSessionAID.eMRTD), "SELECT eMRTD")
                    #expect(try await terminal.readFile(0x0101) == passport.applicationFiles[0x0101], "DG1 under PACE")
                    let dg14 = try await terminal.readFile(0x010E)
                    try await terminal.performChipAuthentication(securityInfos: try Self.securityInfos(dg14: dg14))
                    #expect(try await terminal.readFile(0x0101) == passport.applicationFiles[0x0101], "DG1 after Chip Authentication")
                }
            } catch where attempt < configuration.attempts {
                continue
            }
            #expect(chip.statistics.paceSuccesses == 1)
            return
        }
    }

    /// Every PACE fixture and field profile offering the Generic Mapping (the mapping OpenPACE
    /// runs as ICAO 9303 defines it).
    static let genericMappingChips: [String] = (TestFixtures.pacePassportNames + FieldProfiles.names.map { "field/\($0)" }).filter {
        (try? TestFixtures.description($0).paceMapping?.uppercased().split(separator: "+").contains("GM")) == true
    }

    @Test("an OpenPACE terminal opens every Generic Mapping fixture and field profile through pcscd + vpcd with the MRZ and reads DG1",
          arguments: genericMappingChips)
    func openPACETerminalReadsEveryProfile(name: String) async throws {
        let description = try TestFixtures.description(name)
        let passport = try TestFixtures.passport(name)
        let chip = VirtualPassportChip(passport: passport)
        let password = try InteropConfiguration.openPACEMRZ(description)
        try await PCSCDHarness.withEmulatedCard(chip) { _ in
            let connection = try await Self.connect()
            defer { Task { await connection.disconnect() } }
            let terminal = OpenPACETerminal(connection: connection)
            // OpenPACE keeps one PACE context per parameter id, the last PACEInfo winning: the GM
            // and IM offers of one group would leave it only the IM. It is handed the GM ones.
            let cardAccess = try Self.withoutIntegratedMapping(try await terminal.readFile(0x011C))
            let eac = try OpenPACE(securityInfos: cardAccess)
            // id-PACE-DH-GM (…4.1.x) or id-PACE-ECDH-GM (…4.2.x).
            let index = try #require(try (0..<eac.paceCount).first { index in
                let oid = try eac.selectPACE(index)
                return oid.count == 10 && (oid[8] == 1 || oid[8] == 2)
            }, "\(name): OpenPACE finds no Generic Mapping in EF.CardAccess")
            try await terminal.performPACE(cardAccess: cardAccess, index: index, parameterId: description.paceParameterId ?? 13,
                                           tr0301Version201: false, password: password)
            try await terminal.expectSuccess(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x0C, data: CardSessionAID.eMRTD), "SELECT eMRTD")
            #expect(try await terminal.readFile(0x0101) == passport.applicationFiles[0x0101], "\(name): DG1")
        }
        #expect(chip.statistics.paceSuccesses == 1)
    }

    @Test("our reader opens a chip whose PACE, CA and secure messaging are OpenPACE's, and verifies the read",
          arguments: InteropConfiguration.all)
    func ourReaderReadsAnOpenPACEChip(configuration: InteropConfiguration) async throws {
        let (passport, description) = try configuration.passport()
        let options = ReadOptions.forTest(verifyActive: false, trustStore: TestFixtures.testTrustStore, accessControl: .paceOnly)
        var read: (PassportReadResult, OpenPACEChip)?
        for attempt in 1...configuration.attempts where read == nil {
            let chip = OpenPACEChip(passport: passport, password: try configuration.openPACEPassword(description),
                                    integratedMapping: configuration.mapping == "IM")
            do {
                let result = try await PassportReader(connection: chip, accessKey: try configuration.accessKey(description), options: options).read()
                // OpenPACE's DH shared secret drops leading zero bytes (see `attempts`): with DH Chip
                // Authentication that shows as keys that do not agree, not as an error. Fresh keys again.
                if attempt < configuration.attempts, result.chip.status != .valid || !chip.problemsSoFar.isEmpty { continue }
                read = (result, chip)
            } catch where attempt < configuration.attempts {
                continue
            } catch {
                Issue.record("\(configuration): \(error); OpenPACE chip: \(chip.problemsSoFar)")
                return
            }
        }
        guard let (result, chip) = read else { return }
        #expect(result.accessControl == "PACE")
        #expect(chip.paceCompleted && chip.chipAuthenticationCompleted, "\(chip.problemsSoFar)")
        #expect(result.chip.status == .valid, "\(result.chip.detail)")
        #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
        #expect(result.files[.dataGroup(1)] == passport.applicationFiles[0x0101])
        #expect(chip.problemsSoFar.isEmpty, "\(chip.problemsSoFar)")
    }

    /// Terminal Authentication judged by OpenPACE: the chip side of TA is libeac's (TA_STEP2 imports
    /// each certificate we send from the CVCA it trusts, TA_STEP4 gives r_PICC, TA_STEP6 checks
    /// our signature over ID_PICC ‖ r_PICC ‖ Comp(PK_PCD) with both compressions its own). A wrong
    /// key and a chain to a CVCA it does not trust are refused by it, and the read goes on.
    @Test("our reader's Terminal Authentication, checked by OpenPACE's TA on the chip side",
          arguments: ["AES-128 brainpoolP256r1", "3DES P-256"])
    func ourTerminalAuthenticationCheckedByOpenPACE(setting: String) async throws {
        let (parameterId, cipher) = setting.hasPrefix("3DES") ? (12, "3DES") : (13, "AES-128")
        let configuration = InteropConfiguration(mapping: "GM", parameterId: parameterId, cipher: cipher, withCAN: false)
        var (passport, description) = try TestFixtures.pacePassport(mapping: "GM", parameterId: parameterId, cipher: cipher,
                                                                     chipAuthentication: configuration.chipAuthentication) { $0.biometrics = true }
        func certificate(_ name: String) throws -> CVCertificate {
            try CVCertificate(bytes: [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(name).cvcert"))))
        }
        func key(_ name: String) throws -> PrivateKey { try PrivateKey(bytes: [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(name).pkcs8")))) }
        passport.eac = EACConfiguration(trustPoints: [try certificate("UTCVCA00001")], date: CVDate(Date()))
        for (signingKey, expectValid) in [("UTIS0000001", true), ("UTDVIS00001", false)] {
            let chip = OpenPACEChip(passport: passport, password: try configuration.openPACEPassword(description), integratedMapping: false)
            var options = ReadOptions.forTest(verifyActive: false, trustStore: TestFixtures.testTrustStore, accessControl: .paceOnly)
            options.terminal = try TerminalCredentials(certificates: [try certificate("UTDVIS00001"), try certificate("UTIS0000001")],
                                                       signer: PrivateKeySigner(key: try key(signingKey)))
            let result = try await PassportReader(connection: chip, accessKey: try configuration.accessKey(description), options: options).read()
            #expect(result.chip.status == .valid, "\(setting): \(result.chip.detail)")
            #expect(chip.certificatesImported == 2, "\(setting): OpenPACE imported \(chip.certificatesImported) certificates; \(chip.problemsSoFar)")
            if expectValid {
                #expect(result.terminal.status == .valid, "\(setting): \(result.terminal.detail); OpenPACE: \(chip.problemsSoFar)")
                #expect(chip.terminalAuthenticated && chip.problemsSoFar.isEmpty, "\(chip.problemsSoFar)")
                #expect(result.files[.dataGroup(3)] == passport.applicationFiles[0x0103] && result.files[.dataGroup(3)] != nil)
                #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
            } else {
                #expect(result.terminal.status == .invalid && result.terminal.detail.contains("EXTERNAL AUTHENTICATE"), "\(result.terminal.detail)")
                #expect(!chip.terminalAuthenticated && result.absent[.dataGroup(3)] == .protected)
                #expect(result.files[.dataGroup(1)] != nil)
            }
        }
    }

    /// Our emulator's chip side of Terminal Authentication, judged by a terminal that is OpenPACE's
    /// through pcscd + vpcd: PACE, DG3 closed, CA, then TA with OpenPACE's TA_STEP5 signature —
    /// DG3 opens; signed with another key, the chip refuses and DG3 stays closed.
    @Test("an OpenPACE terminal performs Terminal Authentication on our emulated chip through pcscd + vpcd")
    func openPACETerminalAuthenticatesToOurChip() async throws {
        let configuration = InteropConfiguration(mapping: "GM", parameterId: 13, cipher: "AES-128", withCAN: false)
        var (passport, description) = try TestFixtures.pacePassport(mapping: "GM", parameterId: 13, cipher: "AES-128",
                                                                     chipAuthentication: configuration.chipAuthentication) { $0.biometrics = true }
        @Sendable func file(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(name)"))) }
        passport.eac = EACConfiguration(trustPoints: [try CVCertificate(bytes: try file("UTCVCA00001.cvcert"))], date: CVDate(Date()))
        let (dg3, dg4) = (passport.applicationFiles[0x0103], passport.applicationFiles[0x0104])
        let chain = [(car: Array("UTCVCA00001".utf8), chr: Array("UTDVIS00001".utf8), certificate: try file("UTDVIS00001.cvcert")),
                     (car: Array("UTDVIS00001".utf8), chr: Array("UTIS0000001".utf8), certificate: try file("UTIS0000001.cvcert"))]
        let password = try configuration.openPACEPassword(description)
        for (keyFile, accepted) in [("UTIS0000001.pkcs8", true), ("UTDVIS00001.pkcs8", false)] {
            let chip = VirtualPassportChip(passport: passport)
            let keyBytes = try file(keyFile)
            let cvca = try file("UTCVCA00001.cvcert")
            try await PCSCDHarness.withEmulatedCard(chip) { _ in
                let connection = try await Self.connect()
                defer { Task { await connection.disconnect() } }
                let terminal = OpenPACETerminal(connection: connection)
                let cardAccess = try await terminal.readFile(0x011C)
                try await terminal.performPACE(cardAccess: cardAccess, index: 0, parameterId: 13, tr0301Version201: false, password: password)
                try await terminal.expectSuccess(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x0C, data: CardSessionAID.eMRTD), "SELECT eMRTD")
                #expect(try await terminal.readFile(0x0103).isEmpty, "DG3 is closed before TA")
                try await terminal.performChipAuthentication(securityInfos: try Self.securityInfos(dg14: try await terminal.readFile(0x010E)))
                let status = try await terminal.performTerminalAuthentication(cvca: cvca, chain: chain, key: keyBytes)
                if accepted {
                    #expect(status == .success, "EXTERNAL AUTHENTICATE: \(status)")
                    #expect(try await terminal.readFile(0x0103) == dg3, "DG3 after TA")
                    #expect(try await terminal.readFile(0x0104) == dg4, "DG4 after TA")
                } else {
                    #expect(status == StatusWord(sw1: 0x63, sw2: 0x00), "a signature by another key: \(status)")
                    #expect(try await terminal.readFile(0x0103).isEmpty, "DG3 stays closed")
                }
            }
        }
    }
}
