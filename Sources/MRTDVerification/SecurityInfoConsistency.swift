/// EF.CardAccess is not signed: a reader trusts it to learn which PACE (and, on ID cards, which
/// Chip Authentication) the chip offers, and a chip or relay that hides or weakens an option there
/// pushes the reader down to a weaker protocol. DG14 (hashed in EF.SOD) and EF.CardSecurity
/// (signed itself) repeat those SecurityInfos (ICAO 9303-11 §9.2, TR-03110-3 A.1.2), so the unsigned
/// list can be checked against the signed ones once they are read.
package enum SecurityInfoConsistency {
    /// Compares EF.CardAccess with the signed lists. `dg14` and `cardSecurity` are passed only when
    /// their signature (EF.SOD's hash, EF.CardSecurity's own) holds.
    package static func check(cardAccess: SecurityInfos?, dg14: SecurityInfos?, cardSecurity: SecurityInfos?,
                             usedPACE: Bool) -> VerificationOutcome {
        let signedLists = [("DG14", dg14), ("EF.CardSecurity", cardSecurity)].compactMap { name, infos in infos.map { (name, $0) } }
        guard !signedLists.isEmpty else {
            return VerificationOutcome(status: .notChecked,
                                       detail: "no signed list of security infos (DG14, EF.CardSecurity) to compare EF.CardAccess with")
        }
        let offered = (cardAccess.map(PACEInfo.all(in:)) ?? []).map(Key.init)
        let offeredChipAuthentication = Set((cardAccess?.entries ?? []).map(\.oid).filter(Self.isChipAuthenticationInfo))
        var findings: [String] = []
        for (name, infos) in signedLists {
            for info in PACEInfo.all(in: infos) where !offered.contains(where: { Key(info).isOffered(by: $0) }) {
                findings.append("\(name) lists \(info.protocolID)\(info.parameterId.map { " (parameters \($0))" } ?? ""), which EF.CardAccess \(cardAccess == nil ? "(missing) " : "")does not offer")
            }
            // ID cards announce Chip Authentication in EF.CardAccess when its key is in EF.CardSecurity.
            if name == "EF.CardSecurity" {
                for oid in Set(infos.entries.map(\.oid).filter(Self.isChipAuthenticationInfo)) where !offeredChipAuthentication.contains(oid) {
                    findings.append("EF.CardSecurity lists Chip Authentication \(oid), which EF.CardAccess does not announce")
                }
            }
        }
        let signedPACE = signedLists.contains { !PACEInfo.all(in: $0.1).isEmpty }
        if findings.isEmpty, !signedPACE, !offered.isEmpty {
            return VerificationOutcome(status: .notChecked,
                                       detail: "EF.CardAccess offers PACE, but no signed file repeats it: the unsigned offer cannot be checked")
        }
        guard findings.isEmpty else {
            let suffix = usedPACE ? "" : "; the chip was read with BAC"
            return VerificationOutcome(status: .invalid,
                                       detail: "EF.CardAccess hides or weakens what the signed files list: " + findings.joined(separator: "; ") + suffix)
        }
        let names = signedLists.map(\.0).joined(separator: " and ")
        return VerificationOutcome(status: .valid, detail: "EF.CardAccess offers everything \(names) list\(signedLists.count == 1 ? "s" : "")")
    }

    /// id-CA-* protocol OIDs (BSI 0.4.0.127.0.7.2.2.3.x.y), not the public-key infos (id-PK-*).
    static func isChipAuthenticationInfo(_ oid: String) -> Bool {
        oid.hasPrefix("0.4.0.127.0.7.2.2.3.") && oid.split(separator: ".").count == 11
    }

    struct Key: Hashable {
        let oid: String
        let parameterId: Int?
        init(_ info: PACEInfo) {
            oid = info.protocolID.oid
            parameterId = info.parameterId
        }

        /// The same protocol, and the same parameters where both name them (the parameter id is
        /// optional when a chip has one set of domain parameters).
        func isOffered(by other: Key) -> Bool {
            oid == other.oid && (parameterId == nil || other.parameterId == nil || parameterId == other.parameterId)
        }
    }
}
