import Foundation
import MRTDCrypto
import SmartCardCore

/// The CSCA certificates (and CRLs) passive authentication trusts: PEM/DER certificate files,
/// directories of them, and ICAO master lists (CMS over `CscaMasterList`).
public struct TrustStore: Sendable {
    package static let masterListOID = "2.23.136.1.1.2"

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
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path.path, isDirectory: &isDirectory) else {
            throw MRTDError(.trustStore, "trust path \(path.path) does not exist")
        }
        if isDirectory.boolValue {
            let entries: [String]
            do {
                entries = try FileManager.default.contentsOfDirectory(atPath: path.path).sorted()
            } catch {
                throw MRTDError(.trustStore, "cannot list \(path.path): \(error.localizedDescription)")
            }
            for entry in entries where !entry.hasPrefix(".") {
                let child = path.appendingPathComponent(entry)
                var childIsDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: child.path, isDirectory: &childIsDirectory)
                if childIsDirectory.boolValue {
                    try add(path: child)
                } else if Self.looksLikeTrustFile(entry) {
                    // Inside a directory, files that are not trust material (a private key next
                    // to its certificate, a README) are skipped and remembered, not fatal.
                    do {
                        try add(path: child)
                    } catch {
                        skipped.append((child.path, error.reason))
                    }
                }
            }
            return
        }
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: path))
        } catch {
            throw MRTDError(.trustStore, "cannot read \(path.path): \(error.localizedDescription)")
        }
        do {
            try add(bytes: bytes, name: path.path)
        } catch {
            throw MRTDError(error.code, "\(path.lastPathComponent): \(error.reason)")
        }
    }

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
            guard signed.contentType == Self.masterListOID, let content = signed.content else {
                throw MRTDError(.malformedData, "CMS content \(signed.contentType) is not a CSCA master list")
            }
            let list = try Self.masterListCertificates(content)
            let signer = try Self.verifyMasterListSigner(signed, list: list, alreadyTrusted: certificates)
            masterListSigners.append((name, signer))
            certificates += list
            sources.append((name, list.count, 0))
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
            throw MRTDError(.malformedData, "not a certificate, master list or CRL: \(error)")
        }
    }

    /// A master list is only as good as its signature: the CMS signature must verify with the
    /// embedded master-list signer certificate, and that certificate must be issued by a CSCA the
    /// list itself carries (its country's) or the store already trusts. A list that was altered
    /// after signing, or signed by nobody the list vouches for, is refused.
    @discardableResult
    static func verifyMasterListSigner(_ signed: CMSSignedData, list: [Certificate], alreadyTrusted: [Certificate]) throws(MRTDError) -> Certificate {
        let signer: Certificate
        do {
            signer = try signed.verifySignature()
        } catch {
            throw MRTDError(.trustStore, "the master list's signature does not verify (\(error.reason)); it may have been altered")
        }
        let issued = (list + alreadyTrusted).contains { signer.isIssued(byNameOf: $0) && signer.isSignatureValid(issuer: $0) }
        guard issued else {
            throw MRTDError(.trustStore, "the master list's signer (\(signer.subject)) is not issued by a CSCA in the list or the trust store")
        }
        return signer
    }

    /// CscaMasterList ::= SEQUENCE { version INTEGER, certList SET OF Certificate }
    static func masterListCertificates(_ der: [UInt8]) throws(MRTDError) -> [Certificate] {
        let root = try parseLDS(der, expecting: 0x30, "CSCA master list")
        let fields = try children(of: root, "CSCA master list")
        guard fields.count == 2, fields[0].tag == 0x02, fields[1].tag == 0x31 else {
            throw MRTDError(.malformedData, "CSCA master list does not have a version and a certificate set")
        }
        var result: [Certificate] = []
        for entry in try children(of: fields[1], "CSCA master list certificates") where entry.tag == 0x30 {
            // A damaged certificate in a master list is skipped, not fatal.
            if let certificate = try? Certificate(bytes: entry.encoded()) { result.append(certificate) }
        }
        return result
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
