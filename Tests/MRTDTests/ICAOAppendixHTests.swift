import MRTDCrypto
import SmartCard
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// ICAO Doc 9303 Part 11, Appendix H: PACE Integrated Mapping, ECDH example (brainpoolP256r1,
/// AES-128), byte for byte. Covers the mapping primitives (R(s, t), the point encoding of
/// Appendix B.2) and the key agreement on the mapped generator.
@Suite("ICAO 9303-11 Appendix H (PACE ECDH-IM, brainpoolP256r1)")
struct ICAOAppendixHTests {
    let curve = EllipticCurve.brainpoolP256r1
    let protocolID = PACE.ProtocolID(oid: "0.4.0.127.0.7.2.2.4.4.2")!

    @Test func protocolAndNonce() throws {
        #expect(protocolID.keyAgreement == .ecdh && protocolID.mapping == .integratedMapping && protocolID.keyType == .aes128)
        #expect("\(protocolID)" == "PACE-ECDH-IM-AES-128")
        #expect(try PACE.decryptNonce(h("143DC40C 08C8E891 FBED7DED B92B64AD"), passwordKey: h("591468CD A83D6521 9CCCB856 0233600F"),
                                      type: .aes128) == h("2923BE84 E16CD6AE 529049F1 F1BBE9EB"))
    }

    @Test func pseudoRandomMappingAndPointEncoding() throws {
        let random = try PACE.integratedMappingRandom(chipNonce: h("2923BE84 E16CD6AE 529049F1 F1BBE9EB"),
                                                      terminalNonce: h("5DD4CBFC 96F5453B 130D890A 1CDBAE32"),
                                                      type: .aes128, primeBits: 256)
        #expect(random == h("E4447E2D FB3586BA C05DDB00 156B57FB B2179A39 49294C97 25418980 0C517BAA 8DA0FF39 7ED8C445 D3E421E4 FEB57322"))
        let mapped = try curve.integratedMappingPoint(random)
        #expect(mapped == h("04 8E82D315 59ED0FDE 92A4D049 8ADD3C23 BABA94FB 77691E31 E90AEA77 FB17D427 4C1AE14B D0C3DBAC 0C871B7F 36081693 64437CA3 0AC243A0 89D3F266 C1E60FAD"))
        #expect(curve.isValidPoint(mapped))
        // R mod p, given in the example, encodes to the same point.
        #expect(try curve.integratedMappingPoint(h("A2F8FF2D F50E52C6 599F386A DCB595D2 29F6A167 ADE2BE5F 2C3296AD D5B7430E")) == mapped)
    }

    @Test func keyAgreementOnTheMappedGenerator() throws {
        let mapped = h("04 8E82D315 59ED0FDE 92A4D049 8ADD3C23 BABA94FB 77691E31 E90AEA77 FB17D427 4C1AE14B D0C3DBAC 0C871B7F 36081693 64437CA3 0AC243A0 89D3F266 C1E60FAD")
        let skPCD = h("A73FB703 AC1436A1 8E0CFA5A BB3F7BEC 7A070E7A 6788486B EE230C4A 22762595")
        let pkPCD = try curve.multiply(skPCD, generator: mapped)
        #expect(pkPCD == h("04 89CBA23F FE96AA18 D824627C 3E934E54 A9FD0B87 A95D1471 DC1C0ABF DCD640D4 6755DE9B 7B778280 B6BEBD57 439ADFEB 0E21FD4E D6DF4257 8C13418A 59B34C37"))
        let pkIC = h("04 67F78E5F 7F768608 2B293E8D 087E0569 16D0F74B C01A5F89 57D0DE45 691E51E8 932B69A9 62B52A09 85AD2C0A 271EE6A1 3A8ADDDC D1A3A994 B9DED257 F4D22753")
        let shared = try curve.xCoordinate(try curve.multiply(skPCD, point: pkIC, generator: mapped))
        #expect(shared == h("4F150FDE 1D4F0E38 E95017B8 91BAE171 33A0DF45 B0D3E18B 60BA7BEA FDC2C713"))
        let keys = PACE.sessionKeys(sharedSecret: shared, type: .aes128)
        #expect(keys.encryption == h("0D3FEB33 251A6370 893D62AE 8DAAF51B"))
        #expect(keys.mac == h("B01E89E3 D9E8719E 586B50B4 A7506E0B"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: pkIC,
                                             keyAgreement: .ecdh) == h("450F02B8 6F6A0909"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: pkPCD,
                                             keyAgreement: .ecdh) == h("75D4D96E 8D5B0308"))
    }

    @Test func unsupportedCasesAreTypedErrors() {
        #expect(throws: CryptoError.self) { _ = try EllipticCurve.nistP224.integratedMappingPoint([UInt8](repeating: 7, count: 40)) }
        #expect(throws: CryptoError.self) { _ = try curve.integratedMappingPoint([0]) }
        // Nonces of the wrong length for the cipher: s is 16 bytes for 3DES/AES-128 and 32 for
        // AES-192/256, t as long as the key.
        #expect(throws: CryptoError.self) {
            _ = try PACE.integratedMappingRandom(chipNonce: [UInt8](repeating: 1, count: 16), terminalNonce: [UInt8](repeating: 2, count: 16),
                                                 type: .aes256, primeBits: 256)
        }
        #expect(throws: CryptoError.self) {
            _ = try PACE.integratedMappingRandom(chipNonce: [UInt8](repeating: 1, count: 16), terminalNonce: [UInt8](repeating: 2, count: 8),
                                                 type: .tripleDES, primeBits: 256)
        }
    }

    /// R(s, t) for the other ciphers: the lengths follow l (16 or 32 bytes per block of output)
    /// and n = ⌈(log₂ p + 64) / l⌉; keys are truncated to the cipher's key length.
    @Test("R(s, t) has n·l bits for every cipher", arguments: [
        (KeyDerivation.KeyType.tripleDES, 16, 256, 3 * 16), (.aes128, 16, 521, 5 * 16), (.aes192, 32, 256, 2 * 32),
        (.aes256, 32, 512, 3 * 32), (.aes256, 32, 2048, 9 * 32),
    ])
    func randomLengths(type: KeyDerivation.KeyType, nonceLength: Int, primeBits: Int, expected: Int) throws {
        let s = [UInt8](repeating: 0x5A, count: nonceLength)
        let t = [UInt8](repeating: 0xA5, count: type.keyLength)
        let random = try PACE.integratedMappingRandom(chipNonce: s, terminalNonce: t, type: type, primeBits: primeBits)
        #expect(random.count == expected)
        // Deterministic, and every output block differs from the others.
        #expect(try PACE.integratedMappingRandom(chipNonce: s, terminalNonce: t, type: type, primeBits: primeBits) == random)
        let blocks = stride(from: 0, to: random.count, by: nonceLength).map { Array(random[$0..<($0 + nonceLength)]) }
        #expect(Set(blocks.map { $0.description }).count == blocks.count)
    }
}

