import CVCertificates
import Foundation
import GBGBridge
import GBGBridgeNFC
import MRTDCrypto
import MRTDEmulator
import TestSupport
import Testing

/// nfc.read with Extended Access Control: a host given terminal credentials says so in
/// `constraints.extendedAccessControl`, reads DG3/DG4 when a page asks, and reports
/// `verification.terminal`; without credentials nothing changes.
@Suite("nfc.read with Terminal Authentication", .serialized)
@MainActor
struct NFCTerminalAuthenticationTests {
    static func eacChip() throws -> VirtualPassportChip {
        var description = try TestFixtures.description("utopia-demo")
        description.biometrics = true
        var passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        let cvca = try CVCertificate(bytes: [UInt8](try Data(contentsOf: TestFixtures.url("cvc/UTCVCA00001.cvcert"))))
        passport.eac = EACConfiguration(trustPoints: [cvca], date: CVDate(Date()))
        return VirtualPassportChip(passport: passport)
    }

    static func credentials() throws -> TerminalCredentials {
        let certificates = try TerminalCredentials.certificates(at: [TestFixtures.url("cvc/UTDVIS00001.cvcert").path,
                                                                     TestFixtures.url("cvc/UTIS0000001.cvcert").path])
        return try TerminalCredentials(certificates: certificates,
                                       signer: try PrivateKeySigner(contentsOf: TestFixtures.url("cvc/UTIS0000001.pkcs8")))
    }

    @Test func withCredentialsAPageGetsDG3AndDG4() async throws {
        let rig = try NFCRig(chip: try Self.eacChip())
        rig.service.terminalCredentials = try Self.credentials()
        await rig.service.refreshReaders()
        let query = rig.host.capabilityQueryData()
        #expect(query["capabilities"]?["nfc.read"]?["constraints"]?["extendedAccessControl"] == .bool(true), "\(query)")
        rig.request("t1", #"{"accessKey":\#(NFCRig.annaKey),"dataGroups":["DG1","DG2","DG3","DG4"]}"#)
        let response = try #require(await rig.response("t1"))
        #expect(response.payload.status == .success, "\(response.payload.error?.message ?? "")")
        let data = try #require(response.payload.data)
        #expect(data["verification"]?["terminal"]?["status"] == "valid", "\(data["verification"] ?? .null)")
        let groups = data["dataGroupsRead"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(groups.contains("DG3") && groups.contains("DG4"), "\(groups)")
        // The images, with what a browser can do with them said plainly.
        let fingers = data["fingerprints"]?.arrayValue ?? []
        #expect(fingers.count == 2)
        #expect(fingers.first?["positionName"] == "right index finger" && fingers.first?["format"] == "raw")
        #expect(fingers.first?["displayable"] == .bool(false) && fingers.first?["note"] == nil)
        #expect(data["biometricFormats"]?["raw"]?.stringValue?.contains("canvas") == true, "\(data["biometricFormats"] ?? .null)")
        #expect((fingers.first?["image"]?.stringValue).flatMap { Data(base64Encoded: $0) }?.count == 64 * 64)
        #expect(data["irises"]?.arrayValue?.count == 2)
    }

    @Test func withoutCredentialsDG3IsProtectedAndTerminalNotChecked() async throws {
        let rig = try NFCRig(chip: try Self.eacChip())
        await rig.service.refreshReaders()
        #expect(rig.host.capabilityQueryData()["capabilities"]?["nfc.read"]?["constraints"]?["extendedAccessControl"] == .bool(false))
        rig.request("t2", #"{"accessKey":\#(NFCRig.annaKey),"dataGroups":["DG1","DG3"]}"#)
        let response = try #require(await rig.response("t2"))
        #expect(response.payload.status == .success)
        let data = try #require(response.payload.data)
        #expect(data["verification"]?["terminal"]?["status"] == "notChecked")
        #expect(!(data["dataGroupsRead"]?.arrayValue?.contains("DG3") ?? true))
    }
}
