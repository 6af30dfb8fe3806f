import BoundedFiles
import Foundation
import ImageCodecs
import ImageSandbox
import MRZ

/// `gbgbridge mrz IMAGE…`: each image file read within bounds (its size before reading, its
/// pixels from the header before decoding), the MRZ found and read, the verdicts.
package enum MRZTool {
    /// The largest image file taken (a 50-megapixel JPEG is about 20 MiB).
    package static let fileCeiling = 48 * BoundedFile.mebibyte
    /// What decoding an image may cost: 60 megapixels, 768 MiB of working memory.
    package static let limits = ImageCodecs.Limits(maxPixels: 60 << 20, maxBytes: 768 << 20, scaleToPixels: 16 << 20)

    /// One image's outcome, as `--json` prints it.
    package struct Outcome: Encodable, Sendable {
        package var file: String
        package var found = false
        package var format: String?
        package var lines: [String]?
        package var valid = false
        package var accessKeyValid = false
        package var documentNumber: String?
        package var dateOfBirth: String?
        package var dateOfExpiry: String?
        package var issuingState: String?
        package var nationality: String?
        package var surname: String?
        package var givenNames: String?
        package var sex: String?
        package var optionalData: String?
        package var checkDigits: [String: Bool]?
        package var confidence: Double?
        /// Access keys for the chip to confirm (issue 50), best first, at most 3: each passes its
        /// key's check digits and the format's rules; none is a verdict.
        package var accessKeyCandidates: [MRZKeyCandidate] = []
        /// Where this MRZ comes from: `photo`, read optically — unverified until a chip confirms it
        /// (after a read, the chip's DG1 is the document's MRZ).
        package var source = "photo"
        package var durationMs = 0
        /// Why nothing was claimed although the search ran: `SEARCH_BUDGET_EXCEEDED` (the image's
        /// time ran out; `found` is false), `AMBIGUOUS_ZONE` (lines of more than one zone, or
        /// lines that disagree: no one document's MRZ).
        package var reason: MRZRecognizer.Refusal?
        /// Why the image could not be looked at (unreadable, not an image, too large), and its code.
        package var error: String?
        package var errorCode: Problem.Code?

        init(file: String) { self.file = file }

        mutating func take(_ reading: MRZReading) {
            (format, lines, valid, accessKeyValid) = (reading.format.rawValue, reading.lines, reading.valid, reading.accessKeyValid)
            (documentNumber, dateOfBirth, dateOfExpiry) = (reading.documentNumber, reading.dateOfBirth, reading.dateOfExpiry)
            (issuingState, nationality, surname, givenNames) = (reading.issuingState, reading.nationality, reading.surname, reading.givenNames)
            (sex, optionalData, checkDigits, confidence) = (reading.sex, reading.optionalData, reading.checkDigits, reading.confidence)
        }
    }

    /// The image at `path` decoded: PNG or JPEG by its first bytes.
    package static func image(_ path: String) throws(Problem) -> ImageCodecs.RGBImage {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, ceiling: fileCeiling, what: "PNG or JPEG")
        } catch {
            switch error.problem {
            case .tooLarge: throw Problem(.fileTooLarge, error.description)
            case .cannotOpen(let code) where code == ENOENT: throw Problem(.fileNotFound, error.description)
            default: throw Problem(.fileUnreadable, error.description)
            }
        }
        do {
            if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return try ImageCodecs.decodePNG(bytes, limits: limits) }
            if bytes.starts(with: [0xFF, 0xD8]) { return try ImageCodecs.decodeJPEG(bytes, limits: limits) }
        } catch {
            throw Problem(.imageInvalid, "\(path): \(error.reason)")
        }
        throw Problem(.notAnImage, "\(path): not a PNG or JPEG image")
    }

    /// Why an image could not be looked at, with a stable code (`--json`'s `errorCode`).
    package struct Problem: Error, CustomStringConvertible {
        package enum Code: String, Sendable, Encodable {
            case fileNotFound = "FILE_NOT_FOUND"
            case fileUnreadable = "FILE_UNREADABLE"
            case fileTooLarge = "FILE_TOO_LARGE"
            case notAnImage = "NOT_AN_IMAGE"
            /// Truncated or corrupt.
            case imageInvalid = "IMAGE_INVALID"
            /// Past what decoding may cost: its size, a progressive JPEG's scans, the decoder's
            /// time, memory or CPU.
            case imageTooCostly = "IMAGE_TOO_COSTLY"
            /// The confined decoder could not be started, or died or answered nonsense.
            case decoderFailed = "DECODER_FAILED"
        }
        package let code: Code
        package let description: String
        init(_ code: Code, _ description: String) { (self.code, self.description) = (code, description) }
    }

    /// The file at `path`, read within its ceiling, known to be a PNG or JPEG by its first bytes.
    package static func file(_ path: String) throws(Problem) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, ceiling: fileCeiling, what: "PNG or JPEG")
        } catch {
            switch error.problem {
            case .tooLarge: throw Problem(.fileTooLarge, error.description)
            case .cannotOpen(let code) where code == ENOENT: throw Problem(.fileNotFound, error.description)
            default: throw Problem(.fileUnreadable, error.description)
            }
        }
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) || bytes.starts(with: [0xFF, 0xD8]) else {
            throw Problem(.notAnImage, "\(path): not a PNG or JPEG image")
        }
        return bytes
    }

    /// Reads `path`: the file here, within its ceiling; its decoding and the MRZ search in the
    /// confined child (`ImageSandbox.readMRZ`), the search within `MRZRecognizer.imageBudget`.
    package static func read(_ path: String) -> Outcome {
        let started = ContinuousClock.now
        var outcome = Outcome(file: path)
        do {
            let answer: ImageSandbox.MRZAnswer
            do {
                answer = try ImageSandbox.readMRZ(try file(path), limits: limits, searchBudget: MRZRecognizer.imageBudget)
            } catch let error as ImageSandbox.Failure {
                let code: Problem.Code
                switch error.code {
                case .imageInvalid: code = .imageInvalid
                case .imageTooCostly: code = .imageTooCostly
                case .notAnImage: code = .notAnImage
                case .decoderFailed: code = .decoderFailed
                }
                throw Problem(code, "\(path): \(error.reason)")
            }
            outcome.found = answer.found
            outcome.reason = answer.refusal
            outcome.accessKeyCandidates = answer.candidates ?? []
            if let reading = answer.reading { outcome.take(reading) }
        } catch let error as Problem {
            outcome.error = error.description
            outcome.errorCode = error.code
        } catch {
            outcome.error = "\(path): \(error)"
            outcome.errorCode = .decoderFailed
        }
        let elapsed = ContinuousClock.now - started
        outcome.durationMs = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        return outcome
    }

    /// The outcome for a terminal.
    package static func lines(_ outcome: Outcome) -> [String] {
        if let error = outcome.error { return [error.hasPrefix(outcome.file) ? error : "\(outcome.file): \(error)"] }
        guard outcome.found, let lines = outcome.lines, let format = outcome.format else {
            if !outcome.accessKeyCandidates.isEmpty {
                return ["\(outcome.file): an MRZ-like zone, not read surely (\(outcome.durationMs) ms)"] + candidateLines(outcome.accessKeyCandidates)
            }
            let what: String
            switch outcome.reason {
            case .budgetExceeded: what = "no MRZ found within the search's time budget (\(MRZRecognizer.imageBudget.components.seconds) s)"
            case .ambiguousZone: what = "MRZ-like lines of more than one zone, or lines that disagree: no one document's MRZ"
            case nil: what = outcome.found ? "an MRZ-like zone, not read" : "no MRZ found"
            }
            return ["\(outcome.file): \(what) (\(outcome.durationMs) ms)"]
        }
        let verdict = outcome.valid ? "valid" : outcome.accessKeyValid ? "access key valid, not every character sure" : "not valid"
        let failing = (outcome.checkDigits ?? [:]).filter { !$0.value }.keys.sorted()
        var text = ["\(outcome.file): \(format), \(verdict)\(failing.isEmpty ? "" : " (check digits failing: \(failing.joined(separator: ", ")))") (\(outcome.durationMs) ms)"]
        text += lines.map { "  \($0)" }
        if outcome.accessKeyValid {
            text.append("  document \(outcome.documentNumber ?? "") · born \(outcome.dateOfBirth ?? "") · expires \(outcome.dateOfExpiry ?? "")")
        }
        text += candidateLines(outcome.accessKeyCandidates)
        return text
    }

    /// The key candidates for a terminal: what the chip will be tried with, in order.
    package static func candidateLines(_ candidates: [MRZKeyCandidate]) -> [String] {
        guard !candidates.isEmpty else { return [] }
        return ["  keys for the chip to confirm (read from the photo, unverified):"] + candidates.enumerated().map { index, candidate in
            let composite = candidate.compositeValid.map { $0 ? "" : ", composite check digit fails" } ?? ""
            return "    \(index + 1). document \(candidate.documentNumber) · born \(candidate.dateOfBirth) · expires \(candidate.dateOfExpiry) (score \(String(format: "%.3f", candidate.score))\(composite))"
        }
    }
}
