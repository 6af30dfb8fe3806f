import ArgumentParser
import BoundedFiles
import ChipRead
import ImageCodecs
import ImageSandbox
import MRTD
import MRZ

/// `gbgbridge read --mrz-from-image FILE`: the access-key candidates of a photo or scan of the
/// data page, read in the confined decoder child (issue 50), as keys for the chip to try.
enum PhotoKeys {
    /// The largest photo taken (as `gbgbridge mrz`).
    static let fileCeiling = 48 * BoundedFile.mebibyte
    static let limits = ImageCodecs.Limits(maxPixels: 60 << 20, maxBytes: 768 << 20, scaleToPixels: 16 << 20)

    /// The keys, best first (at most 3); an empty list never: no key is exit 7 with the reason.
    static func read(_ path: String) throws -> [AccessKey] {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, ceiling: fileCeiling, what: "PNG or JPEG")
        } catch {
            printError("gbgbridge read: --mrz-from-image \(error.description)")
            throw ExitCode(ReadExit.noMRZ)
        }
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) || bytes.starts(with: [0xFF, 0xD8]) else {
            printError("gbgbridge read: --mrz-from-image \(path): not a PNG or JPEG image")
            throw ExitCode(ReadExit.noMRZ)
        }
        let answer: ImageSandbox.MRZAnswer
        do {
            answer = try ImageSandbox.readMRZ(bytes, limits: limits, searchBudget: MRZRecognizer.imageBudget)
        } catch {
            printError("gbgbridge read: --mrz-from-image \(path): \(error.code.rawValue): \(error.reason)")
            throw ExitCode(ReadExit.noMRZ)
        }
        let keys = (answer.candidates ?? []).compactMap { candidate in
            try? AccessKey.fields(documentNumber: candidate.documentNumber, dateOfBirth: candidate.dateOfBirth, dateOfExpiry: candidate.dateOfExpiry)
        }
        guard !keys.isEmpty else {
            let why = answer.refusal.map { " (\($0.rawValue))" } ?? (answer.found ? ": an MRZ-like zone, but no key whose check digits hold" : ": no MRZ found")
            printError("gbgbridge read: no access key read from \(path)\(why); give the MRZ or the CAN")
            throw ExitCode(ReadExit.noMRZ)
        }
        return Array(keys.prefix(ReadJob.maximumKeys))
    }
}
