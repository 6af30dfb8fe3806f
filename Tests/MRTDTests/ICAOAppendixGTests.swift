import MRTDCrypto
import SmartCard
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// ICAO Doc 9303 Part 11, Appendix G.1: PACE with ECDH generic mapping on brainpoolP256r1 and
/// AES-128, byte for byte.
@Suite("ICAO 9303-11 Appendix G.1 (PACE ECDH-GM, brainpoolP256r1)")
struct ICAOAppendixG1Tests {
    let curve = EllipticCurve.brainpoolP256r1
    let protocolID = PACE.ProtocolID(oid: "0.4.0.127.0.7.2.2.4.2.2")!
    let key = try! AccessKey.fields(documentNumber: "T22000129", dateOfBirth: "640812", dateOfExpiry: "101031")

    func point(_ x: String, _ y: String) -> [UInt8] { [0x04] + h(x) + h(y) }

    @Test func protocolIdentifier() {
        #expect(protocolID.keyAgreement == .ecdh && protocolID.mapping == .genericMapping && protocolID.keyType == .aes128)
        #expect("\(protocolID)" == "PACE-ECDH-GM-AES-128")
        #expect(PACE.curve(parameterId: 13) == curve)
    }

    @Test func passwordAndNonce() throws {
        #expect(key.mrzInformation == "T22000129364081251010318")
        let kPi = PACE.passwordKey(key, type: .aes128)
        #expect(kPi == h("89DED1B26624EC1E634C1989302849DD"))
        #expect(try PACE.decryptNonce(h("95A3A016522EE98D01E76CB6B98B42C3"), passwordKey: kPi, type: .aes128)
                == h("3F00C4D39D153F2B2A214A078D899B22"))
    }

    @Test func mappingKeyAgreementAndTokens() throws {
        let s = h("3F00C4D39D153F2B2A214A078D899B22")
        // Mapping: both sides' keys on the standard generator, H = SK_PCD · PK_IC.
        let skMapPCD = h("7F4EF07B9EA82FD78AD689B38D0BC78CF21F249D953BC46F4C6E19259C010F99")
        let pkMapPCD = try curve.multiply(skMapPCD)
        #expect(pkMapPCD == point("7ACF3EFC982EC45565A4B155129EFBC74650DCBFA6362D896FC70262E0C2CC5E",
                                  "544552DCB6725218799115B55C9BAA6D9F6BC3A9618E70C25AF71777A9C4922D"))
        let skMapIC = h("498FF49756F2DC1587840041839A85982BE7761D14715FB091EFA7BCE9058560")
        let pkMapIC = try curve.multiply(skMapIC)
        #expect(pkMapIC == point("824FBA91C9CBE26BEF53A0EBE7342A3BF178CEA9F45DE0B70AA601651FBA3F57",
                                 "30D8C879AAA9C9F73991E61B58F4D52EB87A0A0C709A49DC63719363CCD13C54"))
        let sharedH = try curve.multiply(skMapPCD, point: pkMapIC)
        #expect(sharedH == point("60332EF2450B5D247EF6D3868397D398852ED6E8CAF6FFEEF6BF85CA57057FD5",
                                 "0840CA7415BAF3E43BD414D35AA4608B93A2CAF3A4E3EA4E82C9C13D03EB7181"))
        #expect(try curve.multiply(skMapIC, point: pkMapPCD) == sharedH)
        let mapped = try curve.multiplyAdd(s, point: sharedH)
        #expect(mapped == point("8CED63C91426D4F0EB1435E7CB1D74A46723A0AF21C89634F65A9AE87A9265E2",
                                "8C879506743F8611AC33645C5B985C80B5F09A0B83407C1B6A4D857AE76FE522"))

        // Key agreement on the mapped generator.
        let skPCD = h("A73FB703AC1436A18E0CFA5ABB3F7BEC7A070E7A6788486BEE230C4A22762595")
        let pkPCD = try curve.multiply(skPCD, generator: mapped)
        #expect(pkPCD == point("2DB7A64C0355044EC9DF190514C625CBA2CEA48754887122F3A5EF0D5EDD301C",
                               "3556F3B3B186DF10B857B58F6A7EB80F20BA5DC7BE1D43D9BF850149FBB36462"))
        let skIC = h("107CF58696EF6155053340FD633392BA81909DF7B9706F226F32086C7AFF974A")
        let pkIC = try curve.multiply(skIC, generator: mapped)
        #expect(pkIC == point("9E880F842905B8B3181F7AF7CAA9F0EFB743847F44A306D2D28C1D9EC65DF6DB",
                              "7764B22277A2EDDC3C265A9F018F9CB852E111B768B326904B59A0193776F094"))
        let shared = try curve.xCoordinate(try curve.multiply(skPCD, point: pkIC, generator: mapped))
        #expect(shared == h("28768D20701247DAE81804C9E780EDE582A9996DB4A315020B2733197DB84925"))
        #expect(try curve.xCoordinate(try curve.multiply(skIC, point: pkPCD, generator: mapped)) == shared)

        let keys = PACE.sessionKeys(sharedSecret: shared, type: .aes128)
        #expect(keys.encryption == h("F5F0E35C0D7161EE6724EE513A0D9A7F"))
        #expect(keys.mac == h("FE251C7858B356B24514B3BD5F4297D1"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: pkIC,
                                             keyAgreement: .ecdh) == h("C2B0BD78D94BA866"))
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: pkPCD,
                                             keyAgreement: .ecdh) == h("3ABB9674BCE93C08"))
    }

    @Test func curvesAndKeyGeneration() throws {
        for id in 8...18 {
            let curve = try #require(PACE.curve(parameterId: id))
            let (privateKey, publicKey) = try curve.generateKeyPair()
            #expect(curve.isValidPoint(publicKey), "\(curve)")
            #expect(privateKey.count == curve.fieldSize || id == 18)
            #expect(try curve.multiply(privateKey) == publicKey)
        }
        #expect(!EllipticCurve.nistP256.isValidPoint([0x04] + [UInt8](repeating: 1, count: 64)))
        #expect(throws: CryptoError.self) { _ = try EllipticCurve.nistP256.multiply([1], point: [0x04, 0x01]) }
    }
}
