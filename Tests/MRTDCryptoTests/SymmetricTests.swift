import Foundation
import SmartCard
import Testing
@testable import MRTDCrypto

private func h(_ text: String) -> [UInt8] { bytes(hex: text)! }

@Suite("Symmetric primitives")
struct SymmetricTests {
    @Test func aesCMACMatchesRFC4493() throws {
        let key = h("2b7e151628aed2a6abf7158809cf4f3c")
        #expect(try aesCMAC(key: key, []) == h("bb1d6929e95937287fa37d129b756746"))
        #expect(try aesCMAC(key: key, h("6bc1bee22e409f96e93d7e117393172a")) == h("070a16b46b4d4144f79bdd9dd04a287c"))
        #expect(try aesCMAC(key: key, h("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411"))
                == h("dfa66747de9ae63030ca32611497c827"))
    }

    @Test func singleDESEqualsKnownAnswer() throws {
        // FIPS 81 / classic DES test: key 0123456789ABCDEF, "Now is t" → 3FA40E8A984D4815
        #expect(try BlockCipher.des.ecb(encrypt: true, key: h("0123456789ABCDEF"), h("4E6F772069732074")) == h("3FA40E8A984D4815"))
    }

    @Test func aesRoundTripAndErrors() throws {
        let key = h("000102030405060708090A0B0C0D0E0F")
        let plain = [UInt8](repeating: 0x42, count: 32)
        let iv = [UInt8](repeating: 9, count: 16)
        let encrypted = try BlockCipher.aes.cbc(encrypt: true, key: key, iv: iv, plain)
        #expect(try BlockCipher.aes.cbc(encrypt: false, key: key, iv: iv, encrypted) == plain)
        #expect(throws: CryptoError.self) { _ = try BlockCipher.aes.cbc(encrypt: true, key: key, [1, 2, 3]) }
        #expect(throws: CryptoError.self) { _ = try BlockCipher.aes.cbc(encrypt: true, key: [1, 2, 3], plain) }
        #expect(throws: CryptoError.self) { _ = try retailMAC(key: key, []) }
    }

    @Test func padding() {
        #expect(iso9797Pad([1, 2], blockSize: 8) == [1, 2, 0x80, 0, 0, 0, 0, 0])
        #expect(iso9797Pad([UInt8](repeating: 1, count: 8), blockSize: 8).count == 16)
        #expect(iso9797Unpad([1, 2, 0x80, 0, 0]) == [1, 2])
        #expect(iso9797Unpad([1, 2, 0, 0]) == nil)
    }

    @Test func digests() {
        #expect(DigestAlgorithm.sha256.hash(Array("abc".utf8)) == h("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        #expect(DigestAlgorithm.allCases.allSatisfy { $0.hash([]).count == $0.outputLength })
        #expect(DigestAlgorithm(oid: "2.16.840.1.101.3.4.2.1") == .sha256)
        #expect(secureRandomBytes(16) != secureRandomBytes(16))
    }
}

@Suite("Diffie-Hellman groups")
struct DiffieHellmanTests {
    @Test("RFC 5114 groups agree and reject bad values", arguments: [0, 1, 2])
    func agreement(id: Int) throws {
        let group = try #require(DiffieHellmanGroup.rfc5114(parameterId: id))
        #expect(group.size == (id == 0 ? 128 : 256))
        #expect(group.q.count == (id == 0 ? 20 : id == 1 ? 28 : 32))
        let a = try group.generateKeyPair()
        let b = try group.generateKeyPair()
        #expect(group.isValidPublicKey(a.publicKey) && group.isValidPublicKey(b.publicKey))
        #expect(try group.power(b.publicKey, a.privateKey) == group.power(a.publicKey, b.privateKey))
        #expect(!group.isValidPublicKey(DiffieHellmanGroup.pad([1], group.size)))
        #expect(!group.isValidPublicKey(group.p))
        #expect(!group.isValidPublicKey([UInt8](repeating: 0xFF, count: group.size)))
        // A value outside the prime-order subgroup (p−1 has order 2) is refused.
        var pMinusOne = group.p
        pMinusOne[pMinusOne.count - 1] &-= 1
        #expect(!group.isValidPublicKey(pMinusOne))
    }
}

@Suite("EC keys with explicit domain parameters")
struct ExplicitParametersTests {
    @Test func explicitBrainpoolKeyIsRecognised() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/keys/explicit-brainpoolP256r1.spki.der")
        let der = Array(try Data(contentsOf: url))
        let (curve, point) = try #require(EllipticCurve.publicKey(subjectPublicKeyInfo: der))
        #expect(curve == .brainpoolP256r1)
        #expect(curve.isValidPoint(point))
        let key = try PublicKey(subjectPublicKeyInfo: der)
        #expect(key.ecPoint?.curve == .brainpoolP256r1)
    }
}
