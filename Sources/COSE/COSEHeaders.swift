import CBORCoding

/// The two header buckets of a COSE message, with the protected one's exact bytes (signatures and
/// MACs are over them, never over a re-encoding).
public struct COSEHeaders: Sendable, Hashable {
    /// The protected header's serialization as received (empty for an empty header).
    public let protectedBytes: [UInt8]
    public let protected: CBORMap
    public let unprotected: CBORMap

    /// Limits for a protected header: small maps, though an x5chain may sit there.
    static let limits = CBORLimits(maximumBytes: 64 << 10, maximumDepth: 4, maximumItems: 256, maximumStringBytes: 32 << 10)

    init(protectedItem: CBOR, unprotectedItem: CBOR) throws(COSEError) {
        guard let bytes = protectedItem.bytesValue else { throw .malformed("the protected header is a \(protectedItem.kindName), not a byte string") }
        guard let unprotected = unprotectedItem.mapValue else { throw .malformed("the unprotected header is a \(unprotectedItem.kindName), not a map") }
        if bytes.isEmpty {
            protected = CBORMap()
        } else {
            let decoded: CBOR
            do { decoded = try CBOR.decode(bytes, limits: Self.limits) } catch { throw .malformed("the protected header does not decode: \(error)") }
            guard let map = decoded.mapValue else { throw .malformed("the protected header holds a \(decoded.kindName), not a map") }
            protected = map
        }
        protectedBytes = bytes
        self.unprotected = unprotected
        for key in protected.keys where unprotected[key] != nil {
            throw .malformed("header label \(key.shortDescription) is both protected and unprotected")
        }
    }

    public init(protected: CBORMap, unprotected: CBORMap = CBORMap()) {
        self.protected = protected
        self.unprotected = unprotected
        protectedBytes = protected.isEmpty ? [] : CBOR.map(protected).encoded()
    }

    /// The algorithm (label 1), which ISO 18013-5 requires in the protected header.
    public func algorithm() throws(COSEError) -> COSEAlgorithm {
        if protected[1] == nil, unprotected[1] != nil { throw .malformed("the algorithm is in the unprotected header, where nobody signed it") }
        return try COSEAlgorithm.named(protected[1]?.intValue)
    }

    /// The certificates of `x5chain` (label 33): one byte string or an array of them, leaf first;
    /// the unprotected header's, else the protected one's. Empty when there is none.
    public func x5chain() throws(COSEError) -> [[UInt8]] {
        guard let item = unprotected[33] ?? protected[33] else { return [] }
        if let single = item.bytesValue { return [single] }
        guard let array = item.arrayValue, !array.isEmpty else { throw .malformed("x5chain is a \(item.kindName), not a certificate or an array of them") }
        var chain: [[UInt8]] = []
        for element in array {
            guard let certificate = element.bytesValue else { throw .malformed("x5chain holds a \(element.kindName)") }
            chain.append(certificate)
        }
        return chain
    }
}
