/// Why a card-verifiable certificate (or request) was refused: a stable `code` for programs, the
/// `field` that is wrong (`CAR`, `public key`, `CHAT`, `expiration date`, `signature` …) and a
/// sentence for people.
public struct CVCertificateError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The encoding is not a CV certificate (TR-03110-3 Appendix C): a tag, length or value is wrong.
        case malformed
        /// A signature or public-key algorithm this implementation does not know.
        case unsupportedAlgorithm
        /// An EC key without domain parameters and no issuer key to take them from.
        case missingDomainParameters
        /// The signature does not verify with the issuer's key.
        case badSignature
        /// The certificate's CAR is not the issuer's CHR.
        case wrongIssuer
        /// Not valid yet, or expired, at the date it was checked against.
        case notValid
        /// The certificate may not do what it was used for (its CHAT, its role in the chain).
        case unauthorized
        /// No chain leads from a trust point to the certificate.
        case noChain
    }

    public let code: Code
    public let field: String
    public let reason: String

    public init(_ code: Code, field: String, _ reason: String) {
        self.code = code
        self.field = field
        self.reason = reason
    }

    public var description: String { "\(field): \(reason)" }
}
