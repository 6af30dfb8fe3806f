import CBORCoding
import COSE
import MRTDCrypto

/// Session encryption (ISO 18013-5 §9.1.1): ECDH between the reader's and the mdoc's ephemeral
/// keys, HKDF-SHA-256 salted with SHA-256(SessionTranscriptBytes) into SKReader and SKDevice,
/// AES-256-GCM with IV = identifier (8 bytes: 0 for the reader, 1 for the mdoc) ‖ message counter.
/// The counter of each direction starts at 1 and rises by one per message, so a message replayed
/// or skipped does not decrypt.
public struct SessionEncryption: Sendable {
    public enum Role: Sendable { case reader, device }

    public let role: Role
    let sendKey: [UInt8]
    let receiveKey: [UInt8]
    public private(set) var sent: UInt32 = 0
    public private(set) var received: UInt32 = 0

    /// Keys from our private scalar on `curve` and the peer's public key, salted by `transcript`.
    public init(role: Role, curve: EllipticCurve, privateScalar: [UInt8], peerKey: COSEKey, transcript: SessionTranscript) throws(MdocError) {
        let secret = try Self.sharedSecret(curve: curve, privateScalar: privateScalar, peerKey: peerKey)
        let salt = transcript.salt
        do {
            let reader = try KeyedHash.hkdf(.sha256, inputKey: secret, salt: salt, info: Array("SKReader".utf8), length: 32)
            let device = try KeyedHash.hkdf(.sha256, inputKey: secret, salt: salt, info: Array("SKDevice".utf8), length: 32)
            self.role = role
            sendKey = role == .reader ? reader : device
            receiveKey = role == .reader ? device : reader
        } catch {
            throw MdocError(.sessionEncryption, "deriving the session keys: \(error.reason)")
        }
    }

    /// ECDH: the x coordinate of `privateScalar · peer`, the peer's key checked to be on our curve.
    public static func sharedSecret(curve: EllipticCurve, privateScalar: [UInt8], peerKey: COSEKey) throws(MdocError) -> [UInt8] {
        guard peerKey.curve.ellipticCurve == curve else {
            throw MdocError(.sessionEncryption, "the peer's key is on \(peerKey.curve.name), ours on \(curve.name)")
        }
        guard curve.isValidPoint(peerKey.publicKey) else { throw MdocError(.sessionEncryption, "the peer's key is not a point on \(curve.name)") }
        do {
            return try curve.xCoordinate(curve.multiply(privateScalar, point: peerKey.publicKey))
        } catch {
            throw MdocError(.sessionEncryption, "ECDH on \(curve.name): \(error.reason)")
        }
    }

    static func iv(identifier: UInt32, counter: UInt32) -> [UInt8] {
        [0, 0, 0, 0] + bigEndian(identifier) + bigEndian(counter)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    var sendIdentifier: UInt32 { role == .reader ? 0 : 1 }

    /// The next message to the peer, encrypted.
    public mutating func encrypt(_ plaintext: [UInt8]) throws(MdocError) -> [UInt8] {
        guard sent < UInt32.max else { throw MdocError(.sessionEncryption, "the message counter is exhausted") }
        sent += 1
        do {
            return try AESGCM.seal(key: sendKey, iv: Self.iv(identifier: sendIdentifier, counter: sent), plaintext: plaintext)
        } catch {
            throw MdocError(.sessionEncryption, "encrypting: \(error.reason)")
        }
    }

    /// The next message from the peer, decrypted: it must be the one with the next counter.
    public mutating func decrypt(_ ciphertext: [UInt8]) throws(MdocError) -> [UInt8] {
        guard received < UInt32.max else { throw MdocError(.sessionEncryption, "the message counter is exhausted") }
        let counter = received + 1
        do {
            let plaintext = try AESGCM.open(key: receiveKey, iv: Self.iv(identifier: 1 - sendIdentifier, counter: counter), sealed: ciphertext)
            received = counter
            return plaintext
        } catch {
            throw MdocError(.sessionEncryption,
                            "message \(counter) from the \(role == .reader ? "mdoc" : "reader") does not decrypt (changed, replayed, out of order, or under another key)")
        }
    }
}

/// SessionEstablishment and SessionData (ISO 18013-5 §9.1.1.4).
public enum SessionMessage: Sendable, Hashable {
    /// Status codes of SessionData.
    public static let statusEncryptionError = 10
    public static let statusDecodingError = 11
    public static let statusTermination = 20

    public static func establishment(readerKey: EmbeddedCBOR, data: [UInt8]) -> [UInt8] {
        CBOR.map(["eReaderKey": .embedded(readerKey), "data": .bytes(data)]).encoded()
    }

    public static func data(_ data: [UInt8]?, status: Int? = nil) -> [UInt8] {
        var map = CBORMap()
        if let data { map["data"] = .bytes(data) }
        if let status { map["status"] = CBOR(status) }
        return CBOR.map(map).encoded()
    }

    /// A SessionData's encrypted data and status (either may be absent, not both).
    public static func parseData(_ bytes: [UInt8], limits: CBORLimits) throws(MdocError) -> (data: [UInt8]?, status: Int?) {
        let map = try CBOR.decode(bytes, as: "SessionData", limits: limits).requireMap("SessionData")
        let data = try map["data"]?.requireBytes("SessionData's data")
        let status = map["status"]?.intValue
        if map["status"] != nil, status == nil { throw .malformed("SessionData's status is not an integer") }
        guard data != nil || status != nil else { throw .malformed("SessionData with neither data nor status") }
        return (data, status)
    }

    /// A SessionEstablishment's reader key and encrypted request (the holder's side).
    public static func parseEstablishment(_ bytes: [UInt8], limits: CBORLimits) throws(MdocError) -> (readerKey: EmbeddedCBOR, key: COSEKey, data: [UInt8]) {
        let map = try CBOR.decode(bytes, as: "SessionEstablishment", limits: limits).requireMap("SessionEstablishment")
        let (keyBytes, keyItem) = try map.required("eReaderKey", in: "SessionEstablishment").embedded(as: "EReaderKeyBytes")
        let key: COSEKey
        do { key = try COSEKey(cbor: keyItem) } catch { throw MdocError(error, in: "EReaderKey") }
        return (keyBytes, key, try map.required("data", in: "SessionEstablishment").requireBytes("SessionEstablishment's data"))
    }
}
