import Foundation
import MRTDCrypto
import SmartCard
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// A recorded PACE-CAM session with a real German eID card (Fixtures/traces/de-eid-pace-cam.txt):
/// with the terminal's keys of the recording, every value we compute — password key, nonce,
/// mapped generator, our public key, session keys, tokens, CAM — and every secure-messaging APDU
/// (AES-128: IV = E(KS_Enc, SSC), CMAC) must match what the terminal sent and verify what the
/// card answered, byte for byte.
@Suite("Real-chip trace: German eID, PACE-CAM + AES secure messaging")
struct RealChipTraceTests {
    let curve = EllipticCurve.brainpoolP256r1
    let protocolID = PACE.ProtocolID(oid: "0.4.0.127.0.7.2.2.4.6.2")!
    let key = try! AccessKey.fields(documentNumber: "C4KHNY1PF", dateOfBirth: "780214", dateOfExpiry: "330315")
    let mappingPrivate = h("01FD26013F5BC41FAD8BB09811E435F16FBE2EB3C2E1D999B0F63DA8C3D58BB5")
    let ephemeralPrivate = h("1FCD3D8AC4FAE3960A14FEA2925D75ADD335F13B248EBA192358DDED93A89552")

    struct Exchange {
        let command: [UInt8]
        let response: [UInt8]
    }

    func trace() throws -> [Exchange] {
        let text = try String(contentsOf: TestFixtures.url("traces/de-eid-pace-cam.txt"), encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains(">") }.map { line in
            let parts = line.split(separator: ">").map { $0.trimmingCharacters(in: .whitespaces) }
            return Exchange(command: h(parts[0]), response: h(parts[1]))
        }
    }

    /// The data objects inside 7C of a GENERAL AUTHENTICATE command or answer.
    func objects(_ bytes: [UInt8], response: Bool) throws -> [UInt32: [UInt8]] {
        let body = response ? Array(bytes.dropLast(2)) : Array(bytes[5..<(5 + Int(bytes[4]))])
        let outer = try BERTLV.parseSingle(body)
        #expect(outer.tag == 0x7C)
        var result: [UInt32: [UInt8]] = [:]
        for child in try outer.children() { result[child.tag] = child.value }
        return result
    }

