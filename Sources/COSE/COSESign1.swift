import CBORCoding
import MRTDCrypto

/// COSE_Sign1 (RFC 9052 §4.2), tagged (18) or not, with an attached or detached payload.
public struct COSESign1: Sendable, Hashable {
    public let headers: COSEHeaders
    /// The payload; nil when detached (the verifier supplies it).
    public let payload: [UInt8]?
    public let signature: [UInt8]

    public init(cbor: CBOR) throws(COSEError) {
        var item = cbor
        if case .tagged(18, let content) = cbor { item = content }
        guard let array = item.arrayValue, array.count == 4 else { throw .malformed("a COSE_Sign1 is an array of 4, not a \(item.kindName)") }
        headers = try COSEHeaders(protectedItem: array[0], unprotectedItem: array[1])
        switch array[2] {
        case .bytes(let bytes): payload = bytes
        case .null: payload = nil
        default: throw .malformed("the payload is a \(array[2].kindName), not a byte string or null")
        }
        guard let signature = array[3].bytesValue else { throw .malformed("the signature is a \(array[3].kindName), not a byte string") }
        self.signature = signature
    }

    /// A COSE_Sign1 from its parts (a signature made elsewhere, over `toBeSigned`).
    public init(headers: COSEHeaders, payload: [UInt8]?, signature: [UInt8]) {
        self.headers = headers
        self.payload = payload
        self.signature = signature
    }

    /// The untagged array (ISO 18013-5 carries issuerAuth, deviceSignature and readerAuth untagged).
    public var cbor: CBOR {
        .array([.bytes(headers.protectedBytes), .map(headers.unprotected), payload.map(CBOR.bytes) ?? .null, .bytes(signature)])
    }

    public var algorithm: COSEAlgorithm {
        get throws(COSEError) { try headers.algorithm() }
    }

    /// Sig_structure: ["Signature1", protected, external_aad, payload].
    public static func toBeSigned(protectedBytes: [UInt8], externalAAD: [UInt8], payload: [UInt8]) -> [UInt8] {
        CBOR.array([.text("Signature1"), .bytes(protectedBytes), .bytes(externalAAD), .bytes(payload)]).encoded()
    }

    /// Verifies the signature with `key`; a detached message needs `detachedPayload`. Throws
    /// `verificationFailed` when it does not verify, other codes when it cannot be checked.
    public func verify(key: PublicKey, detachedPayload: [UInt8]? = nil, externalAAD: [UInt8] = []) throws(COSEError) {
        let algorithm = try self.algorithm
        guard algorithm.isSignature else { throw COSEError(.unsupportedAlgorithm, "\(algorithm.name) is not a signature algorithm") }
        guard let content = payload ?? detachedPayload else { throw .malformed("the payload is detached and none was given") }
        if payload != nil, detachedPayload != nil { throw .malformed("the payload is both attached and supplied") }
        try Self.check(key: key, for: algorithm)
        let message = Self.toBeSigned(protectedBytes: headers.protectedBytes, externalAAD: externalAAD, payload: content)
        guard key.verify(signature: signature, message: message, hash: algorithm.hash) else {
            throw COSEError(.verificationFailed, "the \(algorithm.name) signature does not verify with the \(key) key")
        }
    }

    /// The algorithm matches the key (ES* with EC keys of the right size, EdDSA with Edwards keys).
    static func check(key: PublicKey, for algorithm: COSEAlgorithm) throws(COSEError) {
        switch algorithm {
        case .edDSA:
            guard key.edwardsCurve != nil else { throw COSEError(.invalidKey, "EdDSA with a \(key) key") }
        case .es256, .es384, .es512:
            guard key.keyType == .ec else { throw COSEError(.invalidKey, "\(algorithm.name) with a \(key) key") }
        case .hmac256:
            throw COSEError(.unsupportedAlgorithm, "HMAC is not a signature")
        }
    }

    /// Signs `payload` (attached unless `detached`) with `key`, the algorithm in the protected header.
    public static func sign(payload: [UInt8], detached: Bool = false, key: PrivateKey, algorithm: COSEAlgorithm,
                            unprotected: CBORMap = CBORMap(), externalAAD: [UInt8] = []) throws(COSEError) -> COSESign1 {
        do {
            return try sign(payload: payload, detached: detached, algorithm: algorithm, unprotected: unprotected, externalAAD: externalAAD) { message, algorithm in
                try key.sign(message: message, hash: algorithm.hash)
            }
        } catch let error as COSEError {
            throw error
        } catch let error as CryptoError {
            throw COSEError(.invalidKey, error.reason)
        } catch {
            throw COSEError(.invalidKey, "\(error)")
        }
    }

    /// Signs with a signer that may live elsewhere (a PKCS#11 token): it gets Sig_structure and
    /// returns the signature in COSE's form (ECDSA as plain r ‖ s).
    public static func sign(payload: [UInt8], detached: Bool = false, algorithm: COSEAlgorithm, unprotected: CBORMap = CBORMap(),
                            externalAAD: [UInt8] = [], signer: ([UInt8], COSEAlgorithm) throws -> [UInt8]) throws -> COSESign1 {
        guard algorithm.isSignature else { throw COSEError(.unsupportedAlgorithm, "\(algorithm.name) is not a signature algorithm") }
        let headers = COSEHeaders(protected: [CBOR(1): CBOR(algorithm.rawValue)], unprotected: unprotected)
        let message = toBeSigned(protectedBytes: headers.protectedBytes, externalAAD: externalAAD, payload: payload)
        return COSESign1(headers: headers, payload: detached ? nil : payload, signature: try signer(message, algorithm))
    }
}