/// ICAO Doc 9303 Part 11, Appendix H: PACE Integrated Mapping, DH example (RFC 5114 1024-bit
/// MODP group with 160-bit subgroup, AES-128), byte for byte.
@Suite("ICAO 9303-11 Appendix H (PACE DH-IM, 1024-bit MODP)")
struct ICAOAppendixHDHTests {
    let group = DiffieHellmanGroup.rfc5114(parameterId: 0)!
    let protocolID = PACE.ProtocolID(oid: "0.4.0.127.0.7.2.2.4.3.2")!

    let s = "FA5B7E3E 49753A0D B9178B7B 9BD898C8"
    let t = "B3A6DB3C 870C3E99 245E0D1C 06B747DE"
    let mapped = """
        1D7D767F 11E333BC D6DBAEF4 0E799E7A 926B9697 3550656F F3C83072 6D118D61 C276CDCC 61D475CF 03A98E0C 0E79CAEB
        A5BE2557 8BD4551D 0B109032 36F0B0F9 76852FA7 8EEA14EA 0ACA87D1 E91F688F E0DFF897 BBE35A47 2621D343 564B262F
        34223AE8 FC59B664 BFEDFA2B FE7516CA 5510A6BB B633D517 EC25D4E0 BBAA16C2
        """
    let chipPublic = """
        928D9A0F 9DBA450F 13FC859C 6F290D1D 36E42431 138A4378 500BEB4E 0401854C FF111F71 CB6DC1D0 335807A1 1388CC8E
        AA87B079 07AAD9FB A6B169AF 6D8C26AF 8DDDC39A DC3AD2E3 FF882B84 D23E9768 E95A80E4 746FB07A 9767679F E92133B4
        D379935C 771BD7FB ED6C7BB4 B1708B27 5EA75679 524CDC9C 6A91370C C662A2F3
        """
    let terminalPublic = """
        0F0CC629 45A80292 51FB7EF3 C094E12E C68E4EF0 7F27CB9D 9CD04C5C 4250FAE0 E4F8A951 557E929A EB48E5C6 DD47F2F5
        CD7C351A 9BD2CD72 2C07EDE1 66770F08 FFCB3702 62CF308D D7B07F2E 0DA9CAAA 1492344C 85290691 9538C98A 4BA4187E
        76CE9D87 832386D3 19CE2E04 3C3343AE AE6EDBA1 A9894DC5 094D22F7 FE1351D5
        """

