import TextSanitizing
import ChipRead
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import MRTD

/// `gbgbridge read`'s summary of a read for people: who, which document, what was read, skipped,
/// withheld or unparsed, and each verification's verdict. Never the MRZ lines, the photo or a key.
package enum ReadSummary {
    package static func lines(_ report: ReadReport, _ result: PassportReadResult, reader: String) -> [String] {
        var lines: [String] = []
            lines.append("Read with \(result.paceProtocol ?? report.accessControl) from \(reader)")
            if let note = result.accessControlNote { lines.append("  Note           \(note)") }
            if let document = report.document {
                lines.append("  Name           \(document.surname), \(document.givenNames)")
                lines.append("  Document       \(document.documentCode) \(document.documentNumber) issued by \(document.issuingState)")
                lines.append("  Nationality    \(document.nationality)")
                lines.append("  Date of birth  \(document.dateOfBirth)    Sex \(document.sex)")
                lines.append("  Expires        \(document.dateOfExpiry)")
            }
            if let width = report.photoWidth, let height = report.photoHeight {
                let source = result.dg2?.faces.first?.format == .jpeg2000 ? " (JPEG 2000 on the chip)" : ""
                lines.append("  Photo          \(width)×\(height) JPEG\(source)")
            }
            for (label, entries) in [("Fingerprints", report.fingerprints ?? []), ("Irises", report.irises ?? [])] where !entries.isEmpty {
                let described = entries.map { "\($0.positionName) (\($0.format)\($0.width > 0 ? " \($0.width)×\($0.height)" : ""))" }
                lines.append("  \(Formatting.padded(label, to: 14, leading: false)) \(described.joined(separator: ", "))")
            }
            lines.append("  Data groups    \(report.dataGroupsRead.joined(separator: " "))")
            for (file, reason) in result.skipped.sorted(by: { $0.key < $1.key }) { lines.append("  Skipped        \(file): \(reason)") }
            for (file, reason) in result.parseErrors.sorted(by: { $0.key < $1.key }) { lines.append("  Unparsed       \(file): \(reason)") }
            for (file, reason) in result.withheld.sorted(by: { $0.key < $1.key }) { lines.append("  Withheld       \(file): \(reason)") }
            let v = report.verification
            lines.append("Verification")
            lines.append("  Passive        \(v.passive.status.rawValue): \(v.passive.detail)")
            if let signer = v.documentSigner { lines.append("  Signer         \(signer)") }
            if let csca = v.csca { lines.append("  CSCA           \(csca)") }
            lines.append("  Chip           \(v.chip.status.rawValue): \(v.chip.detail)")
            lines.append("  Active         \(v.active.status.rawValue): \(v.active.detail)")
            if let terminal = v.terminal, terminal.status != .notChecked {
                lines.append("  Terminal       \(terminal.status.rawValue): \(terminal.detail)")
            }
            let stats = result.statistics
            let seconds = Double(stats.totalTime.components.seconds) + Double(stats.totalTime.components.attoseconds) / 1e18
            lines.append("  \(stats.apdus) APDUs, \(stats.fileBytes) bytes of files, \(Formatting.fixed(seconds, places: 2)) s"
                  + (stats.reconnections > 0 ? ", the document left the reader \(stats.reconnections)× and the read went on" : ""))
        return lines
    }
}