    /// Runs PACE with the recording's keys and returns the session keys and the values CAM needs.
    func pace(_ exchanges: [Exchange]) throws -> (keys: (encryption: [UInt8], mac: [UInt8]), chipMapKey: [UInt8], camData: [UInt8]) {
        #expect(protocolID.mapping == .chipAuthenticationMapping && protocolID.keyType == .aes128)
        let domain = PACEDomain.ec(curve)
        let s = try PACE.decryptNonce(try objects(exchanges[1].response, response: true)[0x80]!,
                                      passwordKey: PACE.passwordKey(key, type: .aes128), type: .aes128)
        // Mapping: our public key is what the terminal sent; H from the card's mapping key.
        let sentMapKey = try objects(exchanges[2].command, response: false)[0x81]!
        #expect(try curve.multiply(mappingPrivate, generator: nil) == sentMapKey)
        let chipMapKey = try objects(exchanges[2].response, response: true)[0x82]!
        let generator = try domain.mapGeneric(nonce: s, shared: try domain.agree(privateKey: mappingPrivate, peer: chipMapKey))
        // Key agreement on the mapped generator.
        let sentKey = try objects(exchanges[3].command, response: false)[0x83]!
        #expect(try curve.multiply(ephemeralPrivate, generator: generator) == sentKey)
        let chipKey = try objects(exchanges[3].response, response: true)[0x84]!
        let shared = try domain.sharedSecret(privateKey: ephemeralPrivate, peer: chipKey, generator: generator)
        let keys = PACE.sessionKeys(sharedSecret: shared, type: .aes128)
        #expect(keys.encryption == h("A8E85E938514EC67AE33CDA3D43D3C48"))
        #expect(keys.mac == h("27F1ADEB705A049A305B0C619B14B9B3"))
        // Tokens both ways.
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: chipKey,
                                             keyAgreement: .ecdh) == objects(exchanges[4].command, response: false)[0x85]!)
        let answer = try objects(exchanges[4].response, response: true)
        #expect(try PACE.authenticationToken(macKey: keys.mac, type: .aes128, oid: protocolID.oid, otherPublicKey: sentKey,
                                             keyAgreement: .ecdh) == answer[0x86]!)
        return (keys, chipMapKey, answer[0x8A]!)
    }

    @Test func paceMatchesTheRecordingByteForByte() throws {
        _ = try pace(try trace())
    }

    /// Replays the secure-messaging part: protects our own plain commands (they must equal the
    /// recorded ones), unprotects the card's answers; returns EF.CardSecurity and the final SSC.
    func replaySecureMessaging(_ exchanges: [Exchange], keys: (encryption: [UInt8], mac: [UInt8])) throws -> (file: [UInt8], ssc: [UInt8]) {
        var session = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: .aes128)
        let protected = Array(exchanges[5...])
        // SELECT EF.CardSecurity (011D), then READ BINARY: 4 bytes, then 223 at a time.
        var plain = [CommandAPDU(ins: 0xA4, p1: 0x02, p2: 0x0C, data: [0x01, 0x1D])]
        var offset = 0
        for ne in [4] + [Int](repeating: 256, count: 8) + [0x4A] {
            plain.append(CommandAPDU(ins: 0xB0, p1: UInt8(offset >> 8), p2: UInt8(offset & 0xFF), ne: ne))
            offset += ne == 256 ? 0xDF : ne
        }
        #expect(plain.count == protected.count)
        var file: [UInt8] = []
        for (command, exchange) in zip(plain, protected) {
            #expect(try session.protect(command).encoded() == exchange.command)
            let answer = try session.unprotect(try ResponseAPDU(bytes: exchange.response))
            #expect(answer.statusWord == .success)
            if command.ins == 0xB0 { file += answer.data }
        }
        return (file, session.ssc)
    }

    @Test func aesSecureMessagingReproducesEveryCommandAndVerifiesEveryAnswer() throws {
        let exchanges = try trace()
        let (file, ssc) = try replaySecureMessaging(exchanges, keys: try pace(exchanges).keys)
        #expect(ssc == h("00000000000000000000000000000016"))
        #expect(file.count == 0x746)
        // What was read is the card's EF.CardSecurity: a signed security object.
        let signed = try CMSSignedData(bytes: file)
        #expect(signed.contentType == ChipAuthentication.cardSecurityContentType)
    }

    @Test func aTamperedAnswerIsRejectedAndYieldsNoData() throws {
        let exchanges = try trace()
        let (keys, _, _) = try pace(exchanges)
        var session = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: .aes128)
        _ = try session.protect(CommandAPDU(ins: 0xA4, p1: 0x02, p2: 0x0C, data: [0x01, 0x1D]))
        _ = try session.unprotect(try ResponseAPDU(bytes: exchanges[5].response))
        _ = try session.protect(CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 4))
        var tampered = exchanges[6].response
        tampered[5] ^= 0x01  // one bit of the cryptogram
        #expect { _ = try session.unprotect(try ResponseAPDU(bytes: tampered)) } throws: {
            ($0 as? MRTDError)?.code == .secureMessagingFailure
        }
    }

    @Test func chipAuthenticationMappingProvesTheCard() throws {
        let exchanges = try trace()
        let (keys, chipMapKey, camData) = try pace(exchanges)
        let file = try replaySecureMessaging(exchanges, keys: keys).file
        let outcome = PACE.verifyChipAuthenticationMapping(encryptedData: camData, chipMapKey: chipMapKey, cardSecurity: file,
                                                           curve: curve, encryptionKey: keys.encryption, type: .aes128)
        #expect(outcome.status == .valid, "\(outcome.detail)")
        // Another card's data (one bit off) does not prove this card.
        var other = camData
        other[other.count - 1] ^= 0x80
        let forged = PACE.verifyChipAuthenticationMapping(encryptedData: other, chipMapKey: chipMapKey, cardSecurity: file,
                                                          curve: curve, encryptionKey: keys.encryption, type: .aes128)
        #expect(forged.status == .invalid)
    }
}
