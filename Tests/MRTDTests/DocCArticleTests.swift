import Foundation
import MRTD
import MRTDEmulator
import SmartCard
import Synchronization
import TestSupport
import Testing

/// The code of the DocC articles — `Sources/MRTD/MRTD.docc/ReadingAChip.md` and
/// `Sources/MRTDVerification/MRTDVerification.docc/VerifyingChipEvidence.md` — as written there,
/// run against the emulated chip, so the articles cannot drift from the API. The one difference:
/// the reader back end is the emulator's, not `PCSCBackend()` (which needs a pcscd and a card).
@Suite("DocC articles: their code runs")
struct DocCArticleTests {
    static func backend() throws -> any CardReaderBackend {
        EmulatedReaderBackend(chip: VirtualPassportChip(passport: try TestFixtures.passport("utopia-demo")))
    }

    @Test("Reading a chip from Swift: wait for the card, connect, open it with the MRZ, read, check")
    func readingAChip() async throws {
        let backend = try Self.backend()
        let reader = try await backend.waitForCard(readerMatching: nil, timeout: .seconds(30))
        let connection = try await backend.connect(reader: reader.name)
        let key = try AccessKey.mrz("""
            P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<
            L898902C36UTO7408122F1204159ZE184226B<<<<<10
            """)
        #expect(try AccessKey.fields(documentNumber: "L898902C3", dateOfBirth: "740812", dateOfExpiry: "120415") == key)

        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki"))
        var options = ReadOptions(dataGroups: [1, 2], trustStore: trust)
        options.readTimeout = ReadOptions.forTest().readTimeout  // (not in the article: a busy CI machine)
        let percents = Mutex<[Int]>([])
        let passportReader = PassportReader(connection: connection, accessKey: key, options: options,
                                            progress: { progress in percents.withLock { $0.append(progress.percent) } })
        let result: PassportReadResult
        do {
            result = try await passportReader.read()
        } catch {
            await passportReader.connection.disconnect()
            throw error
        }
        await passportReader.connection.disconnect()

        #expect(result.dg1?.mrz.primaryIdentifier == "ERIKSSON")
        #expect(result.accessControl == "PACE")
        #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
        #expect(result.chip.status == .valid, "\(result.chip.detail)")
        #expect(result.dg2?.faces.first != nil)
        let seen = percents.withLock { $0 }
        #expect(seen.last == 100 && seen == seen.sorted(), "\(seen)")
    }

    @Test("Verifying chip evidence: the backend's own anchors and challenge; a foreign challenge fails")
    func verifyingChipEvidence() async throws {
        // What the kiosk sends: nfc.read's evidence, as JSON.
        let challengeForThisSession: [UInt8] = [0x3A, 0x91, 0x0C, 0x5D, 0xE2, 0x47, 0x18, 0xB6]
        let backend = try Self.backend()
        var options = ReadOptions.forTest(dataGroups: [1, 2, 14, 15])
        options.activeAuthenticationChallenge = challengeForThisSession
        let read = try await PassportReader(connection: try await backend.connect(reader: try await backend.waitForCard(readerMatching: nil, timeout: .seconds(30)).name),
                                            accessKey: try AccessKey.fields(documentNumber: "L898902C3", dateOfBirth: "740812", dateOfExpiry: "120415"),
                                            options: options).read()
        let requestBody = try JSONEncoder().encode(ChipEvidence(read))

        // The article's backend.
        var trust = TrustStore()
        try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
        let evidence = try ChipEvidence(json: requestBody)
        let verifier = EvidenceVerifier(trustStore: trust)
        let result = try verifier.verify(evidence, challenge: challengeForThisSession)
        #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
        #expect(result.active.status == .valid, "\(result.active.detail)")
        #expect(result.chip.status == .notChecked)
        #expect(result.dg1?.mrz.primaryIdentifier == "ERIKSSON")

        // Another session's challenge, and a backend without the anchor.
        #expect(try verifier.verify(evidence, challenge: [0, 1, 2, 3, 4, 5, 6, 7]).active.status == .invalid)
        #expect(try EvidenceVerifier(trustStore: TrustStore()).verify(evidence, challenge: challengeForThisSession).passiveOutcome.status == .untrusted)
    }
}
