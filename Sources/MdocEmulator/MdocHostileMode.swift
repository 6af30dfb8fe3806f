/// Ways an emulated holder misbehaves, each a field failure or an attack a reader must survive
/// with a typed error or a withheld element — never `valid` over bad data, never a hang.
public enum MdocHostileMode: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    case badDigest = "bad-digest"
    case expiredSigner = "expired-ds"
    case untrustedIACA = "untrusted-iaca"
    case wrongDeviceSignature = "wrong-device-signature"
    case wrongMAC = "wrong-mac"
    case hugeElement = "huge-element"
    case deepCBOR = "deep-cbor"
    case indefiniteBomb = "indefinite-bomb"
    case getResponseForever = "get-response-forever"
    case ndefLengthLies = "ndef-length-lies"
    case slowAPDU = "slow-apdu"
    case garbageAfterSession = "garbage-after-session"
    case reusedIV = "reused-iv"
    case unrequestedElements = "unrequested-elements"
    case decline

    public var description: String { rawValue }

    public var summary: String {
        switch self {
        case .badDigest: return "one returned element changed after the issuer signed it (its digest no longer matches)"
        case .expiredSigner: return "the MSO's document signer certificate expired in 2021"
        case .untrustedIACA: return "the document signer is certified by an IACA nobody trusts"
        case .wrongDeviceSignature: return "deviceSignature over the wrong bytes"
        case .wrongMAC: return "deviceMac over the wrong bytes"
        case .hugeElement: return "a 20 MB element in the response"
        case .deepCBOR: return "an element nested 100,000 arrays deep"
        case .indefiniteBomb: return "an element that is an indefinite-length byte string of a million one-byte chunks"
        case .getResponseForever: return "answers 61 00 to every GET RESPONSE, forever"
        case .ndefLengthLies: return "the NDEF file's length field claims 8,192 bytes, more than the file holds"
        case .slowAPDU: return "takes 1 s to answer each APDU"
        case .garbageAfterSession: return "answers the session termination with garbage"
        case .reusedIV: return "encrypts its response with the reader's IV counter already used"
        case .unrequestedElements: return "returns every element it holds, asked for or not"
        case .decline: return "the holder declines: SessionData status 20, no response"
        }
    }
}
