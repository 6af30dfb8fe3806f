import ChipRead
import Foundation
import GBGBridgeHost
import GBGBridgeNFC
import GBGBridgeRead
import MRTD
import MRTDEmulator
import CVCertificates
import SmartCard
import TestSupport
import Testing

/// What `emulate`, `demo` and `read` keep in the host library, tested in process.
@Suite("Host kit: emulator recipes, read summaries, exit statuses")
struct HostKitTests {
    @Test func aProfileIsAssembledWithItsOverrides() throws {
        var recipe = EmulatorRecipe(source: .profile("de-passport-2023"))
        recipe.shortAPDUsOnly = true
        recipe.maxReadLength = 100
        recipe.quirks = { base in
            var quirks = base ?? ChipQuirks()
            quirks.refuseLe00 = true
            return quirks
        }
        try recipe.hostile.add("lying-length")
        let (chip, notes) = try recipe.build()
        #expect(!chip.extendedLength)
        #expect(chip.maxReadLength == 100)
        #expect(chip.masterFiles[EmulatedPassport.efATRInfo] == nil)
        #expect(chip.quirks.refuseLe00 == true)
        #expect(!chip.hostile.isEmpty)
        // The profile keeps DG3/DG4 behind EAC, and no trust point was given: said, not hidden.
        #expect(notes == ["DG3/DG4 are behind Extended Access Control and no trust point was given (--eac-cvca FILE): no terminal can open them"])
    }

    @Test func aPassportIsFoundByNameOrFile() throws {
        let byName = try EmulatorRecipe(source: .passport("utopia-td3-jpeg")).descriptionURL()
        #expect(byName.lastPathComponent == "utopia-td3-jpeg.json")
        let byFile = try EmulatorRecipe(source: .passport(byName.path)).descriptionURL()
        #expect(byFile == byName)
        let fieldName = try EmulatorRecipe(source: .passport("field/de-passport-2023")).descriptionURL()
        #expect(fieldName.lastPathComponent == "de-passport-2023.json")
    }

