import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore

/// BAC (GET CHALLENGE, EXTERNAL AUTHENTICATE) and Active Authentication (INTERNAL AUTHENTICATE).
extension VirtualPassportChip {
    /// Active Authentication: sign the terminal's challenge with the AA key.
    func internalAuthenticate(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard state.authenticated else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        guard let key = passport.activeAuthenticationKey else { return ResponseAPDU(statusWord: .insNotSupported) }
        guard command.data.count == 8 else { return ResponseAPDU(statusWord: .wrongLength) }
        let signature: [UInt8]?
        if let publicKey = try? PublicKey(subjectPublicKeyInfo: key.subjectPublicKeyInfo), publicKey.keyType == .rsa {
            signature = try? ActiveAuthentication.signISO9796(key: key, modulusBytes: publicKey.byteSize, challenge: command.data)
        } else {
            signature = try? key.ecdsaSignPlain(digest: passport.activeAuthenticationDigest.hash(command.data))
        }
        guard let signature else { return ResponseAPDU(statusWord: .noPreciseDiagnosis) }
        state.statistics.activeAuthentications += 1
        return ResponseAPDU(data: signature, statusWord: .success)
    }

    func getChallenge(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard command.ne == 8, command.data.isEmpty else { return ResponseAPDU(statusWord: .wrongLength) }
        // A PACE-only chip does not do BAC: no challenge before access control.
        guard passport.bacAllowed || state.authenticated else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        let challenge = secureRandomBytes(8)
        state.challenge = challenge
        return ResponseAPDU(data: challenge, statusWord: .success)
    }

    func externalAuthenticate(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard passport.bacAllowed else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        guard let rndIC = state.challenge else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        state.challenge = nil
        guard command.data.count == 40 else { return ResponseAPDU(statusWord: .wrongLength) }
        let encrypted = Array(command.data[0..<32])
        let checksum = Array(command.data[32..<40])
        guard let expected = try? retailMAC(key: bacKeys.mac, iso9797Pad(encrypted, blockSize: 8)), expected == checksum,
              let s = try? BlockCipher.tripleDES.cbc(encrypt: false, key: bacKeys.encryption, encrypted),
              Array(s[8..<16]) == rndIC else {
            state.statistics.bacFailures += 1
            state.wrongKeys += 1
            dropSession(&state)
            return ResponseAPDU(statusWord: .verificationFailed)
        }
        let rndIFD = Array(s[0..<8])
        let kIFD = Array(s[16..<32])
        let kIC = secureRandomBytes(16)
        // R = RND.IC ‖ RND.IFD ‖ K.IC, encrypted and MACed like the reader's S.
        guard let answer = try? BAC.authenticationData(keys: bacKeys, rndIFD: rndIC, rndIC: rndIFD, kIFD: kIC) else {
            return ResponseAPDU(statusWord: .noPreciseDiagnosis)
        }
        state.sm = BAC.session(kIFD: kIFD, kIC: kIC, rndIC: rndIC, rndIFD: rndIFD)
        state.authenticated = true
        state.wrongKeys = 0
        state.statistics.bacSuccesses += 1
        // The answer itself goes out unprotected (the command was): the session starts with the next command.
        return ResponseAPDU(data: answer, statusWord: .success)
    }
}
