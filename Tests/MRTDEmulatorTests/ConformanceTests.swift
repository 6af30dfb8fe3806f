import Foundation
import MRTD
import MRTDCrypto
import MRTDEmulator
import SmartCard
import TestSupport
import TestTraits
import Testing

/// The emulator against the specifications, not against our reader: the files are walked as
/// plain DER and compared with what ICAO 9303 (Parts 10, 11) and BSI TR-03110 (Part 3) require,
/// and the chip is driven with hand-made APDUs.
@Suite("Emulator conformance (ICAO 9303, TR-03110)")
struct EmulatorConformanceTests {
    static let idPKECDH = "0.4.0.127.0.7.2.2.1.2"
    static let standardizedDomainParameters = "0.4.0.127.0.7.1.2"
    static let ecPublicKey = "1.2.840.10045.2.1"
    static let pacePrefix = "0.4.0.127.0.7.2.2.4."

    /// Every fixture that offers PACE: the PACE fixtures and the PACE field profiles.
    static let paceChips: [String] = TestFixtures.pacePassportNames
        + FieldProfiles.all.filter { (try? FieldProfileFixtures.description($0.name).paceMapping) != nil }.map { "field/\($0.name)" }
    static let allChips: [String] = TestFixtures.passportNames + TestFixtures.pacePassportNames + FieldProfiles.names.map { "field/\($0)" }

    static func passport(_ name: String) throws -> EmulatedPassport { try TestFixtures.passport(name) }

    /// The SecurityInfo SEQUENCEs of a SET OF SecurityInfo, as DER.
    static func securityInfos(_ set: [UInt8]) throws -> [[UInt8]] {
        let parsed = try BERTLV.parseSingle(set)
        #expect(parsed.tag == 0x31)
        return try parsed.children().map { $0.encoded() }
    }

    static func oid(of info: [UInt8]) throws -> String? {
        let fields = try BERTLV.parseSingle(info).children()
        return fields.first.flatMap { $0.tag == 0x06 ? DER.oidString($0.value) : nil }
    }

    /// DG14's SET OF SecurityInfo (inside tag 6E).
    static func dg14Infos(_ passport: EmulatedPassport) throws -> [[UInt8]] {
        let dg14 = try #require(passport.applicationFiles[EmulatedPassport.dataGroupFID(14)])
        let outer = try BERTLV.parseSingle(dg14)
        #expect(outer.tag == 0x6E)
        return try securityInfos(outer.value)
    }

