import MRTDCrypto
import SmartCard
import Testing
@testable import MRTD

/// ICAO Doc 9303 Part 11, Appendix H: PACE Integrated Mapping, ECDH example (brainpoolP256r1,
/// AES-128), byte for byte. Covers the mapping primitives (R(s, t), the point encoding of
/// Appendix B.2) and the key agreement on the mapped generator.
@Suite("ICAO 9303-11 Appendix H (PACE ECDH-IM, brainpoolP256r1)")
struct ICAOAppendixHTests {
    let curve = EllipticCurve.brainpoolP256r1
    let protocolID = PACE.ProtocolID(oid: "0.4.0.127.0.7.2.2.4.4.2")!

    func x(_ text: String) -> [UInt8] { h(text.replacingOccurrences(of: " ", with: "")) }

    @Test func protocolAndNonce() throws {
        #expect(protocolID.keyAgreement == .ecdh && protocolID.mapping == .integratedMapping && protocolID.keyType == .aes128)
        #expect("\(protocolID)" == "PACE-ECDH-IM-AES-128")
        #expect(try PACE.decryptNonce(x("143DC40C 08C8E891 FBED7DED B92B64AD"), passwordKey: x("591468CD A83D6521 9CCCB856 0233600F"),
                                      type: .aes128) == x("2923BE84 E16CD6AE 529049F1 F1BBE9EB"))
    }

    @Test func pseudoRandomMappingAndPointEncoding() throws {
        let random = try PACE.integratedMappingRandom(chipNonce: x("2923BE84 E16CD6AE 529049F1 F1BBE9EB"),
                                                      terminalNonce: x("5DD4CBFC 96F5453B 130D890A 1CDBAE32"),
                                                      type: .aes128, primeBits: 256)
        #expect(random == x("E4447E2D FB3586BA C05DDB00 156B57FB B2179A39 49294C97 25418980 0C517BAA 8DA0FF39 7ED8C445 D3E421E4 FEB57322"))
        let mapped = try curve.integratedMappingPoint(random)
        #expect(mapped == x("04 8E82D315 59ED0FDE 92A4D049 8ADD3C23 BABA94FB 77691E31 E90AEA77 FB17D427 4C1AE14B D0C3DBAC 0C871B7F 36081693 64437CA3 0AC243A0 89D3F266 C1E60FAD"))
        #expect(curve.isValidPoint(mapped))
        // R mod p, given in the example, encodes to the same point.
        #expect(try curve.integratedMappingPoint(x("A2F8FF2D F50E52C6 599F386A DCB595D2 29F6A167 ADE2BE5F 2C3296AD D5B7430E")) == mapped)
    }

    @Test func keyAgreementOnTheMappedGenerator() throws {
        let mapped = x("04 8E82D315 59ED0FDE 92A4D049 8ADD3C23 BABA94FB 77691E31 E90AEA77 FB17D427 4C1AE14B D0C3DBAC 0C871B7F 36081693 64437CA3 0AC243A0 89D3F266 C1E60FAD")
        let skPCD = x("A73FB703 AC1436A1 8E0CFA5A BB3F7BEC 7A070E7A 6788486B EE230C4A 22762595")
        let pkPCD = try curve.multiply(skPCD, generator: mapped)
        #expect(pkPCD == x("04 89CBA23F FE96AA18 D824627C 3E934E54 A9FD0B87 A95D1471 DC1C0ABF DCD640D4 6755DE9B 7B778280 B6BEBD57 439ADFEB 0E21FD4E D6DF4257 8C13418A 59B34C37"))
        let pkIC = x("04 67F78E5F 7F768608 2B293E8D 087E0569 16D0F74B C01A5F89 57D0DE45 691E51E8 932B69A9 62B52A09 85AD2C0A 271EE6A1 3A8ADDDC D1A3A994 B9DED257 F4D22753")
        let shared = try curve.xCoordinate(try curve.multiply(skPCD, point: pkIC, generator: mapped))
        #expect(shared == x("4F150FDE 1D4F0E38 E95017B8 91BAE171 33A0DF45 B0D3E18B 60BA7BEA FDC2C713"))
        let keys = PACE.sessionKeys(sharedSecret: shared, type: .aes128)
        #expect(keys.encryption == x("0D3FEB33 251A6370 893D62AE 8DAAF51B"))
        #expect(keys.mac == x("B01E89E3 D9E8719E 586B50B4 A7506E0B"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: pkIC,
                                             keyAgreement: .ecdh) == x("450F02B8 6F6A0909"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: pkPCD,
                                             keyAgreement: .ecdh) == x("75D4D96E 8D5B0308"))
    }

    @Test func unsupportedCasesAreTypedErrors() {
        #expect(throws: CryptoError.self) { _ = try EllipticCurve.nistP224.integratedMappingPoint([UInt8](repeating: 7, count: 40)) }
        #expect(throws: CryptoError.self) { _ = try curve.integratedMappingPoint([0]) }
        #expect(throws: CryptoError.self) {
            _ = try PACE.integratedMappingRandom(chipNonce: [UInt8](repeating: 1, count: 16), terminalNonce: [UInt8](repeating: 2, count: 16),
                                                 type: .tripleDES, primeBits: 256)
        }
    }
}