    @Test func protocolAndNonce() throws {
        #expect(protocolID.keyAgreement == .dh && protocolID.mapping == .integratedMapping && protocolID.keyType == .aes128)
        #expect("\(protocolID)" == "PACE-DH-IM-AES-128")
        #expect(try PACE.decryptNonce(h("9ABB8864 CA0FF155 1E620D1E F4E13510"), passwordKey: h("591468CD A83D6521 9CCCB856 0233600F"),
                                      type: .aes128) == h(s))
    }

    @Test func pseudoRandomMappingAndGenerator() throws {
        let random = try PACE.integratedMappingRandom(chipNonce: h(s), terminalNonce: h(t), type: .aes128, primeBits: group.bits)
        #expect(group.bits == 1024)
        #expect(random == h("""
            EAB98D13 E0905295 2AA72990 7C3C9461 84DEA0FE 74AD2B3A F506F0A8 3018459C 38099CD1 F7FF4EA0 A078DB1F AC136550
            5E3DC855 00EF95E2 0B4EEF2E 88489233 BEE0546B 472F994B 618D1687 02406791 DEEF3CB4 810932EC 278F3533 FDB860EB
            4835C36F A4F1BF3F A0B828A7 18C96BDE 88FBA38A 3E6C35AA A1095925 1EB5FC71 0FC18725 8995944C 0F926E24 9373F485
            """))
        let generator = try group.integratedMappingGenerator(random)
        #expect(generator == h(mapped))
        // R mod p, as the example gives it, maps to the same generator.
        let reduced = h("""
            A0C7C50C 002061A5 1CC87D25 4EF38068 607417B6 EE1B3647 3CFB800D 2D2E5FA2 B6980F01 105D24FA B22ACD1B FA5C8A4C
            093ECDFA FE6D7125 D42A843E 33860383 5CF19AFA FF75EFE2 1DC5F6AA 1F9AE46C 25087E73 68166FB0 8C1E4627 AFED7D93
            570417B7 90FF7F74 7E57F432 B04E1236 819E0DFE F5B6E77C A4999925 328182D2
            """)
        #expect(try group.integratedMappingGenerator(reduced) == generator)
        #expect(try PACEDomain.dh(group).mapIntegrated(chipNonce: h(s), terminalNonce: h(t), type: .aes128) == generator)
        // The mapped generator lies in the subgroup of order q.
        #expect(group.isValidPublicKey(generator))
    }

    @Test func keyAgreementOnTheMappedGenerator() throws {
        let skPCD = h("""
            4BD0E547 40F9A028 E6A515BF DAF96784 8C4F5F5F FF65AA09 15947FFD 1A0DF2FA 6981271B C905F355 1457B7E0 3AC3B806
            6DE4AA40 6C1171FB 43DD939C 4BA16175 103BA3DE E16419AA 248118F9 0CC36A3D 6F4C3736 52E0C3CC E7F0F1D0 C5425B36
            00F0F0D6 A67F004C 8BBA33F2 B4733C72 52445C1D FC4F1107 203F71D2 EFB28161
            """)
        #expect(try group.power(h(mapped), skPCD) == h(terminalPublic))
        let shared = try group.power(h(chipPublic), skPCD)
        #expect(shared == h("""
            419410D6 C0A17A4C 07C54872 CE1CBCEB 0A2705C1 A434C8A8 9A4CFE41 F1D78124 CA7EC52B DE7615E5 345E48AB 1ABB6E7D
            1D59A57F 3174084D 3CA45703 97C1F622 28BDFDB2 DA191EA2 239E2C06 0DBE3BBC 23C2FCD0 AF12E0F9 E0B99FCF 91FF1959
            011D5798 B2FCBC1F 14FCC24E 441F4C8F 9B08D977 E9498560 E63E7FFA B3134EA7
            """))
        let keys = PACE.sessionKeys(sharedSecret: shared, type: .aes128)
        #expect(keys.encryption == h("01AFC10C F87BE36D 8179E873 70171F07"))
        #expect(keys.mac == h("23F0FBD0 5FD6C7B8 B88F4C83 09669061"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: h(chipPublic),
                                             keyAgreement: .dh) == h("55D61977 CBF5307E"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: h(terminalPublic),
                                             keyAgreement: .dh) == h("C2F04230 187E1525"))
    }

    @Test func aTrivialGeneratorIsRefused() {
        // x = 1 maps to ĝ = 1 and x ≡ 0 mod p to 0: neither is a usable generator.
        #expect(throws: CryptoError.self) { _ = try group.integratedMappingGenerator([1]) }
        #expect(throws: CryptoError.self) { _ = try group.integratedMappingGenerator(group.p) }
    }
}
