import BoundedFiles
import Foundation
import MRTD
import MRTDCrypto

extension TrustImport {
    package struct Report {
        package var added: [(country: String, subject: String, file: String)] = []
        package var replaced: [(country: String, subject: String, old: String, new: String)] = []
        /// Each change with where it came from (a file or a URL): "added CSCA …", "replaced CRL …".
        package var changes: [(source: String, what: String)] = []
        package var alreadyPresent: [(subject: String, reason: String)] = []
        package var countriesAdded: [String] = []
        package var crlsAdded: [(issuer: String, file: String)] = []
        package var crlsReplaced: [(issuer: String, old: String, new: String)] = []
        package var refused: [(file: String, reason: String, code: RefusalCode)] = []
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
                "refused": refused.map { ["file": $0.file, "reason": $0.reason, "code": $0.code.rawValue] },
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
        // Identity is the key (issue 49): the certificates of one key, stored or coming, and of
        // those the ones no other of the same key covers (a validity from no later and to no
        // earlier): a renewal that covers an old one replaces it; one that does not is kept beside
        // it (documents signed under the old one's validity still chain); another key never
        // replaces or removes anything.
        struct Candidate {
            let certificate: Certificate
            let stored: Stored?
            let source: String?
            let digest: [UInt8]
        }
        var byKey: [String: [Candidate]] = [:]
        var keyOrder: [String] = []
        func note(_ candidate: Candidate) {
            let key = candidate.certificate.keyIdentity
            if byKey[key] == nil { keyOrder.append(key) }
            byKey[key, default: []].append(candidate)
        }
        for entry in stored { note(Candidate(certificate: entry.certificate, stored: entry, source: nil, digest: DigestAlgorithm.sha256.hash(entry.certificate.derBytes))) }
        for (certificate, source, _) in incoming {
            let digest = DigestAlgorithm.sha256.hash(certificate.derBytes)
            guard storedByDigest.insert(digest).inserted else {
                report.alreadyPresent.append((certificate.subject, "identical certificate"))
                continue
            }
            note(Candidate(certificate: certificate, stored: nil, source: source, digest: digest))
        }
        func covers(_ a: Candidate, _ b: Candidate) -> Bool {
            let (aFrom, aTo) = (a.certificate.notBefore ?? .infinity, a.certificate.notAfter ?? -.infinity)
            let (bFrom, bTo) = (b.certificate.notBefore ?? -.infinity, b.certificate.notAfter ?? .infinity)
            guard aFrom <= bFrom, aTo >= bTo else { return false }
            // Two of the very same validity: the one kept is the stored one, else the smaller hash.
            if aFrom == bFrom, aTo == bTo {
                if (a.stored != nil) != (b.stored != nil) { return a.stored != nil }
                return a.digest.lexicographicallyPrecedes(b.digest)
            }
            return true
        }
        for key in keyOrder {
            let group = byKey[key] ?? []
            let kept = group.filter { candidate in !group.contains { other in other.digest != candidate.digest && covers(other, candidate) } }
            let keptIncoming = kept.filter { $0.stored == nil }
            for candidate in group where candidate.stored == nil && !keptIncoming.contains(where: { $0.digest == candidate.digest }) {
                report.alreadyPresent.append((candidate.certificate.subject, "a certificate of the same key with a validity as long is held or taken"))
            }
            let storedGone = group.filter { candidate in candidate.stored != nil && !kept.contains { $0.digest == candidate.digest } }
            let hadKey = group.contains { $0.stored != nil }
            for candidate in keptIncoming {
                let certificate = candidate.certificate
                let country = (certificate.country ?? "XX").uppercased()
                let name = "\(Self.safe(country))-\(Self.hex(candidate.digest.prefix(8))).pem"
                let source = candidate.source ?? ""
                if let gone = storedGone.first(where: { covers(candidate, $0) }), let path = gone.stored?.path {
                    report.replaced.append((country, certificate.subject, path, name))
                    report.changes.append((source, "replaced \(country) CSCA \(certificate.subject) (the same key, a longer validity)"))
                } else if hadKey {
                    report.added.append((country, certificate.subject, name))
                    report.changes.append((source, "added \(country) CSCA \(certificate.subject) (a key the store holds, another validity)"))
                } else {
                    report.added.append((country, certificate.subject, name))
                    report.changes.append((source, "added \(country) CSCA \(certificate.subject)"))
                    if !knownCountries.contains(country), !report.countriesAdded.contains(country) { report.countriesAdded.append(country) }
                }
                writes.append((name, Self.pem(certificate.derBytes)))
            }
            for gone in storedGone {
                guard let entry = gone.stored else { continue }
                if entry.certificatesInFile == 1 { removals.append(entry.path) } else { report.leftInPlace.append(entry.path) }
            }
        }
        commitCRLs(into: &report, writes: &writes, removals: &removals, now: now)
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
        // Only regular files inside the store are ever removed (never through a link).
        for path in Set(removals) {
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, path.hasPrefix(storePath + "/") else { continue }
            unlink(path)
        }
        return report
    }

