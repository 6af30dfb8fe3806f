import BoundedFiles
import Foundation
import MRTD
import MRTDCrypto

/// One `gbgbridge trust import`: files are read and verified as they are added; `commit` sorts
/// out duplicates and replacements against the store and writes what is new.
package struct TrustImport {
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    package struct Report {
        package var added: [(country: String, subject: String, file: String)] = []
        package var replaced: [(country: String, subject: String, old: String, new: String)] = []
        /// Each change with where it came from (a file or a URL): "added CSCA …", "replaced CRL …".
        package var changes: [(source: String, what: String)] = []
        package var alreadyPresent: [(subject: String, reason: String)] = []
        package var countriesAdded: [String] = []
        package var crlsAdded: [(issuer: String, file: String)] = []
        package var crlsReplaced: [(issuer: String, old: String, new: String)] = []
        package var refused: [(file: String, reason: String)] = []
        /// Certificates of an accepted master list refused one by one (a link whose issuer the
        /// list lacks, a signature that does not verify): reported, not a failed import.
        package var refusedFromLists: [(file: String, subject: String, reason: String)] = []
        /// The master lists accepted, with their signers.
        package var masterLists: [(file: String, signer: String)] = []
        /// Old files that still hold a replaced certificate next to others (not deleted).
        package var leftInPlace: [String] = []

        package var json: [String: Any] {
            [
                "added": added.map { ["country": $0.country, "subject": $0.subject, "file": $0.file] },
                "replaced": replaced.map { ["country": $0.country, "subject": $0.subject, "old": $0.old, "new": $0.new] },
                "alreadyPresent": alreadyPresent.map { ["subject": $0.subject, "reason": $0.reason] },
                "countriesAdded": countriesAdded,
                "crlsAdded": crlsAdded.map { ["issuer": $0.issuer, "file": $0.file] },
                "crlsReplaced": crlsReplaced.map { ["issuer": $0.issuer, "old": $0.old, "new": $0.new] },
                "refused": refused.map { ["file": $0.file, "reason": $0.reason] },
                "refusedFromLists": refusedFromLists.map { ["file": $0.file, "subject": $0.subject, "reason": $0.reason] },
                "masterLists": masterLists.map { ["file": $0.file, "signer": $0.signer] },
                "leftInPlace": leftInPlace,
            ]
        }

        package func text(dryRun: Bool) -> String {
            var lines: [String] = []
            let verb = dryRun ? "would add" : "added"
            lines.append("\(verb) \(added.count) CSCA certificate\(added.count == 1 ? "" : "s"), replaced \(replaced.count), "
                         + "\(alreadyPresent.count) already present; CRLs: \(crlsAdded.count) added, \(crlsReplaced.count) replaced; "
                         + "\(refused.count) refused" + (refusedFromLists.isEmpty ? "" : ", \(refusedFromLists.count) certificates of master lists refused"))
            if !countriesAdded.isEmpty { lines.append("countries added: \(countriesAdded.joined(separator: ", "))") }
            for list in masterLists { lines.append("master list \(list.file), signed by \(list.signer)") }
            if added.count <= 20 {
                for entry in added { lines.append("  + \(entry.country) \(entry.subject)  → \(entry.file)") }
            } else {
                let byCountry = Dictionary(grouping: added, by: \.country).sorted { $0.key < $1.key }
                lines.append("  + by country: " + byCountry.map { "\($0.key) \($0.value.count)" }.joined(separator: ", "))
            }
            for entry in replaced { lines.append("  ~ \(entry.country) \(entry.subject)  \(entry.old) → \(entry.new)") }
            for entry in crlsAdded { lines.append("  + CRL \(entry.issuer)  → \(entry.file)") }
            for entry in crlsReplaced { lines.append("  ~ CRL \(entry.issuer)  \(entry.old) → \(entry.new)") }
            for entry in refused { lines.append("  ! refused \(entry.file): \(entry.reason)") }
            for entry in refusedFromLists { lines.append("  - not taken from \(entry.file): \(entry.subject): \(entry.reason)") }
            for file in leftInPlace { lines.append("  note: \(file) holds a replaced certificate among others and was left in place") }
            return lines.joined(separator: "\n")
        }
    }

    private struct Stored {
        package let certificate: Certificate
        package let path: String
        /// How many certificates the file holds (only a file of one is removed on replacement).
        package let certificatesInFile: Int
    }

    package let storePath: String
    /// SHA-256 fingerprints (upper-case hex) of CSCAs the operator names as trusted
    /// (`--list-anchor-sha256`): a master list's certificate with one of them may vouch for the list.
    package var listAnchors: Set<String> = []
    private var stored: [Stored] = []
    private var storedCRLs: [(crl: RevocationList, path: String, single: Bool)] = []
    private var incoming: [(certificate: Certificate, source: String, fromList: Bool)] = []
    private var incomingCRLs: [(crl: RevocationList, source: String)] = []
    private var refused: [(file: String, reason: String)] = []
    private var refusedFromLists: [(file: String, subject: String, reason: String)] = []

    package init(store: String) throws(Problem) {
        storePath = store
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: store, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw Problem(description: "\(store) is not a directory") }
            try load(directory: URL(fileURLWithPath: store))
        }
    }

    private mutating func load(directory: URL) throws(Problem) {
        let entries: [String]
        do {
            entries = try BoundedFile.list(directory.path, what: "trust store")
        } catch {
            throw Problem(description: error.description)
        }
        for entry in entries where !entry.hasPrefix(".") {
            let url = directory.appendingPathComponent(entry)
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                try load(directory: url)
                continue
            }
            var one = TrustStore()
            guard (try? one.add(path: url)) != nil else { continue }  // not trust material: left alone
            for certificate in one.certificates {
                stored.append(Stored(certificate: certificate, path: url.path, certificatesInFile: one.certificates.count))
            }
            for crl in one.revocationLists { storedCRLs.append((crl, url.path, one.revocationLists.count == 1 && one.certificates.isEmpty)) }
        }
    }

    /// CSCAs trusted outside this store (the host's other trust paths, `trust refresh`'s view of
    /// them): they vouch for master-list signers, links and CRLs as the store's own do, and are
    /// never written into it.
    package var trustedElsewhere: [Certificate] = []
    private var anchors: [Certificate] { trustedElsewhere + stored.map(\.certificate) + incoming.map(\.certificate) }
    /// CSCAs trusted before any master list of this import is read: the store's, those trusted
    /// elsewhere, and those this import took from certificate files (not from lists).
    private var trustedBeforeLists: [Certificate] {
        trustedElsewhere + stored.map(\.certificate) + incoming.filter { !$0.fromList }.map(\.certificate)
    }
    /// The certificates the store holds (for `trust refresh`'s distribution points).
    package var storedCertificates: [Certificate] { stored.map(\.certificate) + incoming.map(\.certificate) }
    /// The `--list-anchor-sha256` fingerprints some list's certificate matched.
    package private(set) var usedListAnchors: Set<String> = []

    /// Reads and verifies one file; what fails is recorded as refused.
    package mutating func add(file: String) {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(file, ceiling: BoundedFile.Ceiling.trustFile, what: "trust file (certificate, master list or CRL)")
        } catch {
            refused.append((file, error.description))
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
            refused.append((file, error.reason))
            return
        }
        let found = parsed.certificates
        for certificate in found {
            if let problem = MasterList.problem(with: certificate, trusting: anchors + found) {
                refused.append((file, "\(certificate.subject): \(problem)"))
            } else {
                incoming.append((certificate, file, false))
            }
        }
        for crl in parsed.revocationLists { incomingCRLs.append((crl, file)) }
    }

    /// A master list vouches for its certificates only as far as a CSCA trusted before it was read
    /// vouches for its signer: one in the store, one this import took from a certificate file, or
    /// one of the list's own certificates the operator named by fingerprint (the one its country
    /// publishes). A certificate inside the list never vouches for the list by itself. Then each
    /// certificate is judged on its own and refused, with its reason, when it is not a sound CSCA.
    private mutating func addMasterList(_ bytes: [UInt8], file: String) {
        let list: MasterList
        do {
            list = try MasterList(bytes: bytes)
        } catch {
            refused.append((file, error.reason))
            return
        }
        let named = list.certificates.filter {
            listAnchors.contains($0.sha256Fingerprint) && $0.isSelfIssued && MasterList.problem(with: $0, trusting: []) == nil
        }
        usedListAnchors.formUnion(named.map(\.sha256Fingerprint))
        let trusted = trustedBeforeLists + named
        guard list.signerIsIssued(byOneOf: trusted) else {
            let claimed = list.claimedSignerIssuers
            let which = claimed.isEmpty
                ? "the list holds no CSCA named \(list.signer.issuer)"
                : "the list says it was issued by " + claimed.map { "\($0.subject) (SHA-256 \($0.sha256Fingerprint))" }.joined(separator: " or ")
            refused.append((file, "its signer (\(list.signer.subject)) is not issued by a CSCA trusted before the list was read, and a "
                            + "certificate inside the list never vouches for the list; \(which). Compare that fingerprint with the one "
                            + "its country publishes, then import again with --list-anchor-sha256 FINGERPRINT, or import that CSCA first"))
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

    /// The signers of the lists imported (for the report).
    package private(set) var masterListSigners: [(file: String, subject: String)] = []

    /// Works out what changes and (unless `dryRun`) writes it. `now`: what "in the future" is measured from.
    package func commit(dryRun: Bool, now: Double = Date().timeIntervalSince1970) throws(Problem) -> Report {
        var report = Report()
        report.refused = refused
        report.refusedFromLists = refusedFromLists
        report.masterLists = masterListSigners.map { ($0.file, $0.subject) }
        let knownCountries = Set(stored.compactMap { $0.certificate.country?.uppercased() })
        var storedByDigest = Set(stored.map { DigestAlgorithm.sha256.hash($0.certificate.derBytes) })
        var writes: [(name: String, bytes: [UInt8])] = []
        var removals: [String] = []
        for (certificate, source, _) in incoming {
            let der = certificate.derBytes
            let digest = DigestAlgorithm.sha256.hash(der)
            guard storedByDigest.insert(digest).inserted else {
                report.alreadyPresent.append((certificate.subject, "identical certificate"))
                continue
            }
            let country = (certificate.country ?? "XX").uppercased()
            let name = "\(Self.safe(country))-\(Self.hex(digest.prefix(8))).pem"
            let same = stored.first { $0.certificate.subject == certificate.subject
                && $0.certificate.subjectKeyIdentifier != nil && $0.certificate.subjectKeyIdentifier == certificate.subjectKeyIdentifier }
            if let same {
                guard (certificate.notAfter ?? 0) > (same.certificate.notAfter ?? 0) else {
                    report.alreadyPresent.append((certificate.subject, "the store holds the same key with an expiry as late (\(same.path))"))
                    continue
                }
                report.replaced.append((country, certificate.subject, same.path, name))
                report.changes.append((source, "replaced \(country) CSCA \(certificate.subject)"))
                if same.certificatesInFile == 1 { removals.append(same.path) } else { report.leftInPlace.append(same.path) }
            } else {
                report.added.append((country, certificate.subject, name))
                report.changes.append((source, "added \(country) CSCA \(certificate.subject)"))
                if !knownCountries.contains(country), !report.countriesAdded.contains(country) { report.countriesAdded.append(country) }
            }
            writes.append((name, Self.pem(der)))
        }
        let issuers = anchors
        for (crl, source) in incomingCRLs {
            guard issuers.contains(where: { crl.isIssued(by: $0) }) else {
                report.refused.append((source, "CRL of \(crl.issuer): not signed by a CSCA in the store or this import"))
                continue
            }
            // Issued in the future (beyond a few minutes of clock skew): a CRL a signer made to
            // outlast the ones that will follow it, or a clock gone wrong; neither is taken.
            if let issued = crl.thisUpdate, issued > now + 300 {
                report.refused.append((source, "CRL of \(crl.issuer): its thisUpdate (\(DoctorChecks.iso8601(issued))) is in the future"))
                continue
            }
            let der = crl.derBytes
            let digest = DigestAlgorithm.sha256.hash(der)
            let country = crl.issuer.split(separator: ",").first { $0.hasPrefix("C=") }.map { String($0.dropFirst(2)) } ?? "XX"
            let name = "crl-\(Self.safe(country))-\(Self.hex(digest.prefix(8))).crl"
            if let same = storedCRLs.first(where: { $0.crl.issuer == crl.issuer }) {
                guard DigestAlgorithm.sha256.hash(same.crl.derBytes) != digest else {
                    report.alreadyPresent.append(("CRL \(crl.issuer)", "identical CRL"))
                    continue
                }
                guard (crl.thisUpdate ?? 0) > (same.crl.thisUpdate ?? 0) else {
                    // An older CRL than the one held is refused (a replay would un-revoke).
                    if (crl.thisUpdate ?? 0) < (same.crl.thisUpdate ?? 0) {
                        report.refused.append((source, "CRL of \(crl.issuer): older than the one the store holds (\(same.path))"))
                    } else {
                        report.alreadyPresent.append(("CRL \(crl.issuer)", "the store holds one as recent (\(same.path))"))
                    }
                    continue
                }
                report.crlsReplaced.append((crl.issuer, same.path, name))
                report.changes.append((source, "replaced the CRL of \(crl.issuer)"))
                if same.single { removals.append(same.path) } else { report.leftInPlace.append(same.path) }
            } else {
                report.crlsAdded.append((crl.issuer, name))
                report.changes.append((source, "added the CRL of \(crl.issuer)"))
            }
            writes.append((name, der))
        }
        guard !dryRun, !writes.isEmpty else { return report }
        do {
            try BoundedFile.makeDirectory(storePath, mode: 0o755, what: "trust store")
        } catch {
            throw Problem(description: error.description)
        }
        for (name, bytes) in writes {
            do {
                try PrivateFile.write(bytes, to: URL(fileURLWithPath: storePath).appendingPathComponent(name).path, mode: 0o644)
            } catch {
                throw Problem(description: error.description)
            }
        }
        for path in removals { try? FileManager.default.removeItem(atPath: path) }
        return report
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
