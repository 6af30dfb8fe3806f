import LDS
import MRTDCrypto
import SmartCardCore

/// A card-verifiable certificate (BSI TR-03110-3 Appendix C; ICAO 9303 EAC): the body (7F4E) —
/// profile, Certification Authority Reference (CAR), public key, Certificate Holder Reference
/// (CHR), CHAT, effective and expiration dates, extensions — and the issuer's signature over it
/// (5F37). Parsed and encoded by the same type: `CVCertificate(bytes:).encoded` gives the bytes back.
public struct CVCertificate: Sendable, Hashable, CustomStringConvertible {
    public var profileIdentifier: UInt8 = 0
    /// Who signed it (the issuer's CHR).
    public var authorityReference: String
    public var publicKey: CVPublicKey
    /// Whose key it is.
    public var holderReference: String
    public var authorization: CertificateHolderAuthorization
    public var effectiveDate: CVDate
    public var expirationDate: CVDate
    /// Certificate extensions (65): kept as they are, each a discretionary data template (73).
    public var extensions: [[UInt8]] = []
    /// The issuer's signature over the encoded body.
    public var signature: [UInt8]

    public init(authorityReference: String, publicKey: CVPublicKey, holderReference: String,
                authorization: CertificateHolderAuthorization, effectiveDate: CVDate, expirationDate: CVDate,
                extensions: [[UInt8]] = [], signature: [UInt8] = []) {
        self.authorityReference = authorityReference
        self.publicKey = publicKey
        self.holderReference = holderReference
        self.authorization = authorization
        self.effectiveDate = effectiveDate
        self.expirationDate = expirationDate
        self.extensions = extensions
        self.signature = signature
    }

    /// Parses a certificate (7F21 …), as a `.cvcert` file holds it.
    public init(bytes: [UInt8]) throws(CVCertificateError) {
        let outer: TLV
        do {
            outer = try BERTLV.parseSingle(bytes)
        } catch {
            throw CVCertificateError(.malformed, field: "certificate", "not one BER-TLV object: \(error.reason)")
        }
        guard outer.tag == 0x7F21 else {
            throw CVCertificateError(.malformed, field: "certificate", "tag \(BERTLV.tagString(outer.tag)) is not a CV certificate (7F21)")
        }
        try self.init(outer)
    }

    init(_ outer: TLV) throws(CVCertificateError) {
        let parts = try Self.children(outer, "certificate")
        guard parts.count == 2, parts[0].tag == 0x7F4E, parts[1].tag == 0x5F37 else {
            throw CVCertificateError(.malformed, field: "certificate", "expected a body (7F4E) and a signature (5F37)")
        }
        let body = try Self.children(parts[0], "certificate body")
        let tags = body.map(\.tag)
        let expected: [UInt32] = [0x5F29, 0x42, 0x7F49, 0x5F20, 0x7F4C, 0x5F25, 0x5F24]
        guard Array(tags.prefix(7)) == expected, tags.count == 7 || (tags.count == 8 && tags[7] == 0x65) else {
            throw CVCertificateError(.malformed, field: "certificate body",
                                     "data objects \(tags.map(BERTLV.tagString).joined(separator: " ")) are not 5F29 42 7F49 5F20 7F4C 5F25 5F24 [65]")
        }
        guard body[0].value.count == 1 else { throw CVCertificateError(.malformed, field: "profile identifier", "must be one byte") }
        profileIdentifier = body[0].value[0]
        guard profileIdentifier == 0 else {
            throw CVCertificateError(.unsupportedAlgorithm, field: "profile identifier", "version \(profileIdentifier) (only 0 is defined)")
        }
        authorityReference = try Self.reference(body[1].value, "CAR")
        publicKey = try CVPublicKey(body[2])
        holderReference = try Self.reference(body[3].value, "CHR")
        authorization = try CertificateHolderAuthorization(body[4])
        guard let effective = CVDate(bytes: body[5].value) else {
            throw CVCertificateError(.malformed, field: "effective date", "not six BCD digits of a date (YYMMDD)")
        }
        guard let expiration = CVDate(bytes: body[6].value) else {
            throw CVCertificateError(.malformed, field: "expiration date", "not six BCD digits of a date (YYMMDD)")
        }
        guard effective <= expiration else {
            throw CVCertificateError(.malformed, field: "expiration date", "\(expiration) is before the effective date \(effective)")
        }
        effectiveDate = effective
        expirationDate = expiration
        if tags.count == 8 {
            extensions = try Self.children(body[7], "certificate extensions").map { $0.encoded() }
        }
        guard !parts[1].value.isEmpty else { throw CVCertificateError(.malformed, field: "signature", "empty") }
        signature = parts[1].value
    }