    /// EF.CardSecurity's SET OF SecurityInfo (the eContent of its SignedData, id-SecurityObject).
    static func cardSecurityInfos(_ passport: EmulatedPassport) throws -> [[UInt8]]? {
        guard let file = passport.masterFiles[0x011D] else { return nil }
        let signed = try CMSSignedData(bytes: file)
        #expect(signed.contentType == "0.4.0.127.0.7.3.2.1")
        return try securityInfos(try #require(signed.content))
    }

    @Test("DG14 repeats every SecurityInfo of EF.CardAccess (ICAO 9303-11 §9.2: EF.CardAccess's infos are also in DG14)",
          arguments: paceChips)
    func dg14ContainsCardAccess(name: String) throws {
        let passport = try Self.passport(name)
        let cardAccess = try Self.securityInfos(try #require(passport.masterFiles[0x011C]))
        let dg14 = try Self.dg14Infos(passport)
        for info in cardAccess where try Self.oid(of: info)?.hasPrefix(Self.pacePrefix) == true {
            let oid = try Self.oid(of: info) ?? "?"
            #expect(dg14.contains(info), "\(name): DG14 lacks \(oid)")
        }
        // PACEInfo (TR-03110-3 A.1.1.1): version 2, a standardised parameter id.
        for info in cardAccess where try Self.oid(of: info)?.hasPrefix(Self.pacePrefix) == true {
            let fields = try BERTLV.parseSingle(info).children()
            #expect(fields.count == 3 && fields[1].value == [0x02] && fields[2].tag == 0x02, "\(name)")
        }
    }

    @Test("EF.CardSecurity carries chip keys as id-PK-ECDH with standardizedDomainParameters and the PACE parameter id (as the German eID)",
          arguments: paceChips)
    func cardSecurityKeys(name: String) throws {
        let passport = try Self.passport(name)
        guard let infos = try Self.cardSecurityInfos(passport) else { return }
        let keys = try infos.filter { try Self.oid(of: $0) == Self.idPKECDH }
        #expect(!keys.isEmpty, "\(name): EF.CardSecurity without a ChipAuthenticationPublicKeyInfo")
        let parameterId = try #require(passport.pace?.parameterId)
        for key in keys {
            let fields = try BERTLV.parseSingle(key).children()
            let spki = try fields[1].children()
            let algorithm = try spki[0].children()
            #expect(DER.oidString(algorithm[0].value) == Self.standardizedDomainParameters)
            #expect(algorithm[1].tag == 0x02 && algorithm[1].value == [UInt8(parameterId)])
            #expect(spki[1].tag == 0x03 && spki[1].value.first == 0x00 && spki[1].value.dropFirst().first == 0x04)
        }
        // Every PACEInfo of EF.CardAccess is in the signed EF.CardSecurity too (TR-03110-3 A.1.2: EF.CardSecurity holds every SecurityInfo of EF.CardAccess).
        let cardAccess = try Self.securityInfos(try #require(passport.masterFiles[0x011C]))
        for info in cardAccess where try Self.oid(of: info)?.hasPrefix(Self.pacePrefix) == true {
            #expect(infos.contains(info), "\(name)")
        }
    }

    /// A SecurityInfo's shape: its OID, the integers after it, and for a key info the OID and
    /// parameter of its AlgorithmIdentifier (no key bytes).
    static func shape(_ info: [UInt8]) throws -> String {
        let fields = try BERTLV.parseSingle(info).children()
        return try fields.map { field -> String in
            switch field.tag {
            case 0x06: return DER.oidString(field.value) ?? "?"
            case 0x02: return "int \(field.value.reduce(0) { $0 << 8 | Int($1) })"
            case 0x30:
                // A SubjectPublicKeyInfo, or an AlgorithmIdentifier itself (ChipAuthenticationDomainParameterInfo).
                let children = try field.children()
                let algorithm = children[0].tag == 0x06 ? children : try children[0].children()
                return "spki(\(DER.oidString(algorithm[0].value) ?? "?"), \(algorithm[1].tag == 0x02 ? "int \(algorithm[1].value.reduce(0) { $0 << 8 | Int($1) })" : "…"))"
            default: return "tag \(field.tag)"
            }
        }.joined(separator: " ")
    }

    @Test("the FI ID card and DE passport profiles' EF.CardSecurity have the shape of the real cards' (FI and DE ID card)",
          .needsSharedFixtures, arguments: [("fi-idcard-2023", "FI"), ("fi-passport-2024", "FI"), ("de-passport-2023", "DE")])
    func cardSecurityLikeRealCards(profile: String, country: String) throws {
        let real = try CMSSignedData(bytes: Array(try Data(contentsOf: TestFixtures.sharedURL("real-sod/\(country).EF_CardSecurity.bin"))))
        let realShapes = try Self.securityInfos(try #require(real.content)).map(Self.shape)
        let ours = try #require(try Self.cardSecurityInfos(try Self.passport("field/\(profile)"))).map(Self.shape)
        // Every PACEInfo and the PACE-CAM key info of ours appear in the real card's file, alike.
        for shape in ours {
            #expect(realShapes.contains(shape), "\(profile): \(shape) is not in the real \(country) card's \(realShapes)")
        }
    }

    @Test("DG14 carries the CA key as id-PK-ECDH over id-ecPublicKey with explicit ECParameters (as passports' DG14)",
          arguments: allChips)
    func dg14Keys(name: String) throws {
        let passport = try Self.passport(name)
        guard passport.applicationFiles[EmulatedPassport.dataGroupFID(14)] != nil else { return }
        for key in try Self.dg14Infos(passport) where try Self.oid(of: key) == Self.idPKECDH {
            let spki = try BERTLV.parseSingle(key).children()[1].children()
            let algorithm = try spki[0].children()
            #expect(DER.oidString(algorithm[0].value) == Self.ecPublicKey)
            // ECParameters (X9.62 / RFC 3279): SEQUENCE { version 1, fieldID { prime-field, p }, curve, base, order, cofactor }
            let parameters = try algorithm[1].children()
            #expect(algorithm[1].tag == 0x30 && parameters.first?.value == [0x01] && parameters.count >= 5)
            let fieldID = try parameters[1].children()
            #expect(DER.oidString(fieldID[0].value) == "1.2.840.10045.1.1")
        }
    }

    @Test("LDS 1.8 profiles: EF.COM says 0108 and EF.SOD is an LDSSecurityObject v1 with LDSVersionInfo")
    func ldsVersion() throws {
        for profile in FieldProfiles.names {
            let passport = try Self.passport("field/\(profile)")
            let expected = try #require(try FieldProfileFixtures.description(profile).chip?.ldsVersion)
            let com = try BERTLV.parseSingle(try #require(passport.applicationFiles[EmulatedPassport.efCOM]))
            let version = try com.children().first { $0.tag == 0x5F01 }?.value
            #expect(version == Array(expected.utf8), "\(profile)")
            let sod = try BERTLV.parseSingle(try #require(passport.applicationFiles[EmulatedPassport.efSOD]))
            let lds = try BERTLV.parseSingle(try #require(try CMSSignedData(bytes: sod.value).content)).children()
            if expected == "0108" {
                #expect(lds[0].value == [0x01] && lds.count == 4, "\(profile)")
                let info = try lds[3].children()
                #expect(info.map { $0.tag } == [0x13, 0x13] && info[0].value == Array("0108".utf8), "\(profile)")
            } else {
                #expect(lds[0].value == [0x00] && lds.count == 3, "\(profile)")
            }
        }
    }

    // MARK: Commands

    static func bacChip(_ name: String = "utopia-td3-jpeg") throws -> (VirtualPassportChip, String) {
        let chip = VirtualPassportChip(passport: try Self.passport(name))
        return (chip, try MRZ(TestFixtures.description(name).mrz.lines.joined(separator: "\n")).keyInformation)
    }

    @Test("reader-level and unknown commands are answered plainly as real chips do (6E00 / 6D00), before and under secure messaging")
    func unknownCommands() async throws {
        let (chip, key) = try Self.bacChip()
        let backend = EmulatedReaderBackend(chip: chip)
        let connection = try await backend.connect(reader: backend.readerName)
        // PC/SC's GET DATA pseudo-APDU (FF CA 00 00 00, FF CA 01 00 00) reaches the card: CLA not supported.
        for command: [UInt8] in [[0xFF, 0xCA, 0x00, 0x00, 0x00], [0xFF, 0xCA, 0x01, 0x00, 0x00], [0x80, 0xCA, 0x9F, 0x7F, 0x00]] {
            #expect(try await connection.transmit(raw: command) == [0x6E, 0x00])
        }
        #expect(try await connection.transmit(raw: [0x00, 0xCA, 0x01, 0x00, 0x00]) == [0x6D, 0x00])
        var reader = ICAOStepReader(connection: connection)
        #expect(try await reader.selectApplication() == .success)
        try await reader.basicAccessControl(mrzInformation: key)
        // Under secure messaging the pseudo-APDU is still refused plainly, and the session survives it.
        #expect(try await connection.transmit(raw: [0xFF, 0xCA, 0x01, 0x00, 0x00]) == [0x6E, 0x00])
        let com = try await reader.readFile(EmulatedPassport.efCOM)
        #expect(com.first == 0x60)
        // An unknown instruction under secure messaging is answered protected, 6D00.
        let unknown = try await reader.send(CommandAPDU(ins: 0xCA, p1: 0x01, p2: 0x00, ne: 256))
        #expect(unknown.statusWord == StatusWord(rawValue: 0x6D00))
    }

    @Test("READ BINARY of a short file: Le = 00 gets what is there with 9000, an explicit Le past the end 6282 (ISO 7816-4)")
    func le00AtTheEndOfAFile() async throws {
        let (chip, _) = try Self.bacChip("utopia-td3-pace")
        let connection = try await EmulatedReaderBackend(chip: chip).connect(reader: EmulatedReaderBackend(chip: chip).readerName)
        let cardAccess = try #require(chip.passport.masterFiles[0x011C])
        #expect(cardAccess.count < 256)
        // EF.CardAccess by short EF identifier (1C), before any access control.
        #expect(try await connection.transmit(raw: [0x00, 0xB0, 0x9C, 0x00, 0x00]) == cardAccess + [0x90, 0x00])
        #expect(try await connection.transmit(raw: [0x00, 0xB0, 0x9C, 0x00, UInt8(cardAccess.count + 4)]) == cardAccess + [0x62, 0x82])
        #expect(try await connection.transmit(raw: [0x00, 0xB0, 0x9C, 0x00, UInt8(cardAccess.count)]) == cardAccess + [0x90, 0x00])
    }

    @Test("READ BINARY with Le = 00 under short secure messaging returns as many bytes as fit (231 under 3DES), then continues")
    func le00UnderShortSecureMessaging() async throws {
        let (chip, key) = try Self.bacChip()
        let backend = EmulatedReaderBackend(chip: chip)
        var reader = ICAOStepReader(connection: try await backend.connect(reader: backend.readerName))
        #expect(try await reader.selectApplication() == .success)
        try await reader.basicAccessControl(mrzInformation: key)
        #expect(try await reader.send(CommandAPDU(ins: 0xA4, p1: 0x02, p2: 0x0C, data: [0x01, 0x02])).statusWord == .success)
        let dg2 = try #require(chip.passport.applicationFiles[EmulatedPassport.dataGroupFID(2)])
        let first = try await reader.send(CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 256))
        #expect(first.statusWord == .success)
        #expect(first.data.count == 0xE7)
        #expect(first.data == Array(dg2.prefix(0xE7)))
        // The session is in step: the next read goes on from there.
        let next = try await reader.send(CommandAPDU(ins: 0xB0, p1: 0, p2: 0xE7, ne: 256))
        #expect(next.statusWord == .success && next.data == Array(dg2[0xE7..<0xE7 * 2]))
    }
}

/// The field profile descriptions (Fixtures/passports/field).
enum FieldProfileFixtures {
    static func description(_ name: String) throws -> PassportDescription {
        try PassportDescription.load(from: TestFixtures.url("\(FieldProfiles.directory)/\(name).json"))
    }
}

/// The contactless timing model against hand-computed ISO/IEC 14443 figures.
@Suite("ISO 14443 timing model")
struct ContactlessTimingTests {
    /// One bit at 106 kbit/s: 128/fc.
    static let bit106 = 128.0 / 13_560_000.0
    static let frameDelay = 1172.0 / 13_560_000.0

    func seconds(_ duration: Duration) -> Double { duration.milliseconds / 1_000 }

    @Test("a short exchange at 106 kbit/s: (bytes + 3) × 9 + 2 bits per frame, one frame delay each way")
    func shortExchange() {
        let timing = ContactlessTiming(bitRate: 106)
        // SELECT (12 bytes) answered 9000 (2 bytes).
        let expected = (Double((12 + 3) * 9 + 2) + Double((2 + 3) * 9 + 2)) * Self.bit106 + 2 * Self.frameDelay
        #expect(abs(seconds(timing.exchangeTime(commandBytes: 12, responseBytes: 2)) - expected) < 1e-8)
    }

    @Test("higher bit rates divide the time on air, not the frame delay; the chip's time is added as it is")
    func bitRatesAndChipTime() {
        let slow = ContactlessTiming(bitRate: 106).exchangeTime(commandBytes: 5, responseBytes: 100)
        let fast = ContactlessTiming(bitRate: 848).exchangeTime(commandBytes: 5, responseBytes: 100)
        let onAir106 = seconds(slow) - 2 * Self.frameDelay
        let onAir848 = seconds(fast) - 2 * Self.frameDelay
        #expect(abs(onAir106 / onAir848 - 8) < 1e-4)  // Duration keeps nanoseconds
        let withChip = ContactlessTiming(bitRate: 106, chipTime: .milliseconds(5)).exchangeTime(commandBytes: 5, responseBytes: 100)
        #expect(abs(seconds(withChip) - seconds(slow) - 0.005) < 1e-9)
    }

    @Test("an extended APDU is chained in frames of FSD − 3 bytes, each answered by an R(ACK)")
    func chaining() {
        let timing = ContactlessTiming(bitRate: 106, frameSize: 256)
        // 1000 bytes: four I-blocks (253 + 253 + 253 + 241), three R(ACK)s.
        let blocks = Double((1000 + 3 * 4) * 9 + 2 * 4) * Self.bit106 + 4 * Self.frameDelay
        let acks = 3 * (Double(3 * 9 + 2) * Self.bit106 + Self.frameDelay)
        let response = Double((2 + 3) * 9 + 2) * Self.bit106 + Self.frameDelay
        #expect(abs(seconds(timing.exchangeTime(commandBytes: 1000, responseBytes: 2)) - (blocks + acks + response)) < 1e-8)
    }

    @Test("settings outside ISO 14443 are refused with a reason")
    func validation() {
        #expect(throws: EmulatorError.self) { try ContactlessTiming(bitRate: 100).validate() }
        #expect(throws: EmulatorError.self) { try ContactlessTiming(frameSize: 8).validate() }
        #expect(throws: EmulatorError.self) { try ContactlessTiming(chipTime: .seconds(-1)).validate() }
        #expect(throws: Never.self) { try ContactlessTiming(bitRate: 424, chipTime: .milliseconds(3), frameSize: 64).validate() }
    }

    @Test("the chip holds its answer back by the model's time (in process)")
    func chipHoldsAnswers() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        var faults = chip.faults
        faults.timing = ContactlessTiming(bitRate: 106, chipTime: .milliseconds(30))
        chip.setFaults(faults)
        let backend = EmulatedReaderBackend(chip: chip)
        let connection = try await backend.connect(reader: backend.readerName)
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await connection.transmit(raw: [0x00, 0xA4, 0x04, 0x0C, 0x07] + EmulatedApplicationID.value)
        // At least the modelled time (never an upper bound: tests do not assert on how slow a machine is).
        #expect(clock.now - start >= faults.answerDelay(commandBytes: 12, responseBytes: 2))
    }
}

extension EmulatorConformanceTests {
    @Test("DG14's ActiveAuthenticationInfo names the TR-03111 ecdsa-plain algorithm of the chip's hash (ICAO 9303-11 §6.1: plain r‖s)",
          arguments: allChips)
    func activeAuthenticationInfoIsPlainECDSA(name: String) throws {
        let passport = try Self.passport(name)
        guard passport.applicationFiles[EmulatedPassport.dataGroupFID(14)] != nil,
              let dg15 = passport.applicationFiles[EmulatedPassport.dataGroupFID(15)] else { return }
        let infos = try Self.dg14Infos(passport).filter { try Self.oid(of: $0) == "2.23.136.1.1.5" }
        // DG15's key: ecPublicKey → ECDSA, and then DG14 must say which hash (9303-11 §6.1).
        let ecPublicKey: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
        guard dg15.firstRange(of: ecPublicKey) != nil else { return }
        let info = try #require(infos.first, "\(name): ECDSA Active Authentication without ActiveAuthenticationInfo in DG14")
        let fields = try BERTLV.parseSingle(info).children()
        #expect(fields.count == 3 && fields[1].value == [0x01], "\(name): version 1")
        let algorithm = try #require(fields.count == 3 ? DER.oidString(fields[2].value) : nil)
        let plain = ["0.4.0.127.0.7.1.1.4.1.1", "0.4.0.127.0.7.1.1.4.1.2", "0.4.0.127.0.7.1.1.4.1.3",
                     "0.4.0.127.0.7.1.1.4.1.4", "0.4.0.127.0.7.1.1.4.1.5"]
        #expect(plain.contains(algorithm), "\(name): \(algorithm) is not a TR-03111 ecdsa-plain identifier")
    }
}
