import BoundedFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto

/// Signs for a terminal in Terminal Authentication: the private key never has to leave where it
/// lives (a file, a PKCS#11 token, a signing service behind a command).
public protocol TerminalSigner: Sendable {
    /// Signs `message` (hashing included) as `algorithm` says: plain `r ‖ s` for ECDSA.
    func sign(_ message: [UInt8], algorithm: CVSignatureAlgorithm) async throws(CVCertificateError) -> [UInt8]
}

/// A terminal key held in this process (a PKCS#8 file, DER or PEM).
public struct PrivateKeySigner: TerminalSigner {
    let key: PrivateKey

    public init(key: PrivateKey) { self.key = key }

    /// Loads a PKCS#8 (or traditional) private key, DER or PEM.
    public init(contentsOf url: URL) throws(CVCertificateError) {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(url.path, ceiling: BoundedFile.Ceiling.key, what: "terminal key")
        } catch {
            throw CVCertificateError(.malformed, field: "terminal key", error.description)
        }
        do {
            key = try PrivateKey(bytes: bytes)
        } catch {
            throw CVCertificateError(.malformed, field: "terminal key", "\(url.lastPathComponent) is not a private key (PKCS#8, DER or PEM)")
        }
    }

    public func sign(_ message: [UInt8], algorithm: CVSignatureAlgorithm) async throws(CVCertificateError) -> [UInt8] {
        try algorithm.sign(message, with: key)
    }
}

/// A terminal's credentials for Terminal Authentication: its certificates, the DV and link
/// certificates that lead to the chips' CVCAs, and the signer of its key.
///
/// An Inspection System usually holds several terminal certificates for one key: one under each
/// DV certificate its DV got from a foreign CVCA (one per issuing state it reads), and the old
/// and the renewed one around a renewal. TA picks, for each chip, the terminal certificate with a
/// chain to a CVCA the chip trusts — the newest first.
public struct TerminalCredentials: Sendable {
    /// Every certificate given (the terminal's, DV, link and CVCA certificates).
    public let certificates: [CVCertificate]
    /// The terminal certificates (those no other given certificate was issued by), newest first.
    public let terminals: [CVCertificate]
    public let signer: any TerminalSigner

    /// The newest terminal certificate.
    public var terminal: CVCertificate { terminals[0] }

    public init(certificates: [CVCertificate], signer: any TerminalSigner) throws(CVCertificateError) {
        let issuers = Set(certificates.map(\.authorityReference))
        let leaves = certificates.filter { $0.authorization.role == .terminal && !issuers.contains($0.holderReference) }
        guard !leaves.isEmpty else {
            throw CVCertificateError(.noChain, field: "CHAT", "none of the \(certificates.count) certificate(s) is a terminal certificate")
        }
        self.certificates = certificates
        terminals = leaves.sorted { ($0.effectiveDate, $0.expirationDate) > ($1.effectiveDate, $1.expirationDate) }
        self.signer = signer
    }

    /// The chain from the newest terminal certificate that has one to one of `trustPoints` (a
    /// chip's CVCAs, in its order of preference).
    public func chain(to trustPoints: [String]) throws(CVCertificateError) -> CVCertificateChain {
        var first: CVCertificateError?
        for terminal in terminals {
            do {
                return try CVCertificateChain.build(to: trustPoints, from: certificates, terminal: terminal)
            } catch {
                first = first ?? error
            }
        }
        throw first ?? CVCertificateError(.noChain, field: "CAR", "no terminal certificate")
    }

    /// Loads `.cvcert` files, or every `.cvcert` / `.cvc` file in directories.
    public static func certificates(at paths: [String]) throws(CVCertificateError) -> [CVCertificate] {
        var result: [CVCertificate] = []
        for path in paths {
            let files: [String]
            switch BoundedFile.kind(path) {
            case .missing:
                throw CVCertificateError(.malformed, field: "terminal certificates", "\(path) does not exist")
            case .directory:
                do {
                    files = try BoundedFile.list(path, what: "terminal certificate directory")
                        .filter { $0.hasSuffix(".cvcert") || $0.hasSuffix(".cvc") }.map { path + "/" + $0 }
                } catch {
                    throw CVCertificateError(.malformed, field: "terminal certificates", error.description)
                }
            case .other:
                files = [path]
            }
            for file in files {
                let data: [UInt8]
                do {
                    data = try BoundedFile.read(file, ceiling: BoundedFile.Ceiling.cvCertificate, what: "CV certificate")
                } catch {
                    throw CVCertificateError(.malformed, field: "terminal certificates", error.description)
                }
                do {
                    result.append(try CVCertificate(bytes: data))
                } catch {
                    throw CVCertificateError(error.code, field: error.field, "\(URL(fileURLWithPath: file).lastPathComponent): \(error.reason)")
                }
            }
        }
        return result
    }
}
