import MRTDCrypto
import SmartCardCore

/// Session keys and send sequence counter for ISO 7816-4 / ICAO 9303-11 §9.8 secure messaging,
/// with both roles: the reader protects commands and checks responses; a chip (the emulator)
/// checks commands and protects responses. 3DES (retail MAC, zero IV) and AES (CMAC,
/// IV = E(KSenc, SSC)).
package struct SecureMessaging: Sendable {
    package let cipher: BlockCipher
    let encryptionKey: [UInt8]
    let macKey: [UInt8]
    /// The send sequence counter (8 bytes for 3DES, 16 for AES).
    package private(set) var ssc: [UInt8]

    package init(cipher: BlockCipher, encryptionKey: [UInt8], macKey: [UInt8], ssc: [UInt8]) {
        self.cipher = cipher
        self.encryptionKey = encryptionKey
        self.macKey = macKey
        self.ssc = ssc
    }

    /// 3DES session keys from a key seed (BAC, or CA/PACE with 3DES).
    package static func tripleDES(keySeed: [UInt8], ssc: [UInt8]) -> SecureMessaging {
        SecureMessaging(cipher: .tripleDES,
                        encryptionKey: KeyDerivation.derive(keySeed, purpose: .encryption, type: .tripleDES),
                        macKey: KeyDerivation.derive(keySeed, purpose: .mac, type: .tripleDES), ssc: ssc)
    }

    package var blockSize: Int { cipher.blockSize }

    /// The largest READ BINARY answer whose protected form still fits a short response (256
    /// bytes: DO87 with padding, DO99, DO8E): 0xE7 (231) with 3DES, 0xDF (223) with AES.
    package var largestShortReadLength: Int { blockSize == 8 ? 0xE7 : 0xDF }
    /// Why `unprotect` refuses a protected answer without DO'8E'.
    static let missingMACReason = "response has no MAC (DO8E)"

    /// Counts an answer that went out (or came in) without secure messaging as a response, as
    /// chips that keep the send sequence counter in step with every APDU exchanged do.
    package mutating func countUnprotectedAnswer() {
        incrementSSC()
    }

    /// Takes back the count of an unprotected answer, for chips whose counter does not count it.
    package mutating func uncountUnprotectedAnswer() {
        var index = ssc.count - 1
        while index >= 0 {
            ssc[index] &-= 1
            if ssc[index] != 0xFF { break }
            index -= 1
        }
    }

    mutating func incrementSSC() {
        var index = ssc.count - 1
        while index >= 0 {
            ssc[index] &+= 1
            if ssc[index] != 0 { break }
            index -= 1
        }
    }

    func mac(_ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        let padded = iso9797Pad(ssc + data, blockSize: blockSize)
        switch cipher {
        case .aes: return Array(try aesCMAC(key: macKey, padded).prefix(8))
        default: return try retailMAC(key: macKey, padded)
        }
    }

    func iv() throws(CryptoError) -> [UInt8] {
        cipher == .aes ? try BlockCipher.aes.ecb(encrypt: true, key: encryptionKey, ssc) : [UInt8](repeating: 0, count: 8)
    }

    func encrypt(_ plain: [UInt8]) throws(CryptoError) -> [UInt8] {
        try cipher.cbc(encrypt: true, key: encryptionKey, iv: try iv(), iso9797Pad(plain, blockSize: blockSize))
    }

    func decrypt(_ cryptogram: [UInt8]) throws(MRTDError) -> [UInt8] {
        guard !cryptogram.isEmpty, cryptogram.count.isMultiple(of: blockSize) else {
            throw MRTDError(.secureMessagingFailure, "cryptogram of \(cryptogram.count) bytes is not whole blocks")
        }
        let plain: [UInt8]
        do {
            plain = try cipher.cbc(encrypt: false, key: encryptionKey, iv: try iv(), cryptogram)
        } catch {
            throw MRTDError(.cryptoFailure, "decryption failed: \(error.reason)")
        }
        guard let unpadded = iso9797Unpad(plain) else {
            throw MRTDError(.secureMessagingFailure, "decrypted data has invalid padding")
        }
        return unpadded
    }

    static func isOddINS(_ ins: UInt8) -> Bool { ins & 1 == 1 }

    static func leBytes(_ ne: Int, extended: Bool) -> [UInt8] {
        if extended { return ne == 65_536 ? [0, 0] : [UInt8(ne >> 8), UInt8(ne & 0xFF)] }
        return [ne == 256 ? 0 : UInt8(ne)]
    }

    // MARK: Reader role

    /// Protects a plain command: encrypts its data into DO87 (DO85 for an odd INS), puts Ne into
    /// DO97, and appends the MAC as DO8E. Increments the SSC.
    package mutating func protect(_ command: CommandAPDU) throws(MRTDError) -> CommandAPDU {
        do {
            incrementSSC()
            let cla = command.cla | 0x0C
            let header = iso9797Pad([cla, command.ins, command.p1, command.p2], blockSize: blockSize)
            var objects: [UInt8] = []
            if !command.data.isEmpty {
                let cryptogram = try encrypt(command.data)
                objects += Self.isOddINS(command.ins)
                    ? BERTLV.encode(tag: 0x85, value: cryptogram)
                    : BERTLV.encode(tag: 0x87, value: [0x01] + cryptogram)
            }
            let extended = command.isExtended
            if let ne = command.ne {
                objects += BERTLV.encode(tag: 0x97, value: Self.leBytes(ne, extended: extended))
            }
            let checksum = try mac(header + objects)
            objects += BERTLV.encode(tag: 0x8E, value: checksum)
            return CommandAPDU(cla: cla, ins: command.ins, p1: command.p1, p2: command.p2, data: objects,
                               ne: extended ? 65_536 : 256, forceExtended: extended)
        } catch {
            throw MRTDError(.cryptoFailure, "protecting a command failed: \(error.reason)")
        }
    }

    /// Checks and decrypts a protected response. Throws `.secureMessagingFailure` when the chip
    /// answered without secure messaging (it dropped the session) or the MAC does not match;
    /// no data from such a response is returned.
    package mutating func unprotect(_ response: ResponseAPDU) throws(MRTDError) -> ResponseAPDU {
        incrementSSC()
        guard !response.data.isEmpty else {
            throw MRTDError(.secureMessagingDropped,
                            "the chip answered without secure messaging: \(response.statusWord.meaning)",
                            statusWord: response.statusWord)
        }
        let objects: [TLV]
        do {
            objects = try BERTLV.parseAll(response.data)
        } catch {
            throw MRTDError(.secureMessagingFailure, "protected response is not valid TLV: \(error.reason)")
        }
        let parsed: ProtectedObjects
        do {
            parsed = try ProtectedObjects(objects, allowed: [0x87, 0x85, 0x99])
        } catch {
            throw MRTDError(.secureMessagingFailure, "\(error.reason) in the response")
        }
        let (macInput, cryptogram, status, checksum) = (parsed.macInput, parsed.cryptogram, parsed.objects[0x99], parsed.checksum)
        guard let checksum else {
            throw MRTDError(.secureMessagingFailure, Self.missingMACReason, statusWord: response.statusWord)
        }
        let expected: [UInt8]
        do {
            expected = try mac(macInput)
        } catch {
            throw MRTDError(.cryptoFailure, "computing the response MAC failed: \(error.reason)")
        }
        guard constantTimeEqual(expected, checksum) else {
            throw MRTDError(.secureMessagingFailure, "response MAC does not match", statusWord: response.statusWord)
        }
        // Without DO'99' (as vsmartcard's ePass and some chips answer) the status is the plain
        // trailer's: the MAC has verified and still covers every data object, so the data is the
        // chip's; only the status word travels unauthenticated, and a forged one can at most make
        // the reader stop or step down, never accept data the chip did not send.
        // (Docs/reading-and-verification.md, "Secure messaging without DO'99'".)
        let statusWord: StatusWord
        if let status {
            guard status.count == 2 else { throw MRTDError(.secureMessagingFailure, "the response's status object (DO99) is malformed") }
            statusWord = StatusWord(sw1: status[0], sw2: status[1])
        } else {
            statusWord = response.statusWord
        }
        let data = try cryptogram.map { cryptogram throws(MRTDError) in try decrypt(cryptogram) } ?? []
        return ResponseAPDU(data: data, statusWord: statusWord)
    }

    // MARK: Chip role

    /// A chip's answer protected without DO'99' (DO'87' or DO'85', then DO'8E' over them alone),
    /// the status left to the plain trailer: what some chips and vsmartcard's ePass send.
    package mutating func protectResponseWithoutStatus(_ response: ResponseAPDU, oddINS: Bool = false) throws(MRTDError) -> ResponseAPDU {
        do {
            incrementSSC()
            var objects: [UInt8] = []
            if !response.data.isEmpty {
                let cryptogram = try encrypt(response.data)
                objects += oddINS ? BERTLV.encode(tag: 0x85, value: cryptogram) : BERTLV.encode(tag: 0x87, value: [0x01] + cryptogram)
            }
            objects += BERTLV.encode(tag: 0x8E, value: try mac(objects))
            return ResponseAPDU(data: objects, statusWord: response.statusWord)
        } catch {
            throw MRTDError(.cryptoFailure, "protecting a response failed: \(error.reason)")
        }
    }

    /// Checks and decrypts a protected command as a chip does. Throws when the MAC is wrong or
    /// secure-messaging objects are missing; the caller answers `6988` / `6987` and drops the session.
    package mutating func unprotectCommand(_ command: CommandAPDU) throws(MRTDError) -> CommandAPDU {
        incrementSSC()
        guard command.cla & 0x0C == 0x0C else {
            throw MRTDError(.secureMessagingFailure, "command is not protected", statusWord: .smDataObjectsMissing)
        }
        let objects: [TLV]
        do {
            objects = try BERTLV.parseAll(command.data)
        } catch {
            throw MRTDError(.secureMessagingFailure, "malformed protected command", statusWord: .smDataObjectsIncorrect)
        }
        let parsed: ProtectedObjects
        do {
            parsed = try ProtectedObjects(objects, allowed: [0x87, 0x85, 0x97])
        } catch {
            throw MRTDError(.secureMessagingFailure, error.reason, statusWord: .smDataObjectsIncorrect)
        }
        let macInput = iso9797Pad([command.cla, command.ins, command.p1, command.p2], blockSize: blockSize) + parsed.macInput
        let (cryptogram, checksum) = (parsed.cryptogram, parsed.checksum)
        let ne = parsed.objects[0x97].map { value -> Int in
            let number = value.reduce(0) { $0 << 8 | Int($1) }
            return number == 0 ? (value.count >= 2 ? 65_536 : 256) : number
        }
        guard let checksum else {
            throw MRTDError(.secureMessagingFailure, "no DO8E", statusWord: .smDataObjectsMissing)
        }
        let expected: [UInt8]
        do {
            expected = try mac(macInput)
        } catch {
            throw MRTDError(.cryptoFailure, "MAC failed", statusWord: .smDataObjectsIncorrect)
        }
        guard constantTimeEqual(expected, checksum) else {
            throw MRTDError(.secureMessagingFailure, "command MAC does not match", statusWord: .smDataObjectsIncorrect)
        }
        let data: [UInt8]
        do {
            data = try cryptogram.map { cryptogram throws(MRTDError) in try decrypt(cryptogram) } ?? []
        } catch {
            throw MRTDError(.secureMessagingFailure, error.reason, statusWord: .smDataObjectsIncorrect)
        }
        return CommandAPDU(cla: command.cla & ~0x0C, ins: command.ins, p1: command.p1, p2: command.p2, data: data,
                           ne: ne, forceExtended: command.isExtended)
    }

    /// Protects a chip's plain response (DO87 or, for an odd INS, DO85; DO99; DO8E).
    package mutating func protectResponse(_ response: ResponseAPDU, oddINS: Bool = false) throws(MRTDError) -> ResponseAPDU {
        do {
            incrementSSC()
            var objects: [UInt8] = []
            if !response.data.isEmpty {
                let cryptogram = try encrypt(response.data)
                objects += oddINS ? BERTLV.encode(tag: 0x85, value: cryptogram)
                    : BERTLV.encode(tag: 0x87, value: [0x01] + cryptogram)
            }
            objects += BERTLV.encode(tag: 0x99, value: [response.statusWord.sw1, response.statusWord.sw2])
            objects += BERTLV.encode(tag: 0x8E, value: try mac(objects))
            return ResponseAPDU(data: objects, statusWord: response.statusWord)
        } catch {
            throw MRTDError(.cryptoFailure, "protecting a response failed: \(error.reason)")
        }
    }
}

