import Foundation
import MRTDCrypto
import MRTDEmulator
import SmartCard
import TestSupport
import TestTraits
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// EF.CardAccess with PACEDomainParameterInfo (proprietary parameter ids with explicit domain
/// parameters), and DG14s that real passports carry.
@Suite("PACE domain parameters and real DG14s")
struct DomainParameterTests {
    func cardAccess(_ entries: [[UInt8]]) throws -> SecurityInfos {
        try SecurityInfos(bytes: DER.set(entries))
    }

    @Test("explicit parameters resolve to the standard group", arguments: [13, 12, 17, 8, 0, 2])
    func explicitParametersResolve(parameterId: Int) throws {
        let domain = try #require(PACEDomain.standardized(parameterId))
        let protocolID = PACE.ProtocolID(keyAgreement: domain.keyAgreement, mapping: .genericMapping, keyType: .aes128)
        let info = PACEInfo(protocolID: protocolID, parameterId: 32)
        let infos = try cardAccess([info.der, PACEInfo.domainParameterInfo(protocolID: protocolID, domain: domain, parameterId: 32)])
        let parsed = try #require(PACEInfo.all(in: infos).first)
        #expect(parsed.parameterId == 32)
        // The same group, recognised by name too (an RFC 5114 group given explicitly is that group).
        #expect(parsed.domain == domain)
        #expect(parsed.description.contains("\(domain)"))
    }

    @Test func aProprietaryIdWithoutItsParametersHasNoDomain() throws {
        let protocolID = PACE.ProtocolID(keyAgreement: .ecdh, mapping: .genericMapping, keyType: .aes128)
        let other = PACEInfo.domainParameterInfo(protocolID: protocolID, domain: .ec(.nistP256), parameterId: 33)
        let parsed = try #require(PACEInfo.all(in: try cardAccess([PACEInfo(protocolID: protocolID, parameterId: 32).der, other])).first)
        #expect(parsed.domain == nil)
        // A standardised id ignores domain parameter infos.
        let standard = try #require(PACEInfo.all(in: try cardAccess([PACEInfo(protocolID: protocolID, parameterId: 13).der, other])).first)
        #expect(standard.domain == .ec(.brainpoolP256r1))
    }

    @Test func aCurveThatIsNoStandardCurveIsNotUsed() throws {
        // brainpoolP256r1's explicit parameters with one bit of the group order changed.
        let protocolID = PACE.ProtocolID(keyAgreement: .ecdh, mapping: .genericMapping, keyType: .aes128)
        var entry = PACEInfo.domainParameterInfo(protocolID: protocolID, domain: .ec(.brainpoolP256r1), parameterId: 32)
        let b = EllipticCurve.brainpoolP256r1.explicitParameters
        let index = try #require(entry.firstRange(of: Array(b.suffix(40)))).lowerBound
        entry[index + 3] ^= 0x01
        let parsed = try #require(PACEInfo.all(in: try cardAccess([PACEInfo(protocolID: protocolID, parameterId: 32).der, entry])).first)
        #expect(parsed.domain == nil)
    }

    @Test("a chip publishing explicit parameters is read", arguments: [
        ("GM", 13, "AES-128"), ("IM", 12, "AES-256"), ("GM", 0, "3DES"), ("CAM", 13, "AES-128"),
    ])
    func chipWithExplicitParameters(mapping: String, parameterId: Int, cipher: String) async throws {
        var description = try TestFixtures.description("utopia-td3-pace")
        description.paceMapping = mapping
        description.paceParameterId = parameterId
        description.paceCipher = cipher
        description.paceExplicitParameters = true
        let chip = VirtualPassportChip(passport: try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                                      signer: try TestFixtures.documentSigner()))
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try TestFixtures.accessKey("utopia-td3-pace"),
                                              options: ReadOptions.forTest(trustStore: trust)).read()
        #expect(result.accessControl == "PACE", "\(result.accessControlNote ?? "")")
        #expect(result.paceMapping == mapping)
        #expect(result.passiveOutcome.status == .valid)
        if mapping == "CAM" { #expect(result.chip.status == .valid, "\(result.chip.detail)") }
    }

    @Test(.needsSharedFixtures) func theBSITestPassportsDG14OffersCAVersion1On224BitBrainpool() throws {
        let dg14 = try SecurityInfos(bytes: try Data(contentsOf: TestFixtures.sharedURL("lds/bsi2008/Datagroup14.bin")).map { $0 })
        let offer = try #require(ChipAuthentication.offer(in: dg14))
        #expect(offer.protocolID.description == "CA-ECDH-3DES")
        #expect(offer.protocolID.usesKeyAgreementTemplate)  // the reader will use MSE:Set KAT, as such chips need
        guard case .ec(let curve, let point) = offer.publicKey else { Issue.record("not an EC key"); return }
        #expect(curve == .brainpoolP224r1)  // written with explicit domain parameters
        #expect(curve.isValidPoint(point))
    }
}

/// ID cards announce Chip Authentication in EF.CardAccess and keep the key in EF.CardSecurity.
@Suite("Chip Authentication with the key in EF.CardSecurity")
struct CardSecurityChipAuthenticationTests {
    func read(ca: String, faults: ChipFaults? = nil) async throws -> (PassportReadResult, VirtualPassportChip) {
        var description = try TestFixtures.description("utopia-id-pace-only")
        description.chipAuthentication = ca
        description.chipAuthenticationKeyIn = "CardSecurity"
        let chip = VirtualPassportChip(passport: try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                                                      signer: try TestFixtures.documentSigner()))
        if let faults { chip.setFaults(faults) }
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: .can("123456"),
                                              options: ReadOptions.forTest(trustStore: trust)).read()
        return (result, chip)
    }

    @Test("the card proves it holds the EF.CardSecurity key", arguments: ["ECDH-P256-AES-256", "ECDH-brainpoolP256r1-3DES", "DH-MODP1024/160-AES-128"])
    func cardSecurityKey(ca: String) async throws {
        let (result, chip) = try await read(ca: ca)
        #expect(result.chip.status == .valid, "\(result.chip.detail)")
        #expect(result.chipKeySource == "EF.CardSecurity")
        #expect(result.chip.detail.contains("EF.CardSecurity key"))
        #expect(result.dg14.flatMap { ChipAuthentication.offer(in: $0) } == nil)  // DG14 holds only the AA info
        #expect(result.files[.cardSecurity] != nil)
        #expect(chip.statistics.chipAuthentications == 1)
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.dg2?.faces.isEmpty == false)  // everything read under the CA keys
    }

    @Test func aCardThatFailsCAIsInvalidAndStillRead() async throws {
        let (result, _) = try await read(ca: "ECDH-P256-AES-256",
                                         faults: ChipFaults(statusOverrides: [.init(ins: 0x22, p1: 0x41, statusWord: .conditionsOfUseNotSatisfied)]))
        #expect(result.chip.status == .invalid)
        #expect(result.dg1 != nil)
    }

    @Test func descriptionsThatCannotWorkAreRefused() throws {
        var description = try TestFixtures.description("utopia-td3-jpeg")  // BAC only
        description.chipAuthentication = "ECDH-P256-AES-128"
        description.chipAuthenticationKeyIn = "CardSecurity"
        #expect(throws: EmulatorError.self) {
            _ = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"), signer: try TestFixtures.documentSigner())
        }
        description.chipAuthenticationKeyIn = "DG13"
        #expect(throws: EmulatorError.self) {
            _ = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"), signer: try TestFixtures.documentSigner())
        }
    }
}
