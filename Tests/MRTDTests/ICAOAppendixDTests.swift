import MRTDCrypto
import SmartCard
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// ICAO Doc 9303 Part 11, Appendix D: the worked example of BAC and secure messaging, byte for byte.
@Suite("ICAO 9303-11 Appendix D (BAC and 3DES secure messaging)")
struct ICAOAppendixDTests {
    let keys = BAC.Keys(keySeed: h("239AB9CB282DAF66231DC5A4DF6BFBAE"))
    let rndIC = h("4608F91988702212")
    let rndIFD = h("781723860C06C226")
    let kIFD = h("0B795240CB7049B01C19B33E32804F0B")

    @Test func keySeedFromMRZInformation() {
        #expect(KeyDerivation.bacKeySeed(mrzInformation: "L898902C<369080619406236") == h("239AB9CB282DAF66231DC5A4DF6BFBAE"))
    }

    @Test func staticKeys() {
        #expect(keys.encryption == h("AB94FDECF2674FDFB9B391F85D7F76F2"))
        #expect(keys.mac == h("7962D9ECE03D1ACD4C76089DCE131543"))
    }

    @Test func externalAuthenticateCommandData() throws {
        let data = try BAC.authenticationData(keys: keys, rndIFD: rndIFD, rndIC: rndIC, kIFD: kIFD)
        #expect(Array(data[0..<32]) == h("72C29C2371CC9BDB65B779B8E8D37B29ECC154AA56A8799FAE2F498F76ED92F2"))
        #expect(Array(data[32...]) == h("5F1448EEA8AD90A7"))
    }

    @Test func chipResponseAndSessionKeys() throws {
        let response = h("46B9342A41396CD7386BF5803104D7CEDC122B9132139BAF2EEDC94EE178534F2F2D235D074D7449")
        let r = try BAC.verifyChipResponse(keys: keys, response: response, rndIFD: rndIFD, rndIC: rndIC)
        #expect(r == h("4608F91988702212781723860C06C2260B4F80323EB3191CB04970CB4052790B"))
        let kIC = Array(r[16..<32])
        #expect(kIC == h("0B4F80323EB3191CB04970CB4052790B"))
        let session = BAC.session(kIFD: kIFD, kIC: kIC, rndIC: rndIC, rndIFD: rndIFD)
        #expect(session.encryptionKey == h("979EC13B1CBFE9DCD01AB0FED307EAE5"))
        #expect(session.macKey == h("F1CB1F1FB5ADF208806B89DC579DC1F8"))
        #expect(session.ssc == h("887022120C06C226"))
    }

    @Test func tamperedChipResponseIsAccessDenied() {
        var response = h("46B9342A41396CD7386BF5803104D7CEDC122B9132139BAF2EEDC94EE178534F2F2D235D074D7449")
        response[3] ^= 1
        #expect(throws: MRTDError.self) {
            _ = try BAC.verifyChipResponse(keys: keys, response: response, rndIFD: rndIFD, rndIC: rndIC)
        }
    }

    func session() -> SecureMessaging {
        SecureMessaging.tripleDES(keySeed: h("0036D272F5C350ACAC50C3F572D23600"), ssc: h("887022120C06C226"))
    }

    @Test func protectedSelectAndReadBinary() throws {
        var sm = session()
        // SELECT EF.COM
        let select = try sm.protect(CommandAPDU(ins: 0xA4, p1: 0x02, p2: 0x0C, data: h("011E")))
        #expect(try select.encoded() == h("0CA4020C158709016375432908C044F68E08BF8B92D635FF24F800"))
        let selectResponse = try sm.unprotect(ResponseAPDU(bytes: h("990290008E08FA855A5D4C50A8ED9000")))
        #expect(selectResponse.statusWord == .success && selectResponse.data.isEmpty)

        // READ BINARY of the first four bytes
        let read = try sm.protect(.readBinary(offset: 0, length: 4))
        #expect(try read.encoded() == h("0CB000000D9701048E08ED6705417E96BA5500"))
        let readResponse = try sm.unprotect(ResponseAPDU(bytes: h("8709019FF0EC34F9922651990290008E08AD55CC17140B2DED9000")))
        #expect(readResponse.data == h("60145F01"))

        // READ BINARY of the remaining 18 bytes from offset 4
        let rest = try sm.protect(.readBinary(offset: 4, length: 0x12))
        #expect(try rest.encoded() == h("0CB000040D9701128E082EA28A70F3C7B53500"))
        let restResponse = try sm.unprotect(ResponseAPDU(bytes: h("871901FB9235F4E4037F2327DCC8964F1F9B8C30F42C8E2FFF224A990290008E08C8B2787EAEA07D749000")))
        #expect(restResponse.data == h("04303130365F36063034303030305C026175"))
        #expect(sm.ssc == h("887022120C06C22C"))
    }

    @Test func badResponseMACReturnsNoData() throws {
        var sm = session()
        _ = try sm.protect(CommandAPDU(ins: 0xA4, p1: 0x02, p2: 0x0C, data: h("011E")))
        _ = try sm.unprotect(ResponseAPDU(bytes: h("990290008E08FA855A5D4C50A8ED9000")))
        _ = try sm.protect(.readBinary(offset: 0, length: 4))
        var tampered = h("8709019FF0EC34F9922651990290008E08AD55CC17140B2DED9000")
        tampered[20] ^= 0x01  // inside the MAC
        #expect(throws: MRTDError.self) { _ = try sm.unprotect(ResponseAPDU(bytes: tampered)) }
        #expect(throws: MRTDError.self) { _ = try sm.unprotect(ResponseAPDU(bytes: h("6988"))) }
    }

    @Test func chipRoleMirrorsTheReaderRole() throws {
        // The chip's view of the same exchange: it checks the reader's commands and produces the
        // exact responses of the worked example.
        var chip = session()
        let select = try chip.unprotectCommand(CommandAPDU(bytes: h("0CA4020C158709016375432908C044F68E08BF8B92D635FF24F800")))
        #expect(select.ins == 0xA4 && select.data == h("011E") && select.cla == 0)
        #expect(try chip.protectResponse(ResponseAPDU(statusWord: .success)).bytes == h("990290008E08FA855A5D4C50A8ED9000"))
        let read = try chip.unprotectCommand(CommandAPDU(bytes: h("0CB000000D9701048E08ED6705417E96BA5500")))
        #expect(read.ne == 4 && read.p2 == 0)
        #expect(try chip.protectResponse(ResponseAPDU(data: h("60145F01"), statusWord: .success)).bytes ==
                h("8709019FF0EC34F9922651990290008E08AD55CC17140B2DED9000"))
        // A command with a wrong MAC is refused.
        var tampered = h("0CB000040D9701128E082EA28A70F3C7B53500")
        tampered[12] ^= 0xFF
        #expect(throws: MRTDError.self) { _ = try chip.unprotectCommand(CommandAPDU(bytes: tampered)) }
    }
}