/// The data objects of a protected command or response: DO87/DO85 (cryptogram), DO97 (Le),
/// DO99 (status), DO8E (MAC), and the bytes the MAC covers.
struct ProtectedObjects {
    var macInput: [UInt8] = []
    var cryptogram: [UInt8]?
    var checksum: [UInt8]?
    /// Other allowed objects' values by tag (97, 99).
    var objects: [UInt32: [UInt8]] = [:]

    struct Failure: Error { let reason: String }

    init(_ list: [TLV], allowed: Set<UInt32>) throws(Failure) {
        for object in list {
            guard object.tag == 0x8E || allowed.contains(object.tag) else {
                throw Failure(reason: "unexpected data object \(BERTLV.tagString(object.tag))")
            }
            switch object.tag {
            case 0x8E:
                checksum = object.value
                continue
            case 0x87:
                guard object.value.first == 0x01 else { throw Failure(reason: "DO87 without padding-content indicator 01") }
                cryptogram = Array(object.value.dropFirst())
            case 0x85:
                cryptogram = object.value
            default:
                objects[object.tag] = object.value
            }
            macInput += object.encoded()
        }
    }
}

/// Compares two byte strings in time independent of where they differ.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for (x, y) in zip(a, b) { difference |= x ^ y }
    return difference == 0
}