    @Test("what cannot be assembled is one line naming what to do",
          arguments: [EmulatorRecipe.Source.passport("no-such-passport"), .passport("./missing.json"), .profile("xx-passport-1999"),
                      .dump(directory: "/nonexistent/dump", mrz: nil)])
    func failuresAreOneLine(source: EmulatorRecipe.Source) {
        #expect {
            _ = try EmulatorRecipe(source: source).build()
        } throws: { error in
            let text = "\(error)"
            return error is EmulatorError && !text.contains("\n") && !text.contains("NSCocoaErrorDomain") && !text.contains("could not be completed")
        }
    }

    @Test func aSignerThatIsNotThereIsNamed() {
        var recipe = EmulatorRecipe(source: .passport("utopia-td3-jpeg"))
        recipe.signerCertificate = "/nonexistent/ds.cert.pem"
        recipe.signerKey = "/nonexistent/ds.key.pem"
        #expect { _ = try recipe.build() } throws: { "\($0)".contains("/nonexistent/ds.cert.pem") && !"\($0)".contains("NSCocoaErrorDomain") }
    }

    @Test func onlyACVCAIsATrustPoint() throws {
        let directory = try #require(KitData.url("cvc"))
        let cvca = directory.appendingPathComponent("UTCVCA00001.cvcert").path
        let eac = try #require(try EmulatorRecipe.eacConfiguration(cvcaFiles: [cvca], date: "250101"))
        #expect(eac.trustPoints.map(\.holderReference) == ["UTCVCA00001"])
        #expect(try EmulatorRecipe.eacConfiguration(cvcaFiles: [], date: nil) == nil)
        #expect { _ = try EmulatorRecipe.eacConfiguration(cvcaFiles: [directory.appendingPathComponent("UTDVIS00001.cvcert").path], date: nil) }
            throws: { "\($0)".contains("not a CVCA's") }
        #expect { _ = try EmulatorRecipe.eacConfiguration(cvcaFiles: [cvca], date: "251399") } throws: { "\($0)".contains("YYMMDD") }
        #expect { _ = try EmulatorRecipe.eacConfiguration(cvcaFiles: ["/nonexistent.cvcert"], date: nil) } throws: { "\($0)".contains("/nonexistent.cvcert") }
    }

    @Test func theTestInspectionSystemOpensTheChipsBiometrics() throws {
        var recipe = EmulatorRecipe(source: .passport("utopia-demo"))
        let terminal: TerminalCredentials
        (recipe.eac, terminal) = try EmulatorRecipe.testInspectionSystem()
        let (chip, notes) = try recipe.build()
        #expect(chip.biometricsBehindEAC)
        #expect(terminal.certificates.count == 2)
        #expect(notes.first?.hasPrefix("EAC: trust points UTCVCA00001") == true, "\(notes)")
    }

    @Test func theSummarySaysWhatWasReadWithoutTheMRZ() async throws {
        let passport = try EmulatorRecipe(source: .passport("utopia-td3-jpeg")).build().passport
        let key = try TestFixtures.accessKey("utopia-td3-jpeg")
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: VirtualPassportChip(passport: passport)), accessKey: key,
                                              options: ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)).read()
        let lines = ReadSummary.lines(ReadReport(result), result, reader: "Test Reader")
        #expect(lines.first?.hasSuffix("from Test Reader") == true, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("  Passive        valid") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("  Data groups    DG1") }, "\(lines)")
        let mrz = try TestFixtures.description("utopia-td3-jpeg").mrz.lines
        #expect(!lines.joined().contains(mrz[1]), "the MRZ's second line must not be printed")
    }

    @Test func exitStatusesAreTheDocumentedOnes() {
        #expect(ReadExit.status(for: MRTDError(.accessDenied, "wrong MRZ")) == 3)
        #expect(ReadExit.status(for: MRTDError(.timeout, "stalled")) == 4)
        #expect(ReadExit.status(for: MRTDError(.notSupported, "the chip offers no PACE")) == 3)
        #expect(ReadExit.status(for: MRTDError(.unexpectedStatus, "endless GET RESPONSE")) == 5)
        #expect(ReadExit.status(for: SmartCardError(.noCard, "no card")) == 4)
        #expect(ReadExit.status(for: SmartCardError(.cardRemoved, "removed")) == 5)
    }

    @Test func theCommandLineIsLaidOverTheFile() throws {
        var file = ServeSettings()
        file.port = 9000
        file.trust = ["/etc/gbgbridge/trust"]
        file.allowOrigin = ["https://a.example"]
        file.readTimeout = 30
        file.metricsListen = "0.0.0.0:9450"
        var given = ServeSettings()
        given.allowOrigin = ["https://b.example"]
        given.trust = []  // an empty list on the command line is "not given"
        given.readTimeout = 90
        let settings = try HostSettings(commandLine: given, file: file, filePath: "/etc/gbgbridge/gbgbridge.conf")
        #expect(settings.port == 9000)
        #expect(settings.allowOrigin == ["https://b.example"])
        #expect(settings.trust == ["/etc/gbgbridge/trust"])
        #expect(settings.readTimeout == 90)
        #expect(settings.metricsListen == ListenAddress(argument: "0.0.0.0:9450"))
        #expect(settings.configFile == "/etc/gbgbridge/gbgbridge.conf")
        #expect(try HostSettings(commandLine: ServeSettings(), file: nil, filePath: nil).port == ServeSettings.defaultPort)
        file.metricsListen = "nowhere"
        #expect { try HostSettings(commandLine: ServeSettings(), file: file, filePath: "/etc/x.conf") }
            throws: { "\($0)".contains("/etc/x.conf") && "\($0)".contains("metrics-listen") }
        #expect(ListenAddress(argument: "[::1]:9450")?.description == "[::1]:9450")
    }
}
