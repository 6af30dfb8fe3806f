import CBORCoding
import Foundation
import MRTDCrypto
import MRTDEmulator
import Mdoc
import MdocEmulator
import MdocNFC
import SmartCard
import TestSupport
import Testing

/// The emulated holder (static and negotiated handover, device signature and MAC) read through a
/// real pcscd + vpcd, and verified.
@Suite("mdoc over NFC through pcscd + vpcd", .serialized)
struct MdocNFCReadTests {
    static func credential(_ profile: String = "utopia-mdl") throws -> MdocCredential {
        try MdocCredential.load(profileAt: TestFixtures.url("mdoc/\(profile).json"))
    }

    static func holder(_ handover: MdocHolder.Handover = .static, _ auth: MdocHolder.DeviceAuth = .signature,
                       hostile: Set<MdocHostileMode> = [], profile: String = "utopia-mdl", responseLength: Int = 0x10000) throws -> MdocHolder {
        MdocHolder(credential: try credential(profile), handover: handover, deviceAuth: auth, hostile: hostile,
                   expiredSignerCertificate: try Certificate(bytes: try Data(contentsOf: TestFixtures.url("mdoc/ds-expired.cert.pem")).map { $0 }).derBytes,
                   untrustedSignerCertificate: try Certificate(bytes: try Data(contentsOf: TestFixtures.url("mdoc/ds-other.cert.pem")).map { $0 }).derBytes,
                   responseLength: responseLength)
    }

    static var iaca: Certificate { get throws { try Certificate(bytes: Array(try Data(contentsOf: TestFixtures.url("mdoc/iaca.cert.pem")))) } }

    static func identity(_ docType: String = MdocDocType.mDL) throws -> MdocRequest {
        try MdocDocType.request(docType: docType, spec: "identity")
    }

    /// Reads `holder` through pcscd and verifies with the test IACA, now.
    static func read(_ holder: MdocHolder, request: MdocRequest? = nil, timeout: Duration = .seconds(20),
                     handover: MdocReadOptions.Handover = .automatic) async throws -> (MdocReadOutcome, MdocVerification) {
        let (outcome, verification) = try await readAll(holder, request: request, timeout: timeout, handover: handover)
        return (outcome, try #require(verification))
    }

    /// Reads `holder` through pcscd; the verification of the first document, if there is one.
    static func readAll(_ holder: MdocHolder, request: MdocRequest? = nil, timeout: Duration = .seconds(20),
                        handover: MdocReadOptions.Handover = .automatic) async throws -> (MdocReadOutcome, MdocVerification?) {
        let request = try request ?? identity()
        let iaca = try self.iaca
        return try await PCSCDHarness.withEmulatedCard(holder) { _ in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            defer { Task { await connection.disconnect() } }
            let outcome = try await MdocNFCReader.read(connection: connection, options: MdocReadOptions(requests: [request], timeout: timeout, handover: handover))
            let verification = outcome.response.documents.first.map {
                MdocVerifier(trustAnchors: [iaca], time: Date().timeIntervalSince1970)
                    .verify($0, transcript: outcome.transcript, request: request, readerKey: outcome.readerEphemeralKey)
            }
            return (outcome, verification)
        }
    }

    @Test("static and negotiated handover, device signature and MAC: exactly the requested elements, issuer and device valid",
          arguments: [(MdocHolder.Handover.static, MdocHolder.DeviceAuth.signature), (.static, .mac), (.negotiated, .signature), (.negotiated, .mac)])
    func reads(handover: MdocHolder.Handover, auth: MdocHolder.DeviceAuth) async throws {
        let request = try Self.identity()
        let (outcome, result) = try await Self.read(try Self.holder(handover, auth), request: request)
        #expect(outcome.handover == handover.rawValue)
        #expect(result.issuer == .valid, "\(result.issuerReason ?? "")")
        #expect(result.device == .valid, "\(result.deviceReason ?? "")")
        #expect(result.deviceAuthentication == auth.rawValue)
        #expect(Set(result.elements.map(\.identifier)) == Set(request.elements.map(\.identifier)))
        #expect(result.withheld.isEmpty)
        #expect(result.value("family_name") == .text("Mustermann"))
        #expect(result.value("birth_date") == .tagged(1004, .text("1971-09-01")))
        #expect(result.value("portrait")?.bytesValue?.starts(with: [0xFF, 0xD8]) == true)
    }

    @Test func aPIDReadsWithItsOwnNamespace() async throws {
        let request = try Self.identity(MdocDocType.pid)
        let (_, result) = try await Self.read(try Self.holder(profile: "utopia-pid"), request: request)
        #expect(result.issuer == .valid)
        #expect(result.value("family_name", namespace: MdocDocType.pidNamespace) == .text("Mustermann"))
    }

    @Test func shortAPDUsOnlyStillRead() async throws {
        let (outcome, result) = try await Self.read(try Self.holder(responseLength: 256))
        #expect(result.issuer == .valid && result.device == .valid)
        #expect(outcome.responseLength == 256)
    }

    @Test func aDocumentTypeTheHolderLacksComesBackAsADocumentError() async throws {
        let request = try Self.identity(MdocDocType.pid)
        let (outcome, verification) = try await Self.readAll(try Self.holder(), request: request)
        #expect(verification == nil)
        #expect(outcome.response.documents.isEmpty)
        #expect(outcome.response.documentErrors.map(\.docType) == [MdocDocType.pid])
    }
}

/// Reader authentication (ISO 18013-5 §9.1.4): readerAuth over ReaderAuthenticationBytes with the
/// reader certificate in x5chain, checked by the holder.
@Suite("mdoc reader authentication through pcscd + vpcd", .serialized)
struct MdocReaderAuthenticationTests {
    @Test func theHolderVerifiesOurReaderAuthentication() async throws {
        let holder = try MdocNFCReadTests.holder(.negotiated, .signature)
        let key = try PrivateKey(bytes: Array(try Data(contentsOf: TestFixtures.url("mdoc/reader.key.pem"))))
        let certificate = try Certificate(bytes: Array(try Data(contentsOf: TestFixtures.url("mdoc/reader.cert.pem"))))
        let readerKey = try ReaderAuthenticationKey(privateKey: key, certificateChain: [certificate.derBytes])
        let request = try MdocNFCReadTests.identity()
        let outcome = try await PCSCDHarness.withEmulatedCard(holder) { _ in
            let backend = PCSCBackend()
            let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
            let connection = try await backend.connect(reader: info.name)
            defer { Task { await connection.disconnect() } }
            return try await MdocNFCReader.read(connection: connection, options: MdocReadOptions(requests: [request], readerKey: readerKey, timeout: .seconds(20)))
        }
        #expect(holder.readerAuthentication == [true])
        let auth = try #require(outcome.request.docRequests.first?.readerAuth)
        #expect(auth.payload == nil)
        #expect(try auth.headers.x5chain() == [certificate.derBytes])
        #expect(certificate.isSignatureValid(issuer: try Certificate(bytes: Array(try Data(contentsOf: TestFixtures.url("mdoc/reader-root.cert.pem"))))))
    }
}
