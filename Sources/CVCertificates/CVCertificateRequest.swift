import LDS
import MRTDCrypto
import SmartCardCore

/// A CV certificate request (BSI TR-03110-3 C.2): what an Inspection System (or a DV) sends its
/// issuer to get a certificate for a new key. The request (7F21) carries a body (7F4E) —
/// profile, the CAR of the issuer it is meant for (recommended), the new public key *with* its
/// domain parameters, the CHR asked for, extensions — and the inner signature (5F37), made with
/// the new key itself. An authentication request (67) wraps it with the outer CAR (42) and an
/// outer signature (5F37) by a key the issuer already knows (the current certificate's), over
/// the encoded request and the outer CAR. Parsed and encoded by the same type.
public struct CVCertificateRequest: Sendable, Hashable, CustomStringConvertible {
    public var profileIdentifier: UInt8 = 0
    /// The issuer the request is meant for (optional, recommended).
    public var authorityReference: String?
    /// The new key, with domain parameters for EC keys.
    public var publicKey: CVPublicKey
    /// The holder reference asked for.
    public var holderReference: String
    /// Certificate extensions (65), each a discretionary data template (73), as they are.
    public var extensions: [[UInt8]] = []
    /// The inner signature: the body signed with the new key (proof of possession).
    public var innerSignature: [UInt8] = []
    /// The authentication (67): who signed the outer signature, and the signature.
    public var outerAuthorityReference: String?
    public var outerSignature: [UInt8]?

    public init(authorityReference: String?, publicKey: CVPublicKey, holderReference: String, extensions: [[UInt8]] = []) {
        self.authorityReference = authorityReference
        self.publicKey = publicKey
        self.holderReference = holderReference
        self.extensions = extensions
    }

    /// Parses a request (7F21) or an authentication request (67).
    public init(bytes: [UInt8]) throws(CVCertificateError) {
        let outer: TLV
        do {
            outer = try BERTLV.parseSingle(bytes)
        } catch {
            throw CVCertificateError(.malformed, field: "certificate request", "not one BER-TLV object: \(error.reason)")
        }
        switch outer.tag {
        case 0x7F21:
            try self.init(request: outer)
        case 0x67:
            let parts = try CVCertificate.children(outer, "authentication")
            guard parts.count == 3, parts[0].tag == 0x7F21, parts[1].tag == 0x42, parts[2].tag == 0x5F37 else {
                throw CVCertificateError(.malformed, field: "authentication", "expected a request (7F21), the outer CAR (42) and the outer signature (5F37)")
            }
            try self.init(request: parts[0])
            outerAuthorityReference = try CVCertificate.reference(parts[1].value, "outer CAR")
            guard !parts[2].value.isEmpty else { throw CVCertificateError(.malformed, field: "outer signature", "empty") }
            outerSignature = parts[2].value
        default:
            throw CVCertificateError(.malformed, field: "certificate request",
                                     "tag \(BERTLV.tagString(outer.tag)) is neither a request (7F21) nor an authentication request (67)")
        }
    }

    private init(request: TLV) throws(CVCertificateError) {
        let parts = try CVCertificate.children(request, "certificate request")
        guard parts.count == 2, parts[0].tag == 0x7F4E, parts[1].tag == 0x5F37 else {
            throw CVCertificateError(.malformed, field: "certificate request", "expected a body (7F4E) and the inner signature (5F37)")
        }
        var body = try CVCertificate.children(parts[0], "request body")[...]
        func take(_ tag: UInt32) -> TLV? {
            guard body.first?.tag == tag else { return nil }
            return body.popFirst()
        }
        guard let profile = take(0x5F29), profile.value.count == 1 else {
            throw CVCertificateError(.malformed, field: "profile identifier", "missing, or not one byte")
        }
        guard profile.value[0] == 0 else {
            throw CVCertificateError(.unsupportedAlgorithm, field: "profile identifier", "version \(profile.value[0]) (only 0 is defined)")
        }
        let car = take(0x42)
        guard let key = take(0x7F49) else { throw CVCertificateError(.malformed, field: "public key", "missing (7F49 after 5F29 [42])") }
        guard let chr = take(0x5F20) else { throw CVCertificateError(.malformed, field: "CHR", "missing (5F20 after 7F49)") }
        let extensionsTLV = take(0x65)
        guard body.isEmpty else {
            throw CVCertificateError(.malformed, field: "request body",
                                     "unexpected \(body.map { BERTLV.tagString($0.tag) }.joined(separator: " ")): a request has 5F29 [42] 7F49 5F20 [65]")
        }
        if let car { authorityReference = try CVCertificate.reference(car.value, "CAR") }
        publicKey = try CVPublicKey(key)
        guard publicKey.algorithm.isRSA || publicKey.domainParameters != nil else {
            throw CVCertificateError(.missingDomainParameters, field: "public key", "a request carries the EC domain parameters of the new key")
        }
        holderReference = try CVCertificate.reference(chr.value, "CHR")
        if let extensionsTLV { extensions = try CVCertificate.children(extensionsTLV, "certificate extensions").map { $0.encoded() } }
        guard !parts[1].value.isEmpty else { throw CVCertificateError(.malformed, field: "inner signature", "empty") }
        innerSignature = parts[1].value
    }

