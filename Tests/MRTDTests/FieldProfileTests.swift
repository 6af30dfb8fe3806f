import Foundation
import MRTD
import MRTDEmulator
import SmartCard
import TestSupport
import Testing

/// What a field profile implies for a read: access control, chip authenticity, LDS version.
struct FieldProfileExpectation {
    let name: String
    let description: PassportDescription

    init(_ name: String) throws {
        self.name = name
        description = try PassportDescription.load(from: TestFixtures.url("\(FieldProfiles.directory)/\(name).json"))
    }

    var chip: VirtualPassportChip {
        get throws {
            VirtualPassportChip(passport: try EmulatedPassport.load(descriptionAt: TestFixtures.url("\(FieldProfiles.directory)/\(name).json"),
                                                                    signer: try TestFixtures.documentSigner()))
        }
    }

    var mrz: AccessKey { get throws { try AccessKey.mrz(description.mrz.lines.joined(separator: "\n")) } }
    var usesCAM: Bool { description.paceMapping?.uppercased().contains("CAM") == true }
    var offersPACE: Bool { description.access != "bac" }

    /// Checks a read of this profile: PA valid; CA (or PACE-CAM) and AA valid where the document
    /// has them and notSupported where it has not — a chip with neither is visibly cloneable.
    func check(_ result: PassportReadResult) {
        #expect(result.passiveOutcome.status == .valid, "\(name): \(result.passiveOutcome.detail)")
        #expect(result.accessControl == (offersPACE ? "PACE" : "BAC"), "\(name)")
        let chipAuthenticity = description.chipAuthentication != nil || usesCAM
        #expect(result.chip.status == (chipAuthenticity ? .valid : .notSupported), "\(name): chip \(result.chip.detail)")
        #expect(result.active.status == (description.activeAuthentication != nil ? .valid : .notSupported), "\(name): active \(result.active.detail)")
        if offersPACE {
            #expect(result.cardAccessCheck.status == .valid, "\(name): EF.CardAccess \(result.cardAccessCheck.detail)")
        }
        #expect(result.com?.ldsVersion == description.chip?.ldsVersion, "\(name)")
        #expect(result.statistics.extendedLength == (description.chip?.extendedLength ?? true), "\(name)")
        #expect(result.dg2?.faces.isEmpty == false, "\(name)")
    }
}

@Suite("Field profiles (Fixtures/passports/field), in process")
struct FieldProfileTests {
    static let trust = TestFixtures.testTrustStore

    @Test("the profiles are the 22 rows of field-profiles.md, one file each")
    func catalogue() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: TestFixtures.url(FieldProfiles.directory).path)
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
        #expect(files == FieldProfiles.names.sorted())
        #expect(FieldProfiles.all.count == 22)
        for (name, document) in FieldProfiles.all {
            #expect(try FieldProfileExpectation(name).description.profile == document)
        }
    }

    @Test("each profile reads with the MRZ: PA valid, CA/PACE-CAM/AA as the document has them", arguments: FieldProfiles.names)
    func readsInProcess(name: String) async throws {
        let profile = try FieldProfileExpectation(name)
        let backend = EmulatedReaderBackend(chip: try profile.chip)
        let result = try await PassportReader(connection: try await backend.connect(reader: backend.readerName), accessKey: try profile.mrz,
                                              options: ReadOptions.forTest(trustStore: Self.trust)).read()
        profile.check(result)
    }

    @Test("profiles with a CAN open with it too", arguments: FieldProfiles.names.filter { (try? FieldProfileExpectation($0).description.can) != nil })
    func readsWithTheCAN(name: String) async throws {
        let profile = try FieldProfileExpectation(name)
        let backend = EmulatedReaderBackend(chip: try profile.chip)
        let result = try await PassportReader(connection: try await backend.connect(reader: backend.readerName),
                                              accessKey: .can(try #require(profile.description.can)),
                                              options: ReadOptions.forTest(trustStore: Self.trust)).read()
        profile.check(result)
    }
}

@Suite("Field profiles through pcscd + vpcd", .serialized)
struct FieldProfilePCSCTests {
    @Test("every profile reads end to end through pcscd", arguments: FieldProfiles.names)
    func throughPCSC(name: String) async throws {
        let profile = try FieldProfileExpectation(name)
        let key = try profile.mrz
        let result = try await PCSCDHarness.withEmulatedCard(try profile.chip) { _ in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            defer { Task { await connection.disconnect() } }
            return try await PassportReader(connection: connection, accessKey: key,
                                            options: ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)).read()
        }
        profile.check(result)
    }
}
