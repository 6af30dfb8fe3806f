import Foundation
import MRTD
import MRTDCrypto

/// `gbgbridge trust status`: the trust store by country (CSCAs, valid, expired, expiries), its CRLs
/// with their next update, and the master-list signers, with the health check doctor runs.
package struct TrustStatus {
    package let check: DoctorCheck
    package let countries: [[String: Any]]
    package let crls: [[String: Any]]
    package let signers: [[String: Any]]
    package let crlsNotListed: Int
    package let signersNotListed: Int
    static let listed = 250

    package init(paths: [String], now: TimeInterval) {
        let (store, problems) = DoctorChecks.loadTrust(paths)
        check = DoctorChecks.trustHealth(store, paths: paths, problems: problems, now: now)
        countries = Dictionary(grouping: store.certificates) { ($0.country ?? "?").uppercased() }.sorted { $0.key < $1.key }.map { country, anchors in
            let valid = anchors.filter { $0.isValid(at: now) }
            var entry: [String: Any] = ["country": country, "cscas": anchors.count, "valid": valid.count, "expired": anchors.count - valid.count]
            if let earliest = valid.compactMap(\.notAfter).min() { entry["earliestExpiry"] = DoctorChecks.iso8601(earliest) }
            if let latest = anchors.compactMap(\.notAfter).max() { entry["latestExpiry"] = DoctorChecks.iso8601(latest) }
            return entry
        }
        // Listed up to `listed` each (a country has one CRL; 250 is every state), then counted.
        crls = store.revocationLists.prefix(Self.listed).map { crl in
            var entry: [String: Any] = ["issuer": crl.issuer]
            if let this = crl.thisUpdate { entry["thisUpdate"] = DoctorChecks.iso8601(this) }
            if let next = crl.nextUpdate { entry["nextUpdate"] = DoctorChecks.iso8601(next) }
            entry["status"] = (crl.nextUpdate ?? .infinity) < now ? "overdue" : "current"
            return entry
        }
        crlsNotListed = max(0, store.revocationLists.count - Self.listed)
        signersNotListed = max(0, store.masterListSigners.count - Self.listed)
        signers = store.masterListSigners.prefix(Self.listed).map { list in
            var entry: [String: Any] = ["file": list.path, "subject": list.signer.subject,
                                        "status": list.signer.isValid(at: now) ? "valid" : "expired"]
            if let notAfter = list.signer.notAfter { entry["notAfter"] = DoctorChecks.iso8601(notAfter) }
            return entry
        }
    }

    package var json: [String: Any] {
        var json: [String: Any] = ["check": check.json, "countries": countries, "crls": crls, "masterListSigners": signers]
        if crlsNotListed > 0 { json["crlsNotListed"] = crlsNotListed }
        if signersNotListed > 0 { json["masterListSignersNotListed"] = signersNotListed }
        return json
    }

    /// The report for people: the verdict and its fix, a table by country, CRLs, list signers.
    package var lines: [String] {
        var lines = ["\(check.status.rawValue.uppercased()) \(check.finding)"]
        if !check.fix.isEmpty { lines.append("  fix: \(check.fix)") }
        func column(_ value: Any?, _ width: Int) -> String { "\(value ?? "–")".padding(toLength: width, withPad: " ", startingAt: 0) }
        if !countries.isEmpty {
            lines += ["", "Country  CSCAs  valid  expired  earliest valid expiry      latest expiry"]
            for entry in countries {
                lines.append(column(entry["country"], 9) + column(entry["cscas"], 7) + column(entry["valid"], 7) + column(entry["expired"], 9)
                             + column(entry["earliestExpiry"], 27) + "\(entry["latestExpiry"] ?? "–")")
            }
        }
        if !crls.isEmpty {
            lines += ["", "CRLs"]
            for crl in crls { lines.append("  \(crl["status"] ?? "") next update \(crl["nextUpdate"] ?? "none"): \(crl["issuer"] ?? "")") }
            if crlsNotListed > 0 { lines.append("  and \(crlsNotListed) more") }
        }
        if !signers.isEmpty {
            lines += ["", "Master-list signers"]
            for signer in signers { lines.append("  \(signer["status"] ?? "") until \(signer["notAfter"] ?? "?"): \(signer["subject"] ?? "") (\(signer["file"] ?? ""))") }
            if signersNotListed > 0 { lines.append("  and \(signersNotListed) more") }
        }
        return lines
    }
}
