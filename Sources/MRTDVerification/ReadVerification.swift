#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto
import SmartCardCore

/// What a read's files prove, worked out the same way for a live read, a saved dump and a
/// backend's evidence: parsing, passive authentication, and the rules that keep a chip from
/// passing by hiding what its signed files promise (a DG14 or DG15 EF.SOD lists but the chip
/// withholds, an EF.CardAccess that offers less than the signed security infos).
package enum ReadVerification {
    package static func parse(into result: inout PassportReadResult) {
        func attempt<T>(_ file: LDSFile, _ body: ([UInt8]) throws(MRTDError) -> T) -> T? {
            guard let bytes = result.files[file] else { return nil }
            do { return try body(bytes) } catch {
                result.parseErrors[file] = error.reason
                return nil
            }
        }
        result.dg1 = attempt(.dataGroup(1)) { bytes throws(MRTDError) in try DataGroup1(bytes: bytes) }
        result.dg2 = attempt(.dataGroup(2)) { bytes throws(MRTDError) in try DataGroup2(bytes: bytes) }
        result.dg7 = attempt(.dataGroup(7)) { bytes throws(MRTDError) in try DataGroup7(bytes: bytes) }
        result.dg11 = attempt(.dataGroup(11)) { bytes throws(MRTDError) in try DataGroup11(bytes: bytes) }
        result.dg12 = attempt(.dataGroup(12)) { bytes throws(MRTDError) in try DataGroup12(bytes: bytes) }
        result.dg14 = attempt(.dataGroup(14)) { bytes throws(MRTDError) in try SecurityInfos(bytes: bytes) }
        result.dg15 = attempt(.dataGroup(15)) { bytes throws(MRTDError) in try DataGroup15(bytes: bytes) }
        result.directory = attempt(.directory) { bytes throws(MRTDError) in try ApplicationDirectory(bytes: bytes) }
    }

    /// The data groups whose contents are not to be shown as the document's, when there is an
    /// EF.SOD: those it has no hash for, and those whose hash is not the one it holds (a chip
    /// swapped before Chip Authentication, a genuine EF.SOD beside altered DG11/DG12: the altered
    /// names must not stand beside `passive: invalid` as the document's). Decided whether or not
    /// passive authentication was asked for: neither needs a trust anchor.
    package static func withholdUnproven(_ result: inout PassportReadResult) {
        guard let sod = result.sod else { return }
        for (file, bytes) in result.files {
            guard let number = file.dataGroupNumber else { continue }
            guard let expected = sod.dataGroupHashes[number] else {
                result.withheld[file] = "\(file.name) is not covered by EF.SOD: not part of the signed document, its contents are not shown"
                continue
            }
            if sod.digestAlgorithm.hash(bytes) != expected {
                result.withheld[file] = "\(file.name)'s hash does not match EF.SOD: not the signed document's, its contents are not shown"
            }
        }
    }

    package static func verify(_ result: inout PassportReadResult, passive verifyPassive: Bool, chip verifyChip: Bool,
                               active verifyActive: Bool, trustStore: TrustStore) {
        withholdUnproven(&result)
        if verifyPassive {
            if let sod = result.sod {
                var groups: [Int: [UInt8]] = [:]
                for (file, bytes) in result.files { if let n = file.dataGroupNumber { groups[n] = bytes } }
                var passive = PassiveAuthentication.verify(sod: sod, dataGroups: groups, trustStore: trustStore)
                // Files EF.SOD lists that the chip would not give: never silently absent. Files
                // the reader refused (a lying header, a file that does not end): never valid.
                var missing: [String] = []
                var refused: [String] = []
                for (file, absence) in result.absent {
                    guard let number = file.dataGroupNumber else { continue }
                    if case .refused = absence {
                        passive.dataGroups[file.name] = .refused
                        refused.append(file.name)
                        continue
                    }
                    guard sod.dataGroupHashes[number] != nil else { continue }
                    if absence == .protected {
                        passive.dataGroups[file.name] = .protected
                    } else {
                        passive.dataGroups[file.name] = .missing
                        missing.append(file.name)
                    }
                }
                if !refused.isEmpty {
                    passive.status = .invalid
                    passive.detail = "the chip's \(PassiveAuthentication.ordered(refused).joined(separator: ", ")) broke the reader's bounds and \(refused.count == 1 ? "was" : "were") refused (parseErrors say why); "
                        + passive.detail
                }
                if !missing.isEmpty {
                    passive.status = .invalid
                    passive.detail = "EF.SOD lists \(PassiveAuthentication.ordered(missing).joined(separator: ", ")), which the chip does not give: not the document that was signed; "
                        + passive.detail
                }
                result.passive = passive
                result.passiveOutcome = VerificationOutcome(status: passive.status, detail: passive.detail)
            } else if let error = result.parseErrors[.sod] {
                result.passiveOutcome = VerificationOutcome(status: .invalid, detail: "EF.SOD could not be parsed: \(error)")
            } else if case .refused(let reason)? = result.absent[.sod] {
                result.passiveOutcome = VerificationOutcome(status: .invalid, detail: "EF.SOD was refused: \(reason)")
            } else {
                result.passiveOutcome = VerificationOutcome(status: .notSupported, detail: "the chip has no EF.SOD")
            }
        }
        if verifyChip && !result.chipAuthenticationPerformed {
            if result.dg14 == nil, result.sod?.dataGroupHashes[14] != nil, let reason = result.absent[.dataGroup(14)] {
                // Downgrade protection: a chip that hides the signed DG14 must not pass as one without CA.
                result.chip = VerificationOutcome(status: .invalid,
                                                  detail: "EF.SOD lists DG14 (the chip key), but the chip does not give it (\(reason)): it may be a copy")
            } else if result.dg14 == nil, let error = result.parseErrors[.dataGroup(14)] {
                // A DG14 that was read but cannot be used: never the same as a chip without CA.
                result.chip = VerificationOutcome(status: .invalid, detail: "DG14 cannot be used: \(error)")
            } else if let dg14 = result.dg14, ChipAuthentication.offer(in: dg14) != nil {
                result.chip = VerificationOutcome(status: .notChecked, detail: "chip authentication needs the chip")
            } else {
                result.chip = VerificationOutcome(status: .notSupported, detail: "the chip offers no Chip Authentication (no DG14 chip key this reader can use)")
            }
        }
        // A key from EF.CardSecurity (PACE-CAM, or CA on a card without DG14): its own signature
        // and chain must hold.
        if result.chip.status == .valid, result.chipKeySource == "EF.CardSecurity", let security = result.files[.cardSecurity] {
            if let signed = try? CMSSignedData(bytes: security), let signer = try? signed.verifySignature(extraCertificates: trustStore.certificates) {
                let instant = signer.notBefore ?? Date().timeIntervalSince1970
                let (chain, detail, _) = PassiveAuthentication.chain(signer, trustStore: trustStore, at: instant)
                if chain != .trusted {
                    result.chip = VerificationOutcome(status: .untrusted, detail: result.chip.detail + ", but EF.CardSecurity is not trusted: " + detail)
                }
            } else {
                result.chip = VerificationOutcome(status: .invalid, detail: "EF.CardSecurity's signature does not verify")
            }
        } else if result.chip.status == .valid, let passive = result.passive,
                  passive.dataGroups["DG14"] != .matched || passive.signature != .valid {
            // The CA key is only as good as DG14's hash in the signed EF.SOD.
            result.chip = VerificationOutcome(status: .untrusted, detail: result.chip.detail + ", but DG14 is not protected by a valid EF.SOD")
        }
        if verifyActive && !result.activeAuthenticationPerformed {
            if result.dg15 == nil, result.sod?.dataGroupHashes[15] != nil, let reason = result.absent[.dataGroup(15)] {
                // Downgrade protection: a chip that hides the signed DG15 must not pass as one without AA.
                result.active = VerificationOutcome(status: .invalid,
                                                    detail: "EF.SOD lists DG15 (the Active Authentication key), but the chip does not give it (\(reason)): it may be a copy")
            } else if result.dg15 == nil, let error = result.parseErrors[.dataGroup(15)] {
                // A DG15 that was read but holds no usable key (malformed, or a key above the
                // size limits): never the same as a chip without AA.
                result.active = VerificationOutcome(status: .invalid, detail: "DG15 cannot be used: \(error)")
            } else if result.dg15 != nil {
                result.active = VerificationOutcome(status: .notChecked, detail: "active authentication needs the chip")
            } else {
                result.active = VerificationOutcome(status: .notSupported, detail: "the chip offers no Active Authentication (no DG15)")
            }
        }
        // EF.CardAccess is unsigned: what it offered must match what the signed files list.
        let dg14Signed = result.passive.map { $0.signature == .valid && $0.dataGroups["DG14"] == .matched } ?? false
        let cardSecuritySigned = result.files[.cardSecurity].flatMap { try? CMSSignedData(bytes: $0) }
            .map { (try? $0.verifySignature(extraCertificates: trustStore.certificates)) != nil } ?? false
        result.cardAccessCheck = SecurityInfoConsistency.check(
            cardAccess: result.files[.cardAccess].flatMap { try? SecurityInfos(bytes: $0) },
            dg14: dg14Signed ? result.dg14 : nil,
            cardSecurity: cardSecuritySigned ? result.files[.cardSecurity].flatMap(ChipAuthentication.cardSecurityInfos) : nil,
            usedPACE: result.accessControl == "PACE")
        // The AA key is only as good as DG15's hash in the signed EF.SOD.
        if result.active.status == .valid, let passive = result.passive, passive.dataGroups["DG15"] != .matched
            || passive.signature != .valid {
            result.active = VerificationOutcome(status: .untrusted,
                                                detail: result.active.detail + ", but DG15 is not protected by a valid EF.SOD")
        }
    }
}
