import CBORCoding
import MRTDCrypto

/// COSE_Mac0 (RFC 9052 §6.2) with HMAC 256/256, tagged (17) or not.
public struct COSEMac0: Sendable, Hashable {
    public let headers: COSEHeaders
    public let payload: [UInt8]?
    public let tag: [UInt8]

    public init(cbor: CBOR) throws(COSEError) {
        var item = cbor
        if case .tagged(17, let content) = cbor { item = content }
        guard let array = item.arrayValue, array.count == 4 else { throw .malformed("a COSE_Mac0 is an array of 4, not a \(item.kindName)") }
        headers = try COSEHeaders(protectedItem: array[0], unprotectedItem: array[1])
        switch array[2] {
        case .bytes(let bytes): payload = bytes
        case .null: payload = nil
        default: throw .malformed("the payload is a \(array[2].kindName), not a byte string or null")
        }
        guard let tag = array[3].bytesValue else { throw .malformed("the tag is a \(array[3].kindName), not a byte string") }
        self.tag = tag
    }

    init(headers: COSEHeaders, payload: [UInt8]?, tag: [UInt8]) {
        self.headers = headers
        self.payload = payload
        self.tag = tag
    }

    public var cbor: CBOR {
        .array([.bytes(headers.protectedBytes), .map(headers.unprotected), payload.map(CBOR.bytes) ?? .null, .bytes(tag)])
    }

    /// MAC_structure: ["MAC0", protected, external_aad, payload].
    public static func toBeMaced(protectedBytes: [UInt8], externalAAD: [UInt8], payload: [UInt8]) -> [UInt8] {
        CBOR.array([.text("MAC0"), .bytes(protectedBytes), .bytes(externalAAD), .bytes(payload)]).encoded()
    }

    public func verify(key: [UInt8], detachedPayload: [UInt8]? = nil, externalAAD: [UInt8] = []) throws(COSEError) {
        let algorithm = try headers.algorithm()
        guard algorithm == .hmac256 else { throw COSEError(.unsupportedAlgorithm, "\(algorithm.name) in a COSE_Mac0; ISO 18013-5 uses HMAC 256/256") }
        guard let content = payload ?? detachedPayload else { throw .malformed("the payload is detached and none was given") }
        if payload != nil, detachedPayload != nil { throw .malformed("the payload is both attached and supplied") }
        let expected: [UInt8]
        do {
            expected = try KeyedHash.hmac(.sha256, key: key, Self.toBeMaced(protectedBytes: headers.protectedBytes, externalAAD: externalAAD, payload: content))
        } catch { throw COSEError(.invalidKey, error.reason) }
        guard KeyedHash.constantTimeEqual(expected, tag) else { throw COSEError(.verificationFailed, "the HMAC 256/256 tag does not verify") }
    }

    public static func mac(payload: [UInt8], detached: Bool = false, key: [UInt8], externalAAD: [UInt8] = []) throws(COSEError) -> COSEMac0 {
        let headers = COSEHeaders(protected: [CBOR(1): CBOR(COSEAlgorithm.hmac256.rawValue)])
        let tag: [UInt8]
        do {
            tag = try KeyedHash.hmac(.sha256, key: key, toBeMaced(protectedBytes: headers.protectedBytes, externalAAD: externalAAD, payload: payload))
        } catch { throw COSEError(.invalidKey, error.reason) }
        return COSEMac0(headers: headers, payload: detached ? nil : payload, tag: tag)
    }
}
