import MRTDCrypto
import SmartCardCore

/// Basic Access Control (ICAO 9303-11 §4.3): mutual authentication with keys derived from the
/// MRZ, ending in 3DES secure messaging.
package enum BAC {
    /// The static keys K_Enc and K_MAC derived from the BAC key seed.
    package struct Keys: Sendable {
        package let encryption: [UInt8]
        package let mac: [UInt8]

        package init(keySeed: [UInt8]) {
            encryption = KeyDerivation.derive(keySeed, purpose: .encryption, type: .tripleDES)
            mac = KeyDerivation.derive(keySeed, purpose: .mac, type: .tripleDES)
        }
    }

    /// The EXTERNAL AUTHENTICATE command data E_IFD ‖ M_IFD for S = RND.IFD ‖ RND.IC ‖ K.IFD.
    package static func authenticationData(keys: Keys, rndIFD: [UInt8], rndIC: [UInt8], kIFD: [UInt8])
        throws(CryptoError) -> [UInt8]
    {
        let s = rndIFD + rndIC + kIFD
        let encrypted = try BlockCipher.tripleDES.cbc(encrypt: true, key: keys.encryption, s)
        return encrypted + (try retailMAC(key: keys.mac, iso9797Pad(encrypted, blockSize: 8)))
    }

    /// Checks the chip's answer E_IC ‖ M_IC and returns the decrypted R = RND.IC ‖ RND.IFD ‖ K.IC;
    /// throws `.accessDenied` when the MAC or the echoed nonces do not match.
    package static func verifyChipResponse(keys: Keys, response: [UInt8], rndIFD: [UInt8], rndIC: [UInt8])
        throws(MRTDError) -> [UInt8]
    {
        guard response.count == 40 else {
            throw MRTDError(.accessDenied, "the chip's authentication answer has \(response.count) bytes, expected 40")
        }
        let encrypted = Array(response[0..<32])
        let checksum = Array(response[32..<40])
        do {
            guard constantTimeEqual(try retailMAC(key: keys.mac, iso9797Pad(encrypted, blockSize: 8)), checksum) else {
                throw MRTDError(.accessDenied, "the chip's authentication MAC does not match")
            }
            let r = try BlockCipher.tripleDES.cbc(encrypt: false, key: keys.encryption, encrypted)
            guard constantTimeEqual(Array(r[0..<8]), rndIC), constantTimeEqual(Array(r[8..<16]), rndIFD) else {
                throw MRTDError(.accessDenied, "the chip did not return the challenge it was given")
            }
            return r
        } catch let error as MRTDError {
            throw error
        } catch {
            throw MRTDError(.cryptoFailure, "BAC response check failed: \(error)")
        }
    }

    /// Session keys and SSC after a successful exchange: K_seed = K.IFD ⊕ K.IC,
    /// SSC = RND.IC[4..<8] ‖ RND.IFD[4..<8].
    package static func session(kIFD: [UInt8], kIC: [UInt8], rndIC: [UInt8], rndIFD: [UInt8]) -> SecureMessaging {
        let seed = zip(kIFD, kIC).map { $0 ^ $1 }
        let ssc = Array(rndIC[4..<8]) + Array(rndIFD[4..<8])
        return SecureMessaging.tripleDES(keySeed: seed, ssc: ssc)
    }
}
