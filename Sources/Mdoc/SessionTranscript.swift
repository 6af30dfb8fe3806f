import CBORCoding
import COSE
import MRTDCrypto

/// SessionTranscript (ISO 18013-5 §9.1.5.1): [DeviceEngagementBytes, EReaderKeyBytes, Handover],
/// carried as SessionTranscriptBytes = #6.24(bstr .cbor SessionTranscript). Every part is kept as
/// the bytes that were exchanged: the engagement as read, the handover messages as read and written.
public struct SessionTranscript: Sendable, Hashable {
    /// SessionTranscriptBytes (the tagged item): its SHA-256 salts every key of the session.
    public let bytes: EmbeddedCBOR
    /// The SessionTranscript array as decoded from `bytes`.
    public let item: CBOR

    public static let limits = CBORLimits(maximumBytes: 64 << 10, maximumDepth: 8, maximumItems: 1024, maximumStringBytes: 32 << 10)

    /// The transcript of an NFC engagement: static handover (`handoverRequest` nil) or negotiated.
    public init(deviceEngagement: [UInt8], readerKey: EmbeddedCBOR, handoverSelect: [UInt8], handoverRequest: [UInt8]?) {
        self.init(deviceEngagement: deviceEngagement, readerKey: readerKey,
                  handover: .array([.bytes(handoverSelect), handoverRequest.map(CBOR.bytes) ?? .null]))
    }

    /// A transcript with any handover item (null for QR engagement).
    public init(deviceEngagement: [UInt8], readerKey: EmbeddedCBOR, handover: CBOR) {
        let array = CBOR.array([.embedded(EmbeddedCBOR(wrapping: deviceEngagement)), .embedded(readerKey), handover])
        bytes = EmbeddedCBOR(encoding: array)
        item = array
    }

    /// SessionTranscriptBytes from elsewhere (`mdoc verify`): tagged or the bare array.
    public init(bytes raw: [UInt8]) throws(MdocError) {
        let decoded = try CBOR.decode(raw, as: "the SessionTranscript", limits: Self.limits)
        let embedded: EmbeddedCBOR
        let array: CBOR
        if let tagged = decoded.embeddedValue {
            embedded = tagged
            array = try CBOR.decode(tagged.content, as: "the SessionTranscript", limits: Self.limits)
        } else {
            embedded = EmbeddedCBOR(wrapping: raw)
            array = decoded
        }
        guard let parts = array.arrayValue, parts.count == 3 else { throw .malformed("a SessionTranscript is an array of 3") }
        for (index, part) in parts.prefix(2).enumerated() where part != .null && part.embeddedValue == nil {
            throw .malformed("SessionTranscript element \(index) is a \(part.kindName), not embedded CBOR or null")
        }
        bytes = embedded
        item = array
    }

    /// SHA-256(SessionTranscriptBytes): the HKDF salt of the session keys and EMacKey.
    public var salt: [UInt8] { DigestAlgorithm.sha256.hash(bytes.taggedBytes) }

    /// The DeviceEngagement's bytes inside (nil when null).
    public var deviceEngagementBytes: [UInt8]? { item.arrayValue?.first?.embeddedValue?.content }
    /// EReaderKeyBytes inside.
    public var readerKeyBytes: EmbeddedCBOR? { item.arrayValue.flatMap { $0.count > 1 ? $0[1].embeddedValue : nil } }
}

/// `#6.24(bstr .cbor [context, SessionTranscript, …rest])` with the transcript spliced in as the
/// bytes it was made of: DeviceAuthenticationBytes and ReaderAuthenticationBytes.
func authenticationBytes(context: String, transcript: SessionTranscript, rest: [CBOR]) -> [UInt8] {
    var encoder = CBOREncoder()
    encoder.arrayHead(2 + rest.count)
    encoder.encode(.text(context))
    encoder.bytes(appending: transcript.bytes.content)
    for item in rest { encoder.encode(item) }
    return EmbeddedCBOR(wrapping: encoder.bytes).taggedBytes
}

extension SessionTranscript {
    /// DeviceAuthenticationBytes: what deviceSignature signs and deviceMac authenticates.
    public func deviceAuthenticationBytes(docType: String, deviceNamespaces: EmbeddedCBOR) -> [UInt8] {
        authenticationBytes(context: "DeviceAuthentication", transcript: self, rest: [.text(docType), .embedded(deviceNamespaces)])
    }

    /// EMacKey (ISO 18013-5 §9.1.3.5): HKDF of ECDH(one party's private key, the other's public key).
    public func eMacKey(curve: EllipticCurve, privateScalar: [UInt8], peerKey: COSEKey) throws(MdocError) -> [UInt8] {
        let secret = try SessionEncryption.sharedSecret(curve: curve, privateScalar: privateScalar, peerKey: peerKey)
        do {
            return try KeyedHash.hkdf(.sha256, inputKey: secret, salt: salt, info: Array("EMacKey".utf8), length: 32)
        } catch {
            throw MdocError(.sessionEncryption, "deriving EMacKey: \(error.reason)")
        }
    }
}
