/// A terminal's certificate chain as a chip checks it in Terminal Authentication: from a trust
/// point the chip holds (a CVCA's CHR, named in EF.CVCA) through link certificates to the DV
/// certificate and the terminal's own, each signed by the one before.
public struct CVCertificateChain: Sendable, Hashable {
    /// The certificates to send, in order (link certificates first, the terminal's last).
    public let certificates: [CVCertificate]
    /// The trust point the chain starts from.
    public let trustPoint: String

    /// The terminal certificate at the end.
    public var terminal: CVCertificate? { certificates.last }

    /// Builds the chain from `terminal` up to one of `trustPoints` (CVCA references the chip
    /// trusts, in its order of preference) through certificates of `pool`.
    public static func build(to trustPoints: [String], from pool: [CVCertificate], terminal: CVCertificate) throws(CVCertificateError) -> CVCertificateChain {
        var best: [CVCertificate]?
        var bestPoint = ""
        for point in trustPoints {
            if let path = path(from: terminal, to: point, pool: pool, seen: [terminal.holderReference]),
               best.map({ path.count < $0.count }) ?? true {
                best = path
                bestPoint = point
                break
            }
        }
        guard let best else {
            throw CVCertificateError(.noChain, field: "CAR",
                                     "no chain from \(terminal.holderReference) to \(trustPoints.isEmpty ? "a trust point" : trustPoints.joined(separator: " or ")) among \(pool.count) certificate(s)")
        }
        return CVCertificateChain(certificates: best, trustPoint: bestPoint)
    }

    /// Certificates from the one signed by `point` down to `certificate`.
    private static func path(from certificate: CVCertificate, to point: String, pool: [CVCertificate], seen: Set<String>) -> [CVCertificate]? {
        if certificate.authorityReference == point { return [certificate] }
        for issuer in pool where issuer.holderReference == certificate.authorityReference && !issuer.isSelfSigned
            && !seen.contains(issuer.holderReference) {
            if let above = path(from: issuer, to: point, pool: pool, seen: seen.union([issuer.holderReference])) {
                return above + [certificate]
            }
        }
        return nil
    }

    /// Checks the chain as the chip will, against the trust point's key (the CVCA's public key,
    /// with its domain parameters) at `date`: each signature, each certificate valid (a terminal
    /// certificate must be; DV and link certificates too), CVCA → DV → terminal roles, and the
    /// effective authorization (the CHATs ANDed down the chain). Returns that authorization.
    @discardableResult
    public func verify(trustPointKey: CVPublicKey, on date: CVDate) throws(CVCertificateError) -> CertificateHolderAuthorization {
        var issuerKey = trustPointKey
        var effective: CertificateHolderAuthorization?
        for (index, certificate) in certificates.enumerated() {
            let key = certificate.publicKey.inheriting(from: issuerKey)
            try certificate.verifySignature(issuerKey: issuerKey)
            guard certificate.isValid(on: date) else {
                throw CVCertificateError(.notValid, field: "expiration date",
                                         "\(certificate.holderReference) is valid \(certificate.effectiveDate)…\(certificate.expirationDate), not on \(date)")
            }
            let role = certificate.authorization.role
            let last = index == certificates.count - 1
            switch role {
            case .cvca where !last: break
            // Both DV roles only just above the terminal (a `where` after a list binds to its last pattern).
            case .dvDomestic where index == certificates.count - 2, .dvForeign where index == certificates.count - 2: break
            case .terminal where last: break
            default:
                throw CVCertificateError(.unauthorized, field: "CHAT", "\(certificate.holderReference) has the role \(role.rawValue) at place \(index + 1) of \(certificates.count)")
            }
            effective = effective.map { certificate.authorization.intersected(with: $0) } ?? certificate.authorization
            issuerKey = key
        }
        guard let effective else { throw CVCertificateError(.noChain, field: "certificate", "an empty chain") }
        return effective
    }
}
