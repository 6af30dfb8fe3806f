import CVCertificates
import Foundation
import TestSupport
import Testing

/// Malformed certificates are typed errors naming the field, never a crash.
@Suite("CV certificate parsing")
struct CVCertificateParsingTests {
    /// The test CVCA certificate (brainpoolP256r1) as cvc-create wrote it (Fixtures/cvc).
    static func sample(_ name: String = "UTCVCA00001") throws -> [UInt8] {
        [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(name).cvcert")))
    }

    @Test func theSampleParsesAndVerifiesItself() throws {
        let certificate = try CVCertificate(bytes: try Self.sample())
        #expect(certificate.holderReference == "UTCVCA00001" && certificate.isSelfSigned)
        #expect(certificate.authorization.role == .cvca)
        #expect(certificate.effectiveDate.description == "2026-11-01" && certificate.expirationDate.description == "2046-12-31")
        #expect(certificate.encoded == (try Self.sample()))
        try certificate.verifySignature(issuerKey: certificate.publicKey)
        let dv = try CVCertificate(bytes: try Self.sample("UTDVIS00001"))
        let terminal = try CVCertificate(bytes: try Self.sample("UTIS0000001"))
        let chain = try CVCertificateChain.build(to: ["UTCVCA00001"], from: [certificate, dv], terminal: terminal)
        let rights = try chain.verify(trustPointKey: certificate.publicKey, on: try #require(CVDate("261124")))
        #expect(rights.readsDG3 && rights.readsDG4)
    }

    @Test("truncations and single-byte changes never crash; a refusal names a field")
    func mutations() throws {
        let sample = try Self.sample()
        var refused = 0
        var stillVerifying: [Int] = []
        for length in stride(from: 0, to: sample.count, by: 3) {
            #expect(throws: CVCertificateError.self) { try CVCertificate(bytes: Array(sample.prefix(length))) }
        }
        for index in sample.indices {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var bytes = sample
                bytes[index] ^= flip
                do {
                    let parsed = try CVCertificate(bytes: bytes)
                    // What still parses must fail its signature.
                    if (try? parsed.verifySignature(issuerKey: parsed.publicKey)) != nil { stillVerifying.append(index) }
                } catch {
                    #expect(!error.field.isEmpty && !error.reason.isEmpty)
                    refused += 1
                }
            }
        }
        #expect(refused > 0)
        #expect(stillVerifying.isEmpty, "a changed certificate still verifies (byte \(stillVerifying))")
    }

    @Test func datesAreBCDCalendarDates() {
        #expect(CVDate("300229") == nil)  // 2030 is no leap year
        #expect(CVDate("280229")?.description == "2028-02-29")
        #expect(CVDate("301301") == nil && CVDate("3012") == nil && CVDate("３01231") == nil)
    }
}
