import LDS
import MRTD
import MRTDCrypto
import Testing

/// Terminal Authentication signs Comp(PK_PCD) of Chip Authentication's ephemeral key. BSI
/// TR-03111 makes it a field element of the field's length; OpenPACE's `Comp` drops its leading
/// zero bytes, so a chip built on it refused our signature once in 256 keys (the OpenPACE interop
/// test failed so, in CI). Our ephemeral keys are drawn again until the encoding starts non-zero:
/// without that, 2,000 EC draws hold a leading zero byte with probability 1 − (255/256)^2000
/// (over 99.9 %), 1,000 DH draws with 98 %.
@Suite("Chip Authentication's ephemeral key reads the same under both conventions of Comp()")
struct ChipAuthenticationEphemeralKeyTests {
    @Test("EC (brainpoolP256r1): no ephemeral key's x coordinate starts with a zero byte; the shared secret is the chip's")
    func ellipticCurve() throws {
        let curve = EllipticCurve.brainpoolP256r1
        let chip = try curve.generateKeyPair()
        let key = ChipAuthentication.ChipKey.ec(curve, point: chip.publicKey)
        var leadingZeros = 0
        for _ in 0..<2000 {
            let agreement = try key.agree()
            if try curve.xCoordinate(agreement.ephemeralPublicKey).first == 0 { leadingZeros += 1 }
        }
        #expect(leadingZeros == 0)
        let agreement = try key.agree()
        #expect(try curve.xCoordinate(try curve.multiply(chip.privateKey, point: agreement.ephemeralPublicKey)) == agreement.sharedSecret)
    }

    @Test("DH (RFC 5114 1024-bit MODP): no ephemeral public value starts with a zero byte; the shared secret is the chip's")
    func diffieHellman() throws {
        let group = try #require(DiffieHellmanGroup.rfc5114(parameterId: 0))
        let chip = try group.generateKeyPair()
        let key = ChipAuthentication.ChipKey.dh(group, publicValue: chip.publicKey)
        var leadingZeros = 0
        for _ in 0..<1000 {
            let agreement = try key.agree()
            #expect(agreement.ephemeralPublicKey.count == group.size)
            if agreement.ephemeralPublicKey.first == 0 { leadingZeros += 1 }
        }
        #expect(leadingZeros == 0)
        let agreement = try key.agree()
        #expect(try group.power(agreement.ephemeralPublicKey, chip.privateKey) == agreement.sharedSecret)
    }
}
