import ChipRead
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Glibc
import MRTD

/// What `gbgbridge read` writes besides its report — the chip files (`--dump`), the chip evidence
/// (`--evidence`), the face (`--photo`) — all personal data, so readable by the owner only from
/// the first byte and never written through a symlink (`PrivateFile`). A problem is one line
/// naming what could not be written and where.
package enum ReadOutputs {
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    /// Every file as `<name>.bin` (EF_COM.bin, EF_SOD.bin, DG1.bin …) in `directory` (created 0700).
    package static func write(dump directory: String, _ files: [LDSFile: [UInt8]]) throws(Problem) {
        do {
            let fd = try PrivateFile.openDirectory(directory)
            defer { close(fd) }
            for (file, bytes) in files.sorted(by: { $0.key < $1.key }) {
                try PrivateFile.write(bytes, name: file.dumpFileName, in: fd, displayPath: directory + "/" + file.dumpFileName)
            }
        } catch {
            throw Problem(description: "the dump: \(error.description)")
        }
    }

    /// The chip evidence as JSON, for a backend (`gbgbridge verify --evidence`).
    package static func write(evidenceOf result: PassportReadResult, to path: String) throws(Problem) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let json: Data
        do {
            json = try encoder.encode(ChipEvidence(result))
        } catch {
            throw Problem(description: "cannot encode the evidence: \(error)")
        }
        try write(json, to: path, what: "the evidence")
    }

    /// The face image as the report carries it (JPEG; JPEG 2000 on the chip is converted).
    package static func write(photoOf report: ReadReport, to path: String) throws(Problem) {
        guard let base64 = report.photo, let data = Data(base64Encoded: base64) else {
            throw Problem(description: "the chip has no face image to save")
        }
        try write(data, to: path, what: "the photo")
    }

    private static func write(_ data: Data, to path: String, what: String) throws(Problem) {
        do {
            try PrivateFile.write(data, to: path)
        } catch {
            throw Problem(description: "\(what): \(error.description)")
        }
    }
}
