import CBORCoding

/// What verifying one returned document established (ISO 18013-5 §9.3), typed like passive
/// authentication: a verdict for the issuer's data, one for the device, the elements that hold,
/// and the elements withheld with why.
public struct MdocVerification: Sendable {
    public enum IssuerVerdict: String, Sendable, Hashable, Codable {
        /// The MSO's signature verifies with a document signer chained to a trusted IACA, valid at the read.
        case valid
        /// The signature does not verify, the MSO does not parse, or it is for another document type.
        case invalid
        /// The signature verifies, but no trusted IACA issued the document signer (or it is revoked).
        case untrusted
        /// Trusted and intact, but the document signer, the IACA or the MSO is not valid at the read.
        case expired
    }

    public enum DeviceVerdict: String, Sendable, Hashable, Codable {
        /// deviceSignature or deviceMac verifies with the MSO's device key over this session's transcript.
        case valid
        case invalid
    }

    /// Why an element was not handed over.
    public enum WithholdReason: String, Sendable, Hashable, Codable {
        /// Its IssuerSignedItemBytes do not hash to the MSO's digest.
        case digestMismatch = "digest-mismatch"
        /// The MSO has no digest for its digestID in its namespace.
        case noDigest = "no-digest"
        /// The reader did not ask for it.
        case notRequested = "not-requested"
        /// A second item with the same identifier.
        case duplicate
        /// The issuer's signature does not verify: nothing the MSO vouches for can be shown.
        case issuerInvalid = "issuer-invalid"
        /// Signed only by the device, not the issuer.
        case deviceSignedOnly = "device-signed-only"
        /// Its digestID appears twice in the namespace.
        case reusedDigestID = "reused-digest-id"
    }

    public struct Element: Sendable, Hashable {
        public let namespace: String
        public let identifier: String
        public let value: CBOR
    }

    public struct Withheld: Sendable, Hashable, Codable {
        public let namespace: String
        public let identifier: String
        public let reason: WithholdReason
    }

    public let docType: String
    public var issuer: IssuerVerdict
    public var issuerReason: String?
    public var device: DeviceVerdict
    public var deviceReason: String?
    /// "signature" or "mac".
    public let deviceAuthentication: String
    public var elements: [Element]
    public var withheld: [Withheld]
    /// Elements requested that the holder did not return (its errors, or silently absent).
    public var notReturned: [Withheld]
    public var documentSigner: String?
    public var issuingAuthority: String?
    public var signed: Double?
    public var validFrom: Double?
    public var validUntil: Double?

    /// An element's value when it was handed over.
    public func value(_ identifier: String, namespace: String? = nil) -> CBOR? {
        elements.first { $0.identifier == identifier && (namespace == nil || $0.namespace == namespace) }?.value
    }
}