    static func children(_ tlv: TLV, _ field: String) throws(CVCertificateError) -> [TLV] {
        do {
            return try tlv.children()
        } catch {
            throw CVCertificateError(.malformed, field: field, "not a list of data objects: \(error.reason)")
        }
    }

    /// A CAR or CHR: country (2 letters), holder mnemonic (0–9 characters), sequence number (5);
    /// ISO/IEC 8859-1, printable.
    public static func reference(_ bytes: [UInt8], _ field: String = "CAR") throws(CVCertificateError) -> String {
        guard (7...16).contains(bytes.count), bytes.allSatisfy({ (0x20...0x7E).contains($0) || $0 >= 0xA0 }) else {
            throw CVCertificateError(.malformed, field: field, "\(bytes.count) bytes are not a certificate reference (7–16 printable characters)")
        }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }

    /// A CAR or CHR given as text (a command line, a form), checked scalar by scalar: printable
    /// ISO/IEC 8859-1 only, 7–16 characters — a combining mark, a full-width digit or a control
    /// character is refused, never turned into other bytes.
    public static func referenceBytes(validating reference: String, _ field: String) throws(CVCertificateError) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in reference.unicodeScalars {
            guard (0x20...0x7E).contains(scalar.value) || (0xA0...0xFF).contains(scalar.value) else {
                throw CVCertificateError(.malformed, field: field, "U+\(String(scalar.value, radix: 16, uppercase: true)) is not a printable ISO/IEC 8859-1 character")
            }
            bytes.append(UInt8(scalar.value))
        }
        _ = try Self.reference(bytes, field)
        return bytes
    }

    /// A CAR or CHR as its ISO/IEC 8859-1 bytes.
    public static func referenceBytes(_ reference: String) -> [UInt8] {
        reference.unicodeScalars.map { $0.value <= 0xFF ? UInt8($0.value) : UInt8(ascii: "?") }
    }

    /// The body (7F4E), the bytes the signature covers.
    public var body: [UInt8] {
        var fields = [TLV(tag: 0x5F29, value: [profileIdentifier]), TLV(tag: 0x42, value: Self.referenceBytes(authorityReference)),
                      publicKey.tlv, TLV(tag: 0x5F20, value: Self.referenceBytes(holderReference)), authorization.tlv,
                      TLV(tag: 0x5F25, value: effectiveDate.bytes), TLV(tag: 0x5F24, value: expirationDate.bytes)]
        if !extensions.isEmpty { fields.append(TLV(tag: 0x65, value: extensions.flatMap { $0 })) }
        return TLV(tag: 0x7F4E, children: fields).encoded()
    }

    /// What PSO:Verify Certificate sends: the body and the signature, without the 7F21 wrapper.
    public var verifyCertificateData: [UInt8] { body + TLV(tag: 0x5F37, value: signature).encoded() }

    /// The certificate (7F21).
    public var encoded: [UInt8] { TLV(tag: 0x7F21, value: verifyCertificateData).encoded() }

    /// The country of the holder (the CHR's first two characters).
    public var country: String { String(holderReference.prefix(2)) }

    /// Whether the certificate signs itself (a CVCA's self-signed certificate: CAR = CHR).
    public var isSelfSigned: Bool { authorityReference == holderReference }

    /// Whether `date` lies within the validity period (both ends included).
    public func isValid(on date: CVDate) -> Bool { effectiveDate <= date && date <= expirationDate }

    /// Checks the signature with the issuer's key (whose CHR must be this certificate's CAR).
    public func verifySignature(issuerKey: CVPublicKey) throws(CVCertificateError) {
        let key = try issuerKey.publicKey()
        guard issuerKey.algorithm.verify(signature, over: body, with: key) else {
            throw CVCertificateError(.badSignature, field: "signature", "does not verify with the key of \(authorityReference) (\(issuerKey.algorithm.schemeName))")
        }
    }

    /// Signs the body with the issuer's private key (the issuer signs with the algorithm of its own public key).
    public mutating func sign(with key: PrivateKey, algorithm: CVSignatureAlgorithm) throws(CVCertificateError) {
        signature = try algorithm.sign(body, with: key)
    }

    public var description: String {
        "CVC \(holderReference) (\(authorization.role.rawValue)) issued by \(authorityReference), \(effectiveDate)…\(expirationDate)"
    }
}
