import CVCertificates
import Foundation
import LDS
import MRTDCrypto
import TestSupport
import Testing

/// BSI's Worked Example for Extended Access Control v1.02 (section 4, Terminal Authentication on
/// brainpoolP512r1, ECDSA SHA-512), byte for byte: its certificates parse and encode back to the
/// same bytes, each is signed by the one above it, the terminal key is the certificate's, and the
/// example's own terminal signature verifies over the message we build from the example's keys —
/// ID_PICC = Comp(the chip's ephemeral PACE key), r_PICC, Comp(Chip Authentication's ephemeral
/// terminal key).
@Suite("BSI EAC worked example: Terminal Authentication")
struct EACWorkedExampleTests {
    static func file(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: TestFixtures.url("cvc/worked-example/\(name)")))
    }

    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
    }

    /// PK_PICC of PACE (brainpoolP256r1, parameter id 13): the example's chip ephemeral key.
    static let paceChipKey = hex("""
        04 282CF380 73036AFA C216AF13 5BD994DA 0C357F10 BD4C34AF EA1042B2 EB0FD680
           4DF3658B 835AC2E7 133F1369 1184542B B50B1099 63A4662A BDC08B97 63AF4B5B
        """)
    /// PK_PCD of Chip Authentication: the terminal's ephemeral key.
    static let chipAuthenticationTerminalKey = hex("""
        04 5A7A377F C9CAFC03 AC7FF454 41A8B290 9D88EAB8 E6B01738 47AB49B9 49DF3799
           A34EE57E C55268CF 8B1C3EC4 89F8BF4C F4C68D3F D9670E89 C0D5D3FF F1AAF89F
        """)
    static let challenge = hex("547E4EAB03B235D2")
    static let signature = hex("""
        81A2D9E5891B86A0F01ADD0341C89D6E9EF3E20C223884F27B2F2040E9721C46C9C3CF7C0EE0A422263BA6F1EAFC693B
        D8738F34760B5998584F58DD25B8D60D99D7C45957C2E2F10C0E5F91A8DC88BD7CFA33CBF784A9DA83C8003241651 79D
        BE71C69B2C0FD811270E436C43278184DDB542142342DBF156E82D2A1BC19085
        """)

    @Test func theCertificatesParseAndEncodeBackByteForByte() throws {
        for (name, holder, authority) in [("DECVCAAT00001", "DECVCAAT00001", "DECVCAAT00001"), ("DETESTDVDE019", "DETESTDVDE019", "DECVCAAT00001"),
                                          ("DETESTATDE019", "DETESTATDE019", "DETESTDVDE019")] {
            let bytes = try Self.file("\(name).cvcert")
            let certificate = try CVCertificate(bytes: bytes)
            #expect(certificate.holderReference == holder && certificate.authorityReference == authority)
            #expect(certificate.encoded == bytes, "\(name) re-encodes to the same bytes")
            #expect(certificate.publicKey.algorithm == .ecdsaSHA512)
        }
        let cvca = try CVCertificate(bytes: try Self.file("DECVCAAT00001.cvcert"))
        #expect(cvca.authorization.role == .cvca && cvca.authorization.readsDG3 && cvca.authorization.readsDG4)
        #expect(cvca.effectiveDate == CVDate("100930") && cvca.expirationDate == CVDate("110925"))
    }

    @Test func eachCertificateIsSignedByTheOneAbove() throws {
        let cvca = try CVCertificate(bytes: try Self.file("DECVCAAT00001.cvcert"))
        let dv = try CVCertificate(bytes: try Self.file("DETESTDVDE019.cvcert"))
        let terminal = try CVCertificate(bytes: try Self.file("DETESTATDE019.cvcert"))
        try cvca.verifySignature(issuerKey: cvca.publicKey)
        try dv.verifySignature(issuerKey: cvca.publicKey)
        // The DV's key has no domain parameters: it takes the CVCA's (TR-03110-3 D.3.3).
        try terminal.verifySignature(issuerKey: dv.publicKey.inheriting(from: cvca.publicKey))
        // A signature checked with the wrong key fails.
        #expect(throws: CVCertificateError.self) { try terminal.verifySignature(issuerKey: cvca.publicKey) }
    }

    @Test func theExamplesTerminalSignatureVerifiesOverTheMessageWeBuild() throws {
        let cvca = try CVCertificate(bytes: try Self.file("DECVCAAT00001.cvcert"))
        let dv = try CVCertificate(bytes: try Self.file("DETESTDVDE019.cvcert"))
        let terminal = try CVCertificate(bytes: try Self.file("DETESTATDE019.cvcert"))
        let key = try terminal.publicKey.inheriting(from: dv.publicKey.inheriting(from: cvca.publicKey)).publicKey()
        let domain = try #require(PACEDomain.standardized(13))
        let chipIdentifier = PACE.compressed(Self.paceChipKey, domain: domain)
        let ephemeral = PACE.compressed(Self.chipAuthenticationTerminalKey, domain: domain)
        #expect(chipIdentifier == Self.hex("282CF38073036AFAC216AF135BD994DA0C357F10BD4C34AFEA1042B2EB0FD680"))
        #expect(Self.signature.count == 128)
        let message = chipIdentifier + Self.challenge + ephemeral
        #expect(terminal.publicKey.algorithm.verify(Self.signature, over: message, with: key))
        // One bit off anywhere and it does not.
        var wrongChallenge = Self.challenge
        wrongChallenge[0] ^= 1
        #expect(!terminal.publicKey.algorithm.verify(Self.signature, over: chipIdentifier + wrongChallenge + ephemeral, with: key))
    }

    @Test func theExamplesTerminalKeyLoadsAndSignsForItsCertificate() async throws {
        let url = TestFixtures.url("cvc/worked-example/DETESTATDE019.pkcs8")
        let signer = try PrivateKeySigner(contentsOf: url)
        let cvca = try CVCertificate(bytes: try Self.file("DECVCAAT00001.cvcert"))
        let dv = try CVCertificate(bytes: try Self.file("DETESTDVDE019.cvcert"))
        let terminal = try CVCertificate(bytes: try Self.file("DETESTATDE019.cvcert"))
        let key = try terminal.publicKey.inheriting(from: dv.publicKey.inheriting(from: cvca.publicKey)).publicKey()
        let message = Self.hex("282CF38073036AFAC216AF135BD994DA0C357F10BD4C34AFEA1042B2EB0FD680") + Self.challenge
        let signature = try await signer.sign(message, algorithm: .ecdsaSHA512)
        #expect(signature.count == 128, "plain r ‖ s on a 512-bit curve")
        #expect(terminal.publicKey.algorithm.verify(signature, over: message, with: key))
    }
}
