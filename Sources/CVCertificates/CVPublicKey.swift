import LDS
import MRTDCrypto
import SmartCardCore

/// The public key of a CV certificate (tag 7F49, TR-03110-3 D.3): the algorithm its holder signs
/// with and, for ECDSA, the point Y and — in CVCA certificates — the curve's domain parameters
/// (DV and terminal certificates inherit them from the CVCA); for RSA, the modulus and exponent.
public struct CVPublicKey: Sendable, Hashable {
    /// ECDSA domain parameters: prime p, coefficients a and b, generator G, order r, cofactor f.
    public struct DomainParameters: Sendable, Hashable {
        public var prime: [UInt8]
        public var a: [UInt8]
        public var b: [UInt8]
        public var generator: [UInt8]
        public var order: [UInt8]
        public var cofactor: [UInt8]

        public init(prime: [UInt8], a: [UInt8], b: [UInt8], generator: [UInt8], order: [UInt8], cofactor: [UInt8]) {
            (self.prime, self.a, self.b, self.generator, self.order, self.cofactor) = (prime, a, b, generator, order, cofactor)
        }

        /// A named curve's parameters.
        public init(curve: EllipticCurve) throws(CVCertificateError) {
            // ECParameters ::= SEQUENCE { version, fieldID SEQUENCE { prime-field, p }, curve SEQUENCE { a, b [, seed] }, base, order, cofactor }
            do {
                let fields = try BERTLV.parseSingle(curve.explicitParameters).children()
                guard fields.count >= 6, let p = try fields[1].children().last, try fields[2].children().count >= 2 else {
                    throw CVCertificateError(.unsupportedAlgorithm, field: "public key", "no explicit parameters for \(curve.name)")
                }
                let ab = try fields[2].children()
                self.init(prime: Self.unsigned(p.value), a: ab[0].value, b: ab[1].value, generator: fields[3].value,
                          order: Self.unsigned(fields[4].value), cofactor: Self.unsigned(fields[5].value))
            } catch let error as CVCertificateError {
                throw error
            } catch {
                throw CVCertificateError(.unsupportedAlgorithm, field: "public key", "no explicit parameters for \(curve.name)")
            }
        }

        static func unsigned(_ bytes: [UInt8]) -> [UInt8] {
            let trimmed = Array(bytes.drop { $0 == 0 })
            return trimmed.isEmpty ? [0] : trimmed
        }

        /// ECParameters (DER) with these explicit values.
        var der: [UInt8] {
            let size = Self.unsigned(prime).count
            func field(_ value: [UInt8]) -> [UInt8] {
                let trimmed = Self.unsigned(value)
                return [UInt8](repeating: 0, count: max(0, size - trimmed.count)) + trimmed
            }
            return DER.sequence(
                DER.integer(1),
                DER.sequence(DER.oid("1.2.840.10045.1.1"), DER.unsignedInteger(prime)),
                DER.sequence(DER.octetString(field(a)), DER.octetString(field(b))),
                DER.octetString(generator), DER.unsignedInteger(order), DER.unsignedInteger(cofactor))
        }
    }

    public var algorithm: CVSignatureAlgorithm
    /// ECDSA: the domain parameters when the certificate carries them (CVCA certificates).
    public var domainParameters: DomainParameters?
    /// ECDSA: the public point Y (uncompressed).
    public var point: [UInt8]?
    /// RSA: modulus n and public exponent e.
    public var modulus: [UInt8]?
    public var exponent: [UInt8]?

    public init(algorithm: CVSignatureAlgorithm, domainParameters: DomainParameters? = nil, point: [UInt8]? = nil,
                modulus: [UInt8]? = nil, exponent: [UInt8]? = nil) {
        self.algorithm = algorithm
        self.domainParameters = domainParameters
        self.point = point
        self.modulus = modulus
        self.exponent = exponent
    }

    /// The public half of `key` for signing with `algorithm`; `withDomainParameters` writes the
    /// curve's parameters (as a CVCA certificate must).
    public init(key: PrivateKey, algorithm: CVSignatureAlgorithm, withDomainParameters: Bool) throws(CVCertificateError) {
        try self.init(algorithm: algorithm, withDomainParameters: withDomainParameters, rsa: key.rsaComponents,
                      ec: key.ecKey.map { ($0.curve, $0.point) })
    }

    /// A key held elsewhere (a token, a SubjectPublicKeyInfo file) for signing with `algorithm`.
    public init(publicKey: PublicKey, algorithm: CVSignatureAlgorithm, withDomainParameters: Bool) throws(CVCertificateError) {
        try self.init(algorithm: algorithm, withDomainParameters: withDomainParameters, rsa: publicKey.rsaComponents, ec: publicKey.ecPoint)
    }

    private init(algorithm: CVSignatureAlgorithm, withDomainParameters: Bool, rsa: (modulus: [UInt8], exponent: [UInt8])?,
                 ec: (curve: EllipticCurve, point: [UInt8])?) throws(CVCertificateError) {
        if algorithm.isRSA {
            guard let (modulus, exponent) = rsa else {
                throw CVCertificateError(.unsupportedAlgorithm, field: "public key", "\(algorithm.schemeName) needs an RSA key")
            }
            self.init(algorithm: algorithm, modulus: modulus, exponent: exponent)
        } else {
            guard let (curve, point) = ec else {
                throw CVCertificateError(.unsupportedAlgorithm, field: "public key", "\(algorithm.schemeName) needs an EC key on a known curve")
            }
            self.init(algorithm: algorithm, domainParameters: withDomainParameters ? try DomainParameters(curve: curve) : nil, point: point)
        }
    }