    /// CRLs: each belongs to the CSCA key that signed it (and that its authorityKeyIdentifier
    /// names); one per key, the newest, never one replacing another key's.
    private func commitCRLs(into report: inout Report, writes: inout [(name: String, bytes: [UInt8])], removals: inout [String], now: Double) {
        let issuers = anchors
        var heldByKey: [String: (thisUpdate: Double, digest: [UInt8], path: String?, single: Bool)] = [:]
        var known = Set(storedCRLs.map { DigestAlgorithm.sha256.hash($0.crl.derBytes) })
        for entry in storedCRLs {
            guard let signer = entry.crl.signingKey(among: issuers) else { continue }
            let key = signer.keyIdentity
            let thisUpdate = entry.crl.thisUpdate ?? 0
            if let held = heldByKey[key], held.thisUpdate >= thisUpdate { continue }
            heldByKey[key] = (thisUpdate, DigestAlgorithm.sha256.hash(entry.crl.derBytes), entry.path, entry.single)
        }
        // The newest first, so that an older CRL of one key in the same import meets the newer one.
        let sorted = incomingCRLs.sorted { ($0.crl.thisUpdate ?? 0) > ($1.crl.thisUpdate ?? 0) }
        for (crl, source) in sorted {
            guard let signer = crl.signingKey(among: issuers) else {
                let named = issuers.contains { crl.isIssued(by: $0) }
                report.refused.append((source, named
                    ? "CRL of \(crl.issuer): its authorityKeyIdentifier names another key than the CSCA whose signature it carries"
                    : "CRL of \(crl.issuer): not signed by a CSCA in the store or this import", .verification))
                continue
            }
            // Issued in the future (beyond a few minutes of clock skew): a CRL a signer made to
            // outlast the ones that will follow it, or a clock gone wrong; neither is taken.
            if let issued = crl.thisUpdate, issued > now + 300 {
                report.refused.append((source, "CRL of \(crl.issuer): its thisUpdate (\(DoctorChecks.iso8601(issued))) is in the future", .verification))
                continue
            }
            let der = crl.derBytes
            let digest = DigestAlgorithm.sha256.hash(der)
            let country = crl.issuer.split(separator: ",").first { $0.hasPrefix("C=") }.map { String($0.dropFirst(2)) } ?? "XX"
            let name = "crl-\(Self.safe(country))-\(Self.hex(digest.prefix(8))).crl"
            let key = signer.keyIdentity
            let keyNote = "key \(key.prefix(16))…"
            guard known.insert(digest).inserted else {
                report.alreadyPresent.append(("CRL \(crl.issuer) (\(keyNote))", "identical CRL"))
                continue
            }
            if let held = heldByKey[key] {
                let thisUpdate = crl.thisUpdate ?? 0
                guard thisUpdate > held.thisUpdate else {
                    // An older CRL than the one held is refused (a replay would un-revoke).
                    if thisUpdate < held.thisUpdate {
                        let than = held.path.map { "the one the store holds (\($0))" } ?? "another CRL of the same key fetched or given with it"
                        report.refused.append((source, "CRL of \(crl.issuer) (\(keyNote)): older than \(than)", .verification))
                    } else {
                        report.alreadyPresent.append(("CRL \(crl.issuer) (\(keyNote))", "the store holds one as recent"))
                    }
                    continue
                }
                if let path = held.path {
                    report.crlsReplaced.append((crl.issuer, path, name))
                    if held.single { removals.append(path) } else { report.leftInPlace.append(path) }
                } else {
                    report.crlsAdded.append((crl.issuer, name))
                }
                report.changes.append((source, "replaced the CRL of \(crl.issuer) (\(keyNote))"))
            } else {
                report.crlsAdded.append((crl.issuer, name))
                report.changes.append((source, "added the CRL of \(crl.issuer) (\(keyNote))"))
            }
            heldByKey[key] = (crl.thisUpdate ?? 0, digest, nil, true)
            writes.append((name, der))
        }
    }
}
