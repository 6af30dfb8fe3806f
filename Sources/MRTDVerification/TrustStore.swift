import BoundedFiles
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto
import SmartCardCore

/// The CSCA certificates (and CRLs) passive authentication trusts: PEM/DER certificate files,
/// directories of them, and ICAO master lists (CMS over `CscaMasterList`).
public struct TrustStore: Sendable {
    package static let masterListOID = "2.23.136.1.1.2"
    /// The directory of a trust store that holds IACAs (ISO 18013-5 issuers), not CSCAs.
    public static let mdocIssuerDirectory = "iaca"

    public private(set) var certificates: [Certificate] = []
    public private(set) var revocationLists: [RevocationList] = []
    /// What was loaded from where, for `--verbose` output and troubleshooting.
    public private(set) var sources: [(path: String, certificates: Int, crls: Int)] = []
    /// Files in trust directories that were not certificates, master lists or CRLs.
    public private(set) var skipped: [(path: String, reason: String)] = []
    /// The signers of the master lists loaded (verified), with the list's file.
    public private(set) var masterListSigners: [(path: String, signer: Certificate)] = []

    public init() {}

    public var isEmpty: Bool { certificates.isEmpty }

    public mutating func add(_ certificate: Certificate) { certificates.append(certificate) }

    /// Adds a file (certificate, PEM bundle, master list, CRL) or every such file in a directory
    /// (recursively).
    public mutating func add(path: URL) throws(MRTDError) {
        let kind = BoundedFile.kind(path.path)
        guard kind != .missing else {
            throw MRTDError(.trustStore, "trust path \(path.path) does not exist")
        }
        if kind == .directory {
            // One consistent version of the directory (issue 49): read through one directory
            // descriptor, again from the start when a file vanishes or the directory is swapped
            // under the reader (a `trust refresh`), never half of one version and half of another.
            let snapshot: DirectorySnapshot
            do {
                snapshot = try DirectorySnapshot.read(path.path, what: "trust directory", fileCeiling: BoundedFile.Ceiling.trustFile,
                                                      totalCeiling: Self.directoryCeiling, symlinks: .follow, accept: Self.looksLikeTrustFile)
            } catch {
                throw MRTDError(.trustStore, error.description)
            }
            // A store's iaca/ holds mdoc issuers (IACAs, `trust import --iaca`): never CSCAs.
            let issuers = path.path + "/" + Self.mdocIssuerDirectory + "/"
            for entry in snapshot.entries where !entry.path.hasPrefix(issuers) {
                // Inside a directory, files that are not trust material (a private key next
                // to its certificate, a README) are skipped and remembered, not fatal.
                do {
                    try add(bytes: entry.bytes, name: entry.path)
                } catch {
                    skipped.append((entry.path, "\(entry.path.split(separator: "/").last.map(String.init) ?? entry.path): \(error.reason)"))
                }
            }
            return
        }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path.path, ceiling: BoundedFile.Ceiling.trustFile, what: "trust file (certificate, master list or CRL)")
        } catch {
            throw MRTDError(.trustStore, error.description)
        }
        do {
            try add(bytes: bytes, name: path.path)
        } catch {
            throw MRTDError(error.code, "\(path.lastPathComponent): \(error.reason)")
        }
    }

    /// Whether `bytes` are a CSCA master list (CMS SignedData over CscaMasterList), not PEM text.
    package static func isMasterList(_ bytes: [UInt8]) -> Bool {
        guard !String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN"),
              let signed = try? CMSSignedData(bytes: bytes) else { return false }
        return signed.contentType == masterListOID
    }

    /// The most a trust directory may hold in all (every national master list of the world is under 64 MiB).
    package static let directoryCeiling = 256 * BoundedFile.mebibyte

    static func looksLikeTrustFile(_ name: String) -> Bool {
        let lower = name.lowercased()
        return [".pem", ".crt", ".cer", ".der", ".ml", ".crl", ".cert"].contains { lower.hasSuffix($0) }
    }

    /// Adds certificates, a master list or a CRL from bytes.
    public mutating func add(bytes: [UInt8], name: String = "(memory)") throws(MRTDError) {
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        if text.contains("-----BEGIN X509 CRL") || name.lowercased().hasSuffix(".crl") {
            do {
                revocationLists.append(try RevocationList(bytes: bytes))
                sources.append((name, 0, 1))
                return
            } catch {
                throw MRTDError(.malformedData, "not a CRL: \(error.reason)")
            }
        }
        if !text.contains("-----BEGIN"), let signed = try? CMSSignedData(bytes: bytes) {
            let list = try MasterList(signed)
            // Given as trust by the operator (--trust FILE), a list may vouch for its own signer
            // through its country's CSCA; `trust import` asks for an anchor trusted beforehand.
            guard list.signerIsIssued(byOneOf: list.certificates + certificates) else {
                throw MRTDError(.trustStore, "the master list's signer (\(list.signer.subject)) is not issued by a CSCA in the list or the trust store")
            }
            // Each certificate on its own: a CA, a sound key, a self-signature that verifies (or
            // a link from a CSCA trusted here); the others are skipped, each with its reason.
            var accepted: [Certificate] = []
            for certificate in list.certificates {
                if let problem = MasterList.problem(with: certificate, trusting: list.certificates + certificates) {
                    skipped.append(("\(name): \(certificate.subject)", problem))
                } else {
                    accepted.append(certificate)
                }
            }
            masterListSigners.append((name, list.signer))
            certificates += accepted
            sources.append((name, accepted.count, 0))
            return
        }
        do {
            let found = try Certificate.all(bytes: bytes)
            guard !found.isEmpty else { throw MRTDError(.malformedData, "no certificate found") }
            certificates += found
            sources.append((name, found.count, 0))
        } catch let error as MRTDError {
            throw error
        } catch {
            // A DER CRL under a name that does not say so (a distribution point's URL, a
            // download saved as "crl" or "latest"): the structure decides.
            if !text.contains("-----BEGIN"), let crl = try? RevocationList(bytes: bytes) {
                revocationLists.append(crl)
                sources.append((name, 0, 1))
                return
            }
            // OpenSSL's own words (error:0680008E:asn1 encoding routines::…) help nobody here.
            let looksPEM = bytes.starts(with: Array("-----BEGIN".utf8))
            throw MRTDError(.malformedData, "not a certificate, master list or CRL (\(bytes.count) bytes\(looksPEM ? ", PEM that does not decode" : " that are neither DER nor PEM"))")
        }
    }

    /// Candidate issuers of `certificate`: same name, and matching key identifiers when both have them.
    func issuers(of certificate: Certificate) -> [Certificate] {
        certificates.filter { candidate in
            guard certificate.isIssued(byNameOf: candidate) else { return false }
            if let aki = certificate.authorityKeyIdentifier, let ski = candidate.subjectKeyIdentifier { return aki == ski }
            return true
        }
    }
}