    /// The standard curve the point of an EC key lies on — for a DV or terminal key checked
    /// without its CVCA (which holds the domain parameters). A point lies on one curve of a size.
    public var standardCurve: EllipticCurve? {
        guard let point, !algorithm.isRSA else { return nil }
        return EllipticCurve.all.first { $0.isValidPoint(point) }
    }

    /// Parses the content of a 7F49 object.
    init(_ tlv: TLV) throws(CVCertificateError) {
        let fields: [TLV]
        do {
            fields = try tlv.children()
        } catch {
            throw CVCertificateError(.malformed, field: "public key", "not a list of data objects: \(error.reason)")
        }
        guard let oid = fields.first, oid.tag == 0x06, let dotted = DER.oidString(oid.value) else {
            throw CVCertificateError(.malformed, field: "public key", "does not begin with an object identifier")
        }
        guard let algorithm = CVSignatureAlgorithm(rawValue: dotted) else {
            throw CVCertificateError(.unsupportedAlgorithm, field: "public key", "unknown algorithm \(dotted)")
        }
        var values: [UInt32: [UInt8]] = [:]
        for field in fields.dropFirst() {
            guard (0x81...0x87).contains(field.tag), values[field.tag] == nil, !field.value.isEmpty else {
                throw CVCertificateError(.malformed, field: "public key", "unexpected or repeated data object \(BERTLV.tagString(field.tag))")
            }
            values[field.tag] = field.value
        }
        self.algorithm = algorithm
        if algorithm.isRSA {
            guard let n = values[0x81], let e = values[0x82], values.count == 2 else {
                throw CVCertificateError(.malformed, field: "public key", "an RSA key has a modulus (81) and an exponent (82), nothing else")
            }
            modulus = n
            exponent = e
        } else {
            guard let y = values[0x86] else { throw CVCertificateError(.malformed, field: "public key", "an ECDSA key without its point (86)") }
            point = y
            let domain = [0x81, 0x82, 0x83, 0x84, 0x85, 0x87].map { values[UInt32($0)] }
            if domain.allSatisfy({ $0 != nil }) {
                let v = domain.compactMap { $0 }
                domainParameters = DomainParameters(prime: v[0], a: v[1], b: v[2], generator: v[3], order: v[4], cofactor: v[5])
            } else if domain.contains(where: { $0 != nil }) {
                // A CVCA key may omit the cofactor (f): taken as 1 then.
                guard domain.prefix(5).allSatisfy({ $0 != nil }) else {
                    throw CVCertificateError(.malformed, field: "public key", "domain parameters are incomplete (81–85 go together)")
                }
                let v = domain.prefix(5).compactMap { $0 }
                domainParameters = DomainParameters(prime: v[0], a: v[1], b: v[2], generator: v[3], order: v[4], cofactor: [1])
            }
        }
    }

    /// The 7F49 object.
    var tlv: TLV {
        var fields = [TLV(tag: 0x06, value: DER.oidContent(algorithm.oid))]
        if algorithm.isRSA {
            fields += [TLV(tag: 0x81, value: modulus ?? []), TLV(tag: 0x82, value: exponent ?? [])]
        } else {
            if let domain = domainParameters {
                fields += [TLV(tag: 0x81, value: domain.prime), TLV(tag: 0x82, value: domain.a), TLV(tag: 0x83, value: domain.b),
                           TLV(tag: 0x84, value: domain.generator), TLV(tag: 0x85, value: domain.order)]
            }
            fields.append(TLV(tag: 0x86, value: point ?? []))
            if let domain = domainParameters { fields.append(TLV(tag: 0x87, value: domain.cofactor)) }
        }
        return TLV(tag: 0x7F49, children: fields)
    }

    /// This key with the issuer's domain parameters when it has none of its own (DV and
    /// terminal certificates take the CVCA's).
    public func inheriting(from issuer: CVPublicKey) -> CVPublicKey {
        guard !algorithm.isRSA, domainParameters == nil else { return self }
        var copy = self
        copy.domainParameters = issuer.domainParameters
        return copy
    }

    /// An OpenSSL public key for verifying.
    public func publicKey() throws(CVCertificateError) -> PublicKey {
        let spki: [UInt8]
        if algorithm.isRSA {
            guard let modulus, let exponent else { throw CVCertificateError(.malformed, field: "public key", "RSA key without modulus") }
            let key = DER.sequence(DER.unsignedInteger(modulus), DER.unsignedInteger(exponent))
            spki = DER.sequence(DER.sequence(DER.oid("1.2.840.113549.1.1.1"), DER.null), BERTLV.encode(tag: 0x03, value: [0] + key))
        } else {
            guard let domain = domainParameters else {
                throw CVCertificateError(.missingDomainParameters, field: "public key", "an ECDSA key without domain parameters (take them from the CVCA)")
            }
            guard let point else { throw CVCertificateError(.malformed, field: "public key", "ECDSA key without a point") }
            spki = DER.sequence(DER.sequence(DER.oid("1.2.840.10045.2.1"), domain.der), BERTLV.encode(tag: 0x03, value: [0] + point))
        }
        do {
            return try PublicKey(subjectPublicKeyInfo: spki)
        } catch {
            throw CVCertificateError(.malformed, field: "public key", "not a usable key: \(error.reason)")
        }
    }
}
