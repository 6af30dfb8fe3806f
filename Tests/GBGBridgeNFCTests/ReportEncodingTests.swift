import ChipRead
import Foundation
import GBGBridge
import MRTD
import MRTDEmulator
import TestSupport
import Testing
@testable import GBGBridgeNFC

/// The nfc.read report is encoded once, straight into the message's JSONValue: the tree must be
/// exactly what JSONEncoder's text decoded again gives (photo, fingerprints, evidence and all).
@Suite("The nfc.read report, encoded once")
struct ReportEncodingTests {
    @Test(arguments: ["utopia-td3-jpeg", "utopia-demo", "utopia-td3-jpeg2000"])
    func directEncodingMatchesJSONText(name: String) async throws {
        var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
        options.activeAuthenticationChallenge = [1, 2, 3, 4, 5, 6, 7, 8]
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: VirtualPassportChip(passport: try TestFixtures.passport(name))),
                                              accessKey: try TestFixtures.accessKey(name), options: options).read()
        let report = ReadReport(result)
        let direct = try JSONValue(encoding: report)
        let viaText = try JSONDecoder().decode(JSONValue.self, from: report.jsonData())
        #expect(direct == viaText)
        #expect(direct["photo"]?.stringValue?.isEmpty == false)
        let evidence = ChipEvidence(result)
        #expect(try JSONValue(encoding: evidence) == (try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(evidence))))
    }
}