    /// The body (7F4E), what the inner signature covers.
    public var body: [UInt8] {
        var fields = [TLV(tag: 0x5F29, value: [profileIdentifier])]
        if let authorityReference { fields.append(TLV(tag: 0x42, value: CVCertificate.referenceBytes(authorityReference))) }
        fields += [publicKey.tlv, TLV(tag: 0x5F20, value: CVCertificate.referenceBytes(holderReference))]
        if !extensions.isEmpty { fields.append(TLV(tag: 0x65, value: extensions.flatMap { $0 })) }
        return TLV(tag: 0x7F4E, children: fields).encoded()
    }

    /// The request without authentication (7F21).
    public var request: [UInt8] { TLV(tag: 0x7F21, value: body + TLV(tag: 0x5F37, value: innerSignature).encoded()).encoded() }

    /// What the outer signature covers: the request and the outer CAR, both encoded.
    private func outerSignedData(_ reference: String) -> [UInt8] {
        request + TLV(tag: 0x42, value: CVCertificate.referenceBytes(reference)).encoded()
    }

    /// The request as it is sent: an authentication request (67) when it has an outer signature.
    public var encoded: [UInt8] {
        guard let outerAuthorityReference, let outerSignature else { return request }
        return TLV(tag: 0x67, value: outerSignedData(outerAuthorityReference) + TLV(tag: 0x5F37, value: outerSignature).encoded()).encoded()
    }

    /// Signs the body with the new key (the private half of `publicKey`).
    public mutating func sign(with newKey: PrivateKey) throws(CVCertificateError) {
        innerSignature = try publicKey.algorithm.sign(body, with: newKey)
    }

    /// Adds the outer signature with the key of the certificate `reference` names (the holder's
    /// current certificate, or a DV's for a first request).
    public mutating func authenticate(with key: PrivateKey, algorithm: CVSignatureAlgorithm, as reference: String) throws(CVCertificateError) {
        outerAuthorityReference = reference
        outerSignature = try algorithm.sign(outerSignedData(reference), with: key)
    }

    /// The same, with the key wherever it lives (a token, a signing service).
    public mutating func authenticate(with signer: any TerminalSigner, algorithm: CVSignatureAlgorithm, as reference: String) async throws(CVCertificateError) {
        let signature = try await signer.sign(outerSignedData(reference), algorithm: algorithm)
        outerAuthorityReference = reference
        outerSignature = signature
    }

    /// Checks the inner signature with the request's own key: the requester holds the private key.
    public func verifyInnerSignature() throws(CVCertificateError) {
        guard publicKey.algorithm.verify(innerSignature, over: body, with: try publicKey.publicKey()) else {
            throw CVCertificateError(.badSignature, field: "inner signature", "does not verify with the request's own key (\(publicKey.algorithm.schemeName))")
        }
    }

    /// Checks the outer signature with the key of `outerAuthorityReference`.
    public func verifyOuterSignature(with key: CVPublicKey) throws(CVCertificateError) {
        guard let outerAuthorityReference, let outerSignature else {
            throw CVCertificateError(.malformed, field: "authentication", "the request has no outer signature")
        }
        guard key.algorithm.verify(outerSignature, over: outerSignedData(outerAuthorityReference), with: try key.publicKey()) else {
            throw CVCertificateError(.badSignature, field: "outer signature", "does not verify with the key of \(outerAuthorityReference)")
        }
    }

    public var description: String {
        "CV certificate request for \(holderReference)" + (authorityReference.map { " to \($0)" } ?? "")
            + (outerAuthorityReference.map { ", authenticated by \($0)" } ?? "")
    }
}
