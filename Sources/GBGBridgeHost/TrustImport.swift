import BoundedFiles
import Foundation
import MRTD
import MRTDCrypto

/// One `gbgbridge trust import` (and the verification half of `trust refresh`): files are read
/// and verified as they are added; `commit` sorts out duplicates and replacements against the
/// store and writes what is new (TrustImport+Commit.swift).
///
/// The rules (issue 49), for every source alike:
/// - A CSCA is trusted only through something already trusted: a self-signed certificate only
///   when its SHA-256 is an anchor named for its source (`--list-anchor-sha256`/`--anchor-sha256`,
///   a refresh source's `anchor-sha256`) or its key is already trusted; a link certificate only
///   when a CSCA already trusted signed it; a list's certificates only when the list is accepted.
///   Anything else is refused as `unanchored-csca`: a self-signature proves nothing.
/// - Identity is the key: a CSCA is the same CSCA only when its public key is the same (the
///   SubjectPublicKeyInfo's SHA-256); a certificate with another key never replaces or removes one.
/// - A CRL belongs to the key that signed it (and that its authorityKeyIdentifier names), never to
///   an issuer name: countries keep one name across key rollovers.
package struct TrustImport {
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    /// Why a file or a certificate was refused, as a stable code (the refresh's `reason`).
    package enum RefusalCode: String, Sendable {
        /// A self-signed CSCA that no anchor names and no trusted key vouches for.
        case unanchoredCSCA = "unanchored-csca"
        /// Anything else that does not verify (a signature, a CRL's signer or age, a list's signer).
        case verification
        /// Not trust material, or unreadable.
        case unreadable
    }

    struct Stored {
        let certificate: Certificate
        let path: String
        /// How many certificates the file holds (only a file of one is removed on replacement).
        let certificatesInFile: Int
    }

    package let storePath: String
    /// SHA-256 fingerprints (upper-case hex) of CSCAs the operator names as trusted for what is
    /// added next (`--list-anchor-sha256`, a source's `anchor-sha256`): a self-signed CSCA with one
    /// of them is taken, and a master list whose signer it issued is accepted.
    package var listAnchors: Set<String> = []
    var stored: [Stored] = []
    var storedCRLs: [(crl: RevocationList, path: String, single: Bool)] = []
    var incoming: [(certificate: Certificate, source: String, fromList: Bool)] = []
    var incomingCRLs: [(crl: RevocationList, source: String)] = []
    var refused: [(file: String, reason: String, code: RefusalCode)] = []
    var refusedFromLists: [(file: String, subject: String, reason: String)] = []

    /// Opens the store (a directory that may not exist yet). Nothing in it may be a symbolic link
    /// (issue 49): a store a program writes to and deletes from is opened without following any.
    package init(store: String) throws(Problem) {
        storePath = store
        var info = stat()
        guard lstat(store, &info) == 0 else {
            guard errno == ENOENT else { throw Problem(description: "\(store): cannot be opened (\(String(cString: strerror(errno))))") }
            return
        }
        if info.st_mode & S_IFMT == S_IFLNK {
            throw Problem(description: "\(store) is a symbolic link: refused (the trust store is opened without following links; name the directory it points to)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw Problem(description: "\(store) is not a directory") }
        try load()
    }

    private mutating func load() throws(Problem) {
        let snapshot: DirectorySnapshot
        do {
            snapshot = try DirectorySnapshot.read(storePath, what: "trust store", fileCeiling: BoundedFile.Ceiling.trustFile,
                                                  totalCeiling: TrustStore.directoryCeiling, symlinks: .refuse)
        } catch {
            throw Problem(description: error.description)
        }
        let issuers = storePath + "/" + TrustStore.mdocIssuerDirectory + "/"
        for entry in snapshot.entries where !entry.path.hasPrefix(issuers) {
            var one = TrustStore()
            guard (try? one.add(bytes: entry.bytes, name: entry.path)) != nil else { continue }  // not trust material: left alone
            for certificate in one.certificates {
                stored.append(Stored(certificate: certificate, path: entry.path, certificatesInFile: one.certificates.count))
            }
            for crl in one.revocationLists { storedCRLs.append((crl, entry.path, one.revocationLists.count == 1 && one.certificates.isEmpty)) }
        }
    }

    /// CSCAs trusted outside this store (the host's other trust paths, `trust refresh`'s view of
    /// them): they vouch for master-list signers, links and CRLs as the store's own do, and are
    /// never written into it.
    package var trustedElsewhere: [Certificate] = []
    /// Every CSCA trusted at this point: elsewhere, in the store, and taken by this import.
    var anchors: [Certificate] { trustedElsewhere + stored.map(\.certificate) + incoming.map(\.certificate) }
    /// The certificates the store holds (for `trust refresh`'s distribution points).
    package var storedCertificates: [Certificate] { stored.map(\.certificate) + incoming.map(\.certificate) }
    /// The anchor fingerprints some certificate matched.
    package private(set) var usedListAnchors: Set<String> = []
    /// The signers of the lists imported (for the report).
    package private(set) var masterListSigners: [(file: String, subject: String)] = []

    /// Reads and verifies one file; what fails is recorded as refused.
    package mutating func add(file: String) {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(file, ceiling: BoundedFile.Ceiling.trustFile, what: "trust file (certificate, master list or CRL)")
        } catch {
            refused.append((file, error.description, .unreadable))
            return
        }
        add(bytes: bytes, source: file)
    }

    /// Verifies trust material that came from `source` (a file, or a URL `trust refresh`
    /// fetched), exactly as a file is: what fails is recorded as refused under that name.
    package mutating func add(bytes: [UInt8], source file: String) {
        if TrustStore.isMasterList(bytes) {
            addMasterList(bytes, file: file)
            return
        }
        var parsed = TrustStore()
        do {
            try parsed.add(bytes: bytes, name: file)
        } catch {
            refused.append((file, error.reason, .unreadable))
            return
        }
        for certificate in parsed.certificates {
            if let (reason, code) = refusal(of: certificate) {
                refused.append((file, "\(certificate.subject): \(reason)", code))
            } else {
                noteAnchorUse([certificate])
                incoming.append((certificate, file, false))
            }
        }
        for crl in parsed.revocationLists { incomingCRLs.append((crl, file)) }
    }

    /// Why a certificate from a certificate file (not a list) is not taken, or nil.
    func refusal(of certificate: Certificate) -> (String, RefusalCode)? {
        guard certificate.signsCertificates else {
            return ("neither a CA nor allowed to sign certificates (key usage): a document signer? Only CSCA and link certificates belong in the trust store",
                    .verification)
        }
        if let refusal = certificate.publicKeySizeRefusal { return ("its key is refused (\(refusal))", .verification) }
        let trusted = anchors
        // Signed by a key already trusted: a link certificate, or a CSCA renewed on the same key.
        if trusted.contains(where: { $0 !== certificate && certificate.isIssued(byNameOf: $0) && certificate.isSignatureValid(issuer: $0) }) {
            return nil
        }
        guard certificate.isSelfSigned else {
            return certificate.isSelfIssued
                ? ("its signature verifies neither with its own key nor with a trusted CSCA of its name", .verification)
                : ("not self-signed, and not issued by a trusted CSCA (a link certificate needs its issuer in the store)", .verification)
        }
        let fingerprint = certificate.sha256Fingerprint
        if listAnchors.contains(fingerprint) { return nil }
        return ("unanchored-csca: a self-signed CSCA proves nothing by its own signature; it is taken only when its SHA-256 is named as an anchor. "
                + "Compare \(fingerprint) with the fingerprint its country publishes, then import again with --anchor-sha256 \(fingerprint) "
                + "(a refresh source: anchor-sha256), or take it from a master list you trust", .unanchoredCSCA)
    }

    /// Marks the anchors `certificate` used (for the note on anchors that matched nothing).
    mutating func noteAnchorUse(_ certificates: [Certificate]) {
        usedListAnchors.formUnion(certificates.map(\.sha256Fingerprint).filter { listAnchors.contains($0) })
    }

    /// A master list vouches for its certificates only as far as a CSCA trusted before it was read
    /// vouches for its signer: one in the store or elsewhere, one this import took, or one of the
    /// list's own certificates the operator named by fingerprint (the one its country publishes).
    /// A certificate inside the list never vouches for the list by itself. Then each certificate is
    /// judged on its own and refused, with its reason, when it is not a sound CSCA.
    private mutating func addMasterList(_ bytes: [UInt8], file: String) {
        let list: MasterList
        do {
            list = try MasterList(bytes: bytes)
        } catch {
            refused.append((file, error.reason, .verification))
            return
        }
        let named = list.certificates.filter {
            listAnchors.contains($0.sha256Fingerprint) && $0.isSelfIssued && MasterList.problem(with: $0, trusting: []) == nil
        }
        usedListAnchors.formUnion(named.map(\.sha256Fingerprint))
        let trusted = anchors + named
        guard list.signerIsIssued(byOneOf: trusted) else {
            let claimed = list.claimedSignerIssuers
            let which = claimed.isEmpty
                ? "the list holds no CSCA named \(list.signer.issuer)"
                : "the list says it was issued by " + claimed.map { "\($0.subject) (SHA-256 \($0.sha256Fingerprint))" }.joined(separator: " or ")
            refused.append((file, "its signer (\(list.signer.subject)) is not issued by a CSCA trusted before the list was read, and a "
                            + "certificate inside the list never vouches for the list; \(which). Compare that fingerprint with the one "
                            + "its country publishes, then import again with --list-anchor-sha256 FINGERPRINT, or import that CSCA first", .verification))
            return
        }
        // Link certificates may come from the trusted CSCAs or from sound CSCAs of the same list.
        let sound = list.certificates.filter { $0.isSelfIssued && MasterList.problem(with: $0, trusting: []) == nil }
        for certificate in list.certificates {
            if let problem = MasterList.problem(with: certificate, trusting: trusted + sound) {
                refusedFromLists.append((file, certificate.subject, problem))
            } else {
                incoming.append((certificate, file, true))
            }
        }
        masterListSigners.append((file, list.signer.subject))
    }

    package static func pem(_ der: [UInt8]) -> [UInt8] {
        let base64 = Data(der).base64EncodedString()
        var lines = ["-----BEGIN CERTIFICATE-----"]
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[index..<end]))
            index = end
        }
        lines.append("-----END CERTIFICATE-----")
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    package static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// A country code as a file-name part: letters and digits only.
    package static func safe(_ country: String) -> String {
        let kept = country.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
        return kept.isEmpty ? "XX" : String(String.UnicodeScalarView(kept.prefix(3))).uppercased()
    }
}
