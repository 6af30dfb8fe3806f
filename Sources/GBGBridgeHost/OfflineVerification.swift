import ChipRead
import BoundedFiles
import Foundation
import GBGBridgeNFC
import MRTD

/// `gbgbridge verify`: saved chip data verified offline — a dump directory (`read --dump`), an
/// EF.SOD with data-group files, or chip evidence (`read --evidence`, nfc.read `evidence: true`).
/// Every file is read within the ceiling its kind has on a chip; a problem is one line naming the file.
package enum OfflineVerification {
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    /// Passive authentication of a dump directory's files (`EF_SOD.bin`, `DG1.bin` …).
    package static func verify(dump directory: String, trust: TrustStore) throws(Problem) -> PassportReadResult {
        var files: [LDSFile: [UInt8]] = [:]
        do {
            for name in try BoundedFile.list(directory, what: "directory of EF dumps") {
                guard let file = LDSFile(dumpFileName: name) else { continue }
                files[file] = try BoundedFile.read(directory + "/" + name, ceiling: file.sizeCeiling, what: file.name)
            }
        } catch {
            throw Problem(description: error.description)
        }
        guard files[.sod] != nil else { throw Problem(description: "\(directory): no EF.SOD (expected EF_SOD.bin in the dump)") }
        return PassportReadResult.offline(files: files, trustStore: trust)
    }

    /// Passive authentication of an EF.SOD file and data-group files (number, path).
    package static func verify(sod: String, dataGroups: [(Int, String)], trust: TrustStore) throws(Problem) -> PassportReadResult {
        var files: [LDSFile: [UInt8]] = [:]
        do {
            files[.sod] = try BoundedFile.read(sod, ceiling: LDSFile.sod.sizeCeiling, what: "EF.SOD")
            for (number, path) in dataGroups {
                let file = LDSFile.dataGroup(number)
                files[file] = try BoundedFile.read(path, ceiling: file.sizeCeiling, what: file.name)
            }
        } catch {
            throw Problem(description: error.description)
        }
        return PassportReadResult.offline(files: files, trustStore: trust)
    }

    /// Chip evidence: passive authentication, and Active Authentication over the challenge (which
    /// must be `challenge` when the backend gives the one it chose).
    package static func verify(evidence path: String, challenge: [UInt8]?, trust: TrustStore) throws(Problem) -> PassportReadResult {
        do {
            let bytes = try BoundedFile.read(path, ceiling: BoundedFile.Ceiling.evidence, what: "chip evidence")
            let parsed = try ChipEvidence(json: Data(bytes))
            return try EvidenceVerifier(trustStore: trust).verify(parsed, challenge: challenge)
        } catch let error as BoundedFileError {
            throw Problem(description: error.description)
        } catch let error as MRTDError {
            throw Problem(description: "\(path): \(error.reason)")
        } catch {
            throw Problem(description: "\(path) is not chip evidence (\(error))")
        }
    }

    /// The verdicts for people; Active and Chip Authentication only where evidence was verified.
    package static func lines(_ report: ReadReport, _ result: PassportReadResult, evidence: Bool) -> [String] {
        let passive = report.verification.passive
        var lines = ["Passive authentication: \(passive.status.rawValue)", "  \(passive.detail)"]
        if let signature = passive.signature { lines.append("  Signature   \(signature.rawValue) (\(passive.signatureAlgorithm ?? "?"), \(passive.digestAlgorithm ?? "?"))") }
        if let chain = passive.chain { lines.append("  Chain       \(chain.rawValue)") }
        if let signer = passive.documentSigner { lines.append("  Signer      \(signer)") }
        if let csca = passive.csca { lines.append("  CSCA        \(csca)") }
        let groups = (passive.dataGroups ?? [:]).sorted { $0.key.count == $1.key.count ? $0.key < $1.key : $0.key.count < $1.key.count }
        for (name, status) in groups { lines.append("  \(name.padding(toLength: 11, withPad: " ", startingAt: 0)) \(status.rawValue)") }
        for (file, reason) in result.parseErrors.sorted(by: { $0.key < $1.key }) { lines.append("  Unparsed    \(file): \(reason)") }
        if evidence {
            lines += ["Active authentication: \(report.verification.active.status.rawValue)", "  \(report.verification.active.detail)",
                      "Chip authentication: \(report.verification.chip.status.rawValue)", "  \(report.verification.chip.detail)"]
        }
        return lines
    }
}
