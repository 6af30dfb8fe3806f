import COpenSSL
import COpenSSLShim

extension Certificate {
    /// The DER SubjectPublicKeyInfo of the certificate's key.
    public var subjectPublicKeyInfo: [UInt8] {
        guard let key = X509_get_X509_PUBKEY(pointer) else { return [] }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509_PUBKEY(key, &out)
        guard length > 0, let out else { return [] }
        defer { COpenSSLShim_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// What a CSCA *is* in a trust store (issue 49): the SHA-256 of its SubjectPublicKeyInfo, as
    /// upper-case hex. Two certificates are the same CSCA only when this is the same; the subject
    /// name and the key identifier are claims anyone can copy.
    public var keyIdentity: String {
        DigestAlgorithm.sha256.hash(subjectPublicKeyInfo).map { Self.hexDigit($0 >> 4) + Self.hexDigit($0 & 0x0F) }.joined()
    }

    /// Whether the certificate's own key verifies its signature (a root CSCA, not a link).
    public var isSelfSigned: Bool { isSelfIssued && isSignatureValid(issuer: self) }

    static func hexDigit(_ value: UInt8) -> String { String("0123456789ABCDEF"[String.Index(utf16Offset: Int(value), in: "0123456789ABCDEF")]) }
}

extension RevocationList {
    /// The CRL's authorityKeyIdentifier key id, when it carries one.
    public var authorityKeyIdentifier: [UInt8]? {
        var critical: Int32 = 0
        guard let raw = X509_CRL_get_ext_d2i(pointer, NID_authority_key_identifier, &critical, nil) else { return nil }
        let aki = raw.assumingMemoryBound(to: AUTHORITY_KEYID.self)
        defer { AUTHORITY_KEYID_free(aki) }
        guard let keyid = aki.pointee.keyid, let data = ASN1_STRING_get0_data(keyid) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(keyid))))
    }

    /// The CSCA among `candidates` whose key verifies this CRL and whose subject key identifier
    /// the CRL's authorityKeyIdentifier names (when both are there): the key a CRL belongs to.
    public func signingKey(among candidates: [Certificate]) -> Certificate? {
        let aki = authorityKeyIdentifier
        return candidates.first { candidate in
            if let aki, let ski = candidate.subjectKeyIdentifier, aki != ski { return false }
            return isIssued(by: candidate)
        }
    }
}
