import Foundation
import MRTD
import MRTDCrypto

/// One `gbgbridge trust import`: files are read and verified as they are added; `commit` sorts
/// out duplicates and replacements against the store and writes what is new.
struct TrustImport {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    struct Report {
        var added: [(country: String, subject: String, file: String)] = []
        var replaced: [(country: String, subject: String, old: String, new: String)] = []
        var alreadyPresent: [(subject: String, reason: String)] = []
        var countriesAdded: [String] = []
        var crlsAdded: [(issuer: String, file: String)] = []
        var crlsReplaced: [(issuer: String, old: String, new: String)] = []
        var refused: [(file: String, reason: String)] = []
        /// Old files that still hold a replaced certificate next to others (not deleted).
        var leftInPlace: [String] = []

        var json: [String: Any] {
            [
                "added": added.map { ["country": $0.country, "subject": $0.subject, "file": $0.file] },
                "replaced": replaced.map { ["country": $0.country, "subject": $0.subject, "old": $0.old, "new": $0.new] },
                "alreadyPresent": alreadyPresent.map { ["subject": $0.subject, "reason": $0.reason] },
                "countriesAdded": countriesAdded,
                "crlsAdded": crlsAdded.map { ["issuer": $0.issuer, "file": $0.file] },
                "crlsReplaced": crlsReplaced.map { ["issuer": $0.issuer, "old": $0.old, "new": $0.new] },
                "refused": refused.map { ["file": $0.file, "reason": $0.reason] },
                "leftInPlace": leftInPlace,
            ]
        }

        func text(dryRun: Bool) -> String {
            var lines: [String] = []
            let verb = dryRun ? "would add" : "added"
            lines.append("\(verb) \(added.count) CSCA certificate\(added.count == 1 ? "" : "s"), replaced \(replaced.count), "
                         + "\(alreadyPresent.count) already present; CRLs: \(crlsAdded.count) added, \(crlsReplaced.count) replaced; "
                         + "\(refused.count) refused")
            if !countriesAdded.isEmpty { lines.append("countries added: \(countriesAdded.joined(separator: ", "))") }
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
            for file in leftInPlace { lines.append("  note: \(file) holds a replaced certificate among others and was left in place") }
            return lines.joined(separator: "\n")
        }
    }

    private struct Stored {
        let certificate: Certificate
        let path: String
        /// How many certificates the file holds (only a file of one is removed on replacement).
        let certificatesInFile: Int
    }

    let storePath: String
    private var stored: [Stored] = []
    private var storedCRLs: [(crl: RevocationList, path: String, single: Bool)] = []
    private var incoming: [(certificate: Certificate, source: String)] = []
    private var incomingCRLs: [(crl: RevocationList, source: String)] = []
    private var refused: [(file: String, reason: String)] = []

    init(store: String) throws(Problem) {
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
            entries = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        } catch {
            throw Problem(description: "cannot list \(directory.path): \(error.localizedDescription)")
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

    private var anchors: [Certificate] { stored.map(\.certificate) + incoming.map(\.certificate) }

    /// Reads and verifies one file; what fails is recorded as refused.
    mutating func add(file: String) {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            refused.append((file, "cannot read it: \(error.localizedDescription)"))
            return
        }
        // The store's and this import's certificates first, so a master list may be signed by one of them.
        var parsed = TrustStore()
        for anchor in anchors { parsed.add(anchor) }
        let before = parsed.certificates.count
        do {
            try parsed.add(bytes: bytes, name: file)
        } catch {
            refused.append((file, error.reason))
            return
        }
        let fromMasterList = !parsed.masterListSigners.isEmpty
        let found = Array(parsed.certificates.dropFirst(before))
        for certificate in found {
            if fromMasterList || isAcceptable(certificate, among: found) {
                incoming.append((certificate, file))
            } else {
                let why = certificate.isCertificateAuthority
                    ? "not self-signed with a valid signature, nor issued by a CSCA in the store or this import"
                    : "not a CA certificate (a document signer?): only CSCA and link certificates belong in the trust store"
                refused.append((file, "\(certificate.subject): \(why)"))
            }
        }
        for crl in parsed.revocationLists { incomingCRLs.append((crl, file)) }
    }

    /// A CSCA (self-signed, signature valid) or a link certificate (issued by a known CSCA).
    private func isAcceptable(_ certificate: Certificate, among batch: [Certificate]) -> Bool {
        guard certificate.isCertificateAuthority else { return false }
        if certificate.isSelfIssued { return certificate.isSignatureValid(issuer: certificate) }
        return (anchors + batch).contains { $0 !== certificate && certificate.isIssued(byNameOf: $0) && certificate.isSignatureValid(issuer: $0) }
    }

    /// Works out what changes and (unless `dryRun`) writes it.
    func commit(dryRun: Bool) throws(Problem) -> Report {
        var report = Report()
        report.refused = refused
        let knownCountries = Set(stored.compactMap { $0.certificate.country?.uppercased() })
        var storedByDigest = Set(stored.map { DigestAlgorithm.sha256.hash($0.certificate.derBytes) })
        var writes: [(name: String, bytes: [UInt8])] = []
        var removals: [String] = []
        for (certificate, _) in incoming {
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
                if same.certificatesInFile == 1 { removals.append(same.path) } else { report.leftInPlace.append(same.path) }
            } else {
                report.added.append((country, certificate.subject, name))
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
                    report.alreadyPresent.append(("CRL \(crl.issuer)", "the store holds one as recent (\(same.path))"))
                    continue
                }
                report.crlsReplaced.append((crl.issuer, same.path, name))
                if same.single { removals.append(same.path) } else { report.leftInPlace.append(same.path) }
            } else {
                report.crlsAdded.append((crl.issuer, name))
            }
            writes.append((name, der))
        }
        guard !dryRun, !writes.isEmpty else { return report }
        do {
            try FileManager.default.createDirectory(atPath: storePath, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            throw Problem(description: "cannot create \(storePath): \(error.localizedDescription)")
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

    static func pem(_ der: [UInt8]) -> [UInt8] {
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

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// A country code as a file-name part: letters and digits only.
    static func safe(_ country: String) -> String {
        let kept = country.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
        return kept.isEmpty ? "XX" : String(String.UnicodeScalarView(kept.prefix(3))).uppercased()
    }
}
