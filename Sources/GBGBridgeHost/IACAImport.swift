import BoundedFiles
import Foundation
import MRTD
import MRTDCrypto
import Mdoc

/// `gbgbridge trust import --iaca` (and `trust refresh`'s `vical` sources): IACA certificates —
/// the roots of ISO 18013-5 mdoc issuers — into the store's iaca/ directory, apart from its CSCAs.
/// The rules are the CSCAs': a self-signed IACA is taken only when its SHA-256 is an anchor given
/// for it, or when a VICAL an anchor vouches for lists it; a certificate whose key the store
/// already holds is a renewal. A self-signature proves nothing (`unanchored-iaca`).
package struct IACAImport {
    package struct Entry: Sendable {
        package let subject: String
        package let file: String
        package let source: String
    }

    package struct Report: Sendable {
        package var added: [Entry] = []
        package var present: [Entry] = []
        package var refused: [(file: String, reason: String, code: String)] = []
        package var lists: [(file: String, provider: String, certificates: Int)] = []

        package var json: [String: JSONish] {
            [
                "added": .list(added.map { .map(["subject": .text($0.subject), "file": .text($0.file), "source": .text($0.source)]) }),
                "present": .list(present.map { .map(["subject": .text($0.subject), "file": .text($0.file)]) }),
                "refused": .list(refused.map { .map(["file": .text($0.file), "reason": .text($0.reason), "code": .text($0.code)]) }),
                "vicals": .list(lists.map { .map(["file": .text($0.file), "provider": .text($0.provider), "certificates": .number($0.certificates)]) }),
            ]
        }

        package func text(dryRun: Bool) -> String {
            var lines: [String] = []
            for list in lists { lines.append("VICAL \(list.file): \(list.provider), \(list.certificates) IACA certificates") }
            for entry in added { lines.append("\(dryRun ? "would add" : "added") IACA \(entry.subject) (\(entry.file))") }
            for entry in present { lines.append("already present: IACA \(entry.subject)") }
            for refusal in refused { lines.append("refused \(refusal.file): \(refusal.reason) [\(refusal.code)]") }
            if lines.isEmpty { lines.append("nothing to import") }
            return lines.joined(separator: "\n")
        }
    }

    /// JSON without Foundation types, for the report.
    package indirect enum JSONish: Encodable {
        case text(String), number(Int), list([JSONish]), map([String: JSONish])
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let value): try container.encode(value)
            case .number(let value): try container.encode(value)
            case .list(let value): try container.encode(value)
            case .map(let value): try container.encode(value)
            }
        }
    }

    package let storePath: String
    package var anchors: Set<String> = []
    var stored: [(certificate: Certificate, path: String)] = []
    var incoming: [(certificate: Certificate, source: String)] = []
    package private(set) var report = Report()

    package var directory: String { storePath + "/" + TrustStore.mdocIssuerDirectory }

    package init(store: String) throws(TrustImport.Problem) {
        storePath = store
        guard BoundedFile.kind(directory) == .directory else { return }
        let snapshot: DirectorySnapshot
        do {
            snapshot = try DirectorySnapshot.read(directory, what: "IACA directory", fileCeiling: 1 << 20, totalCeiling: 64 << 20, symlinks: .refuse)
        } catch {
            throw TrustImport.Problem(description: error.description)
        }
        for entry in snapshot.entries {
            for certificate in (try? Certificate.all(bytes: entry.bytes)) ?? [] { stored.append((certificate, entry.path)) }
        }
    }

    package mutating func add(file: String) {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(file, ceiling: VICAL.limits.maximumBytes, what: "IACA certificate or VICAL")
        } catch {
            report.refused.append((file, error.description, "unreadable"))
            return
        }
        add(bytes: bytes, source: file)
    }

    package mutating func add(bytes: [UInt8], source: String) {
        if VICAL.looksLikeVICAL(bytes) {
            addVICAL(bytes, source: source)
            return
        }
        let certificates: [Certificate]
        do { certificates = try Certificate.all(bytes: bytes) } catch {
            report.refused.append((source, "neither an IACA certificate (PEM/DER) nor a VICAL (COSE_Sign1)", "unreadable"))
            return
        }
        guard !certificates.isEmpty else {
            report.refused.append((source, "no certificate in it", "unreadable"))
            return
        }
        for certificate in certificates {
            let fingerprint = VICAL.fingerprint(certificate)
            let knownKey = (stored.map(\.certificate) + incoming.map(\.certificate)).contains { $0.keyIdentity == certificate.keyIdentity }
            if let problem = Self.problem(with: certificate) {
                report.refused.append((source, "\(certificate.subject): \(problem)", "verification"))
            } else if anchors.contains(fingerprint) || knownKey {
                incoming.append((certificate, source))
            } else {
                report.refused.append((source, "\(certificate.subject) is self-signed and no anchor names it: a self-signature proves nothing; compare SHA-256 \(fingerprint) with what its issuer publishes and give it with --anchor-sha256",
                                       "unanchored-iaca"))
            }
        }
    }

    mutating func addVICAL(_ bytes: [UInt8], source: String) {
        let list: VICAL
        do {
            list = try VICAL(bytes: bytes)
            _ = try list.verify(anchors: anchors)
        } catch {
            report.refused.append((source, "the VICAL: \(error.reason)", error.code == .untrustedList ? "unanchored-vical" : "verification"))
            return
        }
        var taken = 0
        for entry in list.entries {
            guard let certificate = try? Certificate(bytes: entry.certificate) else {
                report.refused.append((source, "a VICAL entry that is not a certificate", "verification"))
                continue
            }
            if let problem = Self.problem(with: certificate) {
                report.refused.append((source, "\(certificate.subject): \(problem)", "verification"))
                continue
            }
            incoming.append((certificate, source))
            taken += 1
        }
        report.lists.append((source, list.provider, taken))
    }

    /// Why a certificate cannot be an IACA: not a CA, a self-signature that fails, a key refused.
    static func problem(with certificate: Certificate) -> String? {
        if !certificate.isCertificateAuthority { return "not a CA certificate (an IACA is the root of an issuer's document signers)" }
        if !certificate.isSelfSigned { return "not self-signed (an IACA is a root)" }
        if let refusal = certificate.publicKeySizeRefusal { return refusal }
        return nil
    }

    /// Writes what is new into iaca/ (0644, never through a symlink).
    package mutating func commit(dryRun: Bool) throws(TrustImport.Problem) -> Report {
        var writes: [(String, [UInt8])] = []
        var seen = Set(stored.map { VICAL.fingerprint($0.certificate) })
        for (certificate, source) in incoming {
            let fingerprint = VICAL.fingerprint(certificate)
            let name = "IACA-\(certificate.country?.uppercased() ?? "XX")-\(fingerprint.prefix(16)).pem"
            guard seen.insert(fingerprint).inserted else {
                report.present.append(Entry(subject: certificate.subject, file: name, source: source))
                continue
            }
            report.added.append(Entry(subject: certificate.subject, file: name, source: source))
            writes.append((name, TrustImport.pem(certificate.derBytes)))
        }
        guard !dryRun, !writes.isEmpty else { return report }
        do {
            try BoundedFile.makeDirectory(storePath, mode: 0o755, what: "trust store")
            try BoundedFile.makeDirectory(directory, mode: 0o755, what: "IACA directory")
        } catch {
            throw TrustImport.Problem(description: error.description)
        }
        for (name, bytes) in writes {
            do {
                try PrivateFile.write(bytes, to: directory + "/" + name, mode: 0o644)
            } catch {
                throw TrustImport.Problem(description: error.description)
            }
        }
        return report
    }
}
