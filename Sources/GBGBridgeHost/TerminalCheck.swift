import CVCertificates
import Foundation
import GBGBridgeRead

/// The checks of `terminal check` (and of `doctor` when the configuration names credentials).
package struct TerminalCheck {
    package var lines: [String] = []
    package var problems: [String] = []
    package var json: [String: Any] = [:]

    package static func run(_ credentials: TerminalCredentials, trustPoints: [CVCertificate], on day: CVDate) async -> TerminalCheck {
        var check = TerminalCheck()
        let terminal = credentials.terminal
        let rights = terminal.authorization.biometricDataGroups
        for certificate in credentials.terminals {
            let rights = certificate.authorization.biometricDataGroups
            check.lines.append("terminal \(certificate.holderReference): \(TerminalPrint.kind(certificate.authorization)), may read \(rights.isEmpty ? "no biometric data group" : rights.joined(separator: " and ")); issued by \(certificate.authorityReference); valid \(certificate.effectiveDate) … \(certificate.expirationDate)")
        }
        if terminal.authorization.terminalType != CertificateHolderAuthorization.inspectionSystem {
            check.problems.append("\(terminal.holderReference) is not an Inspection System certificate: an ePassport refuses it")
        } else if rights.isEmpty {
            check.problems.append("\(terminal.holderReference) may read neither DG3 nor DG4")
        }
        if !terminal.isValid(on: day) {
            check.problems.append("\(terminal.holderReference) is not valid on \(day) (\(terminal.effectiveDate) … \(terminal.expirationDate))")
        }

        // Chains: to each given CVCA (verified), else to each CAR above the DV certificates (followed).
        let roots = trustPoints.isEmpty
            ? Array(Set(credentials.certificates.filter { $0.authorization.role == .dvDomestic || $0.authorization.role == .dvForeign }
                .map(\.authorityReference))).sorted()
            : trustPoints.map(\.holderReference)
        var chains: [[String: Any]] = []
        var curveKey: CVPublicKey?
        for root in roots {
            var entry: [String: Any] = ["cvca": root]
            do {
                let chain = try credentials.chain(to: [root])
                entry["certificates"] = chain.certificates.map(\.holderReference)
                let path = ([root] + chain.certificates.map(\.holderReference)).joined(separator: " → ")
                if let cvca = trustPoints.first(where: { $0.holderReference == root }) {
                    let effective = try chain.verify(trustPointKey: cvca.publicKey, on: day)
                    entry["verified"] = true
                    entry["rights"] = effective.biometricDataGroups
                    curveKey = curveKey ?? chain.certificates.reduce(cvca.publicKey) { $1.publicKey.inheriting(from: $0) }
                    check.lines.append("chain \(path): verified from the CVCA for \(day)")
                } else {
                    entry["verified"] = false
                    check.lines.append("chain \(path): followed by CAR/CHR (give --cvca \(root)'s certificate to verify it)")
                }
                for certificate in chain.certificates where !certificate.isValid(on: day) && certificate != terminal {
                    check.problems.append("\(certificate.holderReference) (in the chain to \(root)) is not valid on \(day)")
                }
            } catch {
                entry["verified"] = false
                entry["problem"] = error.reason
                // The terminal's own dates are a problem of their own already.
                if !(error.code == .notValid && !terminal.isValid(on: day) && error.reason.hasPrefix(terminal.holderReference + " ")) {
                    check.problems.append("chain to \(root): \(error.reason)")
                }
            }
            chains.append(entry)
        }
        if roots.isEmpty { check.problems.append("no DV certificate among the certificates: the chain to a CVCA is missing") }

        // The key: a test message signed by the signer and verified with the certificate's key.
        var keyEntry: [String: Any] = [:]
        var key = curveKey ?? terminal.publicKey
        if key.domainParameters == nil, !key.algorithm.isRSA, let curve = key.standardCurve,
           let parameters = try? CVPublicKey.DomainParameters(curve: curve) {
            key.domainParameters = parameters
            keyEntry["curve"] = curve.name
        }
        var nonce = [UInt8](repeating: 0, count: 32)
        for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255) }
        let message = Array("gbgbridge terminal check".utf8) + nonce
        do {
            let signature = try await credentials.signer.sign(message, algorithm: terminal.publicKey.algorithm)
            if key.algorithm.verify(signature, over: message, with: try key.publicKey()) {
                keyEntry["status"] = "matches"
                check.lines.append("key: signs for \(terminal.holderReference) (\(terminal.publicKey.algorithm.schemeName))")
            } else {
                keyEntry["status"] = "mismatch"
                check.problems.append("the key's signature does not verify with \(terminal.holderReference)'s public key: it is another key")
            }
        } catch {
            keyEntry["status"] = "error"
            keyEntry["detail"] = error.reason
            check.problems.append("the key could not sign: \(error.reason)")
        }
        let status = check.problems.isEmpty ? "ok" : "error"
        check.lines += check.problems.map { "problem: \($0)" }
        check.lines.append(status == "ok" ? "OK: usable for Terminal Authentication on \(day)" : "NOT USABLE: \(check.problems.count) problem\(check.problems.count == 1 ? "" : "s")")
        check.json = ["status": status, "date": "\(day)", "terminal": TerminalPrint.json(terminal), "chains": chains, "key": keyEntry,
                      "problems": check.problems]
        return check
    }
}

extension DoctorChecks {
    /// The configuration's Terminal Authentication credentials, as `terminal check` sees them
    /// (today, chains followed by CAR/CHR, the key signing for the certificate).
    package static func terminalAuthentication(certificates: [String], key: String?) async -> DoctorCheck {
        let name = "terminal-authentication"
        guard let key, !certificates.isEmpty else {
            return DoctorCheck(name: name, status: .ok, finding: "not configured: DG3/DG4 of EAC passports stay closed (no Terminal Authentication)",
                               fix: "")
        }
        let fix = "gbgbridge terminal check --terminal-certificates … --terminal-key … shows each problem: terminal-key must be the IS "
            + "certificate's own key; an expiring certificate is renewed through your DV (gbgbridge terminal request makes the request)"
        let credentials: TerminalCredentials
        do {
            credentials = try TerminalKey.credentials(certificatePaths: certificates, key: key)
        } catch {
            return DoctorCheck(name: name, status: .error, finding: "\(error.field): \(error.reason)", fix: fix)
        }
        let report = await TerminalCheck.run(credentials, trustPoints: [], on: CVDate(Date()))
        let terminal = credentials.terminal
        var details: [String: any Sendable] = ["terminal": terminal.holderReference, "expiration": "\(terminal.expirationDate)"]
        details["problems"] = report.problems
        guard report.problems.isEmpty else {
            return DoctorCheck(name: name, status: .error, finding: report.problems.joined(separator: "; "), fix: fix, details: details)
        }
        let daysLeft = Int((terminal.expirationDate.date.timeIntervalSinceNow / 86_400).rounded(.down))
        let finding = "\(terminal.holderReference) may read \(terminal.authorization.biometricDataGroups.joined(separator: " and ")), "
            + "expires \(terminal.expirationDate) (\(daysLeft) days); the key signs for it"
        // IS certificates are short-lived (weeks to months): say so a fortnight ahead.
        return DoctorCheck(name: name, status: daysLeft < 14 ? .warning : .ok, finding: finding, fix: daysLeft < 14 ? fix : "", details: details)
    }
}
