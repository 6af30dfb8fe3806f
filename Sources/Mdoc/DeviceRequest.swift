import CBORCoding
import COSE
import MRTDCrypto

/// DeviceRequest (ISO 18013-5 §8.3.2.1.2.1): version "1.0" and one DocRequest per document type,
/// each with its ItemsRequestBytes and, when the reader authenticates, readerAuth.
public struct DeviceRequest: Sendable, Hashable {
    public struct DocRequest: Sendable, Hashable {
        public let request: MdocRequest
        /// ItemsRequestBytes exactly as sent or received.
        public let itemsRequestBytes: EmbeddedCBOR
        public let readerAuth: COSESign1?
    }

    public let version: String
    public let docRequests: [DocRequest]

    /// The reader's request, with readerAuth over ReaderAuthenticationBytes when `readerKey` is given.
    public init(requests: [MdocRequest], transcript: SessionTranscript, readerKey: ReaderAuthenticationKey?) async throws(MdocError) {
        var docRequests: [DocRequest] = []
        for request in requests {
            let itemsBytes = request.itemsRequestBytes
            var auth: COSESign1?
            if let readerKey {
                let payload = authenticationBytes(context: "ReaderAuthentication", transcript: transcript, rest: [.embedded(itemsBytes)])
                auth = try await readerKey.sign(payload)
            }
            docRequests.append(DocRequest(request: request, itemsRequestBytes: itemsBytes, readerAuth: auth))
        }
        version = "1.0"
        self.docRequests = docRequests
    }

    public var encoded: [UInt8] {
        CBOR.map([
            "version": .text(version),
            "docRequests": .array(docRequests.map { doc in
                var map: CBORMap = ["itemsRequest": .embedded(doc.itemsRequestBytes)]
                if let auth = doc.readerAuth { map["readerAuth"] = auth.cbor }
                return .map(map)
            }),
        ]).encoded()
    }

    public static let limits = CBORLimits(maximumBytes: 64 << 10, maximumDepth: 10, maximumItems: 4096, maximumStringBytes: 16 << 10)

    /// Parses a DeviceRequest (the holder's side).
    public init(bytes: [UInt8]) throws(MdocError) {
        let map = try CBOR.decode(bytes, as: "the DeviceRequest", limits: Self.limits).requireMap("the DeviceRequest")
        version = try map.required("version", in: "the DeviceRequest").requireText("the DeviceRequest's version")
        guard version.hasPrefix("1.") else { throw MdocError(.unsupported, "DeviceRequest version \(version)") }
        var docRequests: [DocRequest] = []
        for item in try map.required("docRequests", in: "the DeviceRequest").requireArray("docRequests") {
            let doc = try item.requireMap("a DocRequest")
            let (itemsBytes, itemsItem) = try doc.required("itemsRequest", in: "a DocRequest").embedded(as: "ItemsRequestBytes", limits: Self.limits)
            var auth: COSESign1?
            if let readerAuth = doc["readerAuth"] {
                do { auth = try COSESign1(cbor: readerAuth) } catch { throw MdocError(error, in: "readerAuth") }
            }
            docRequests.append(DocRequest(request: try MdocRequest(itemsRequest: itemsItem), itemsRequestBytes: itemsBytes, readerAuth: auth))
        }
        self.docRequests = docRequests
    }
}

/// The reader's key and certificate chain for reader authentication (ISO 18013-5 §9.1.4).
public struct ReaderAuthenticationKey: Sendable {
    public let sign: @Sendable ([UInt8], COSEAlgorithm) async throws -> [UInt8]
    public let algorithm: COSEAlgorithm
    /// The reader certificate first, then any intermediates (DER).
    public let certificateChain: [[UInt8]]

    public init(algorithm: COSEAlgorithm, certificateChain: [[UInt8]], sign: @escaping @Sendable ([UInt8], COSEAlgorithm) async throws -> [UInt8]) {
        self.algorithm = algorithm
        self.certificateChain = certificateChain
        self.sign = sign
    }

    /// A key held in this process.
    public init(privateKey: PrivateKey, certificateChain: [[UInt8]]) throws(MdocError) {
        let algorithm: COSEAlgorithm
        if privateKey.edwardsPublicKey != nil {
            algorithm = .edDSA
        } else if let ec = privateKey.ecKey {
            algorithm = ec.curve.fieldSize <= 32 ? .es256 : ec.curve.fieldSize <= 48 ? .es384 : .es512
        } else {
            throw MdocError(.readerKey, "the reader key is neither EC nor EdDSA")
        }
        self.init(algorithm: algorithm, certificateChain: certificateChain) { message, algorithm in
            try privateKey.sign(message: message, hash: algorithm.hash)
        }
    }

    /// readerAuth: a COSE_Sign1 with a detached payload and the chain in x5chain.
    func sign(_ payload: [UInt8]) async throws(MdocError) -> COSESign1 {
        let chain: CBOR = certificateChain.count == 1 ? .bytes(certificateChain[0]) : .array(certificateChain.map(CBOR.bytes))
        let headers = COSEHeaders(protected: [CBOR(1): CBOR(algorithm.rawValue)], unprotected: [CBOR(33): chain])
        let message = COSESign1.toBeSigned(protectedBytes: headers.protectedBytes, externalAAD: [], payload: payload)
        do {
            return COSESign1(headers: headers, payload: nil, signature: try await sign(message, algorithm))
        } catch {
            throw MdocError(.readerKey, "signing readerAuth: \(error)")
        }
    }
}

/// ReaderAuthenticationBytes (ISO 18013-5 §9.1.4): what readerAuth signs.
public enum ReaderAuthentication {
    public static func payload(transcript: SessionTranscript, itemsRequestBytes: EmbeddedCBOR) -> [UInt8] {
        authenticationBytes(context: "ReaderAuthentication", transcript: transcript, rest: [.embedded(itemsRequestBytes)])
    }
}
