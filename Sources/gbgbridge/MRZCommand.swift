import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridgeRead
import MRZ

/// `gbgbridge mrz IMAGE…`.
struct MRZCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mrz",
        abstract: "Find and read the MRZ in photos or scans of data pages (TD1, TD2, TD3, MRV-A, MRV-B).",
        discussion: """
            Each image (PNG or JPEG; at most 48 MiB and 60 megapixels) is searched for the \
            machine-readable zone at any position and rotation, upside down included. Two \
            verdicts: accessKeyValid when the document number, date of birth and date of expiry \
            pass their check digits (and the composite) and were read surely — enough to open the \
            chip; valid when, beyond that, every other character was read surely too. Exit \
            status: 0 when every image gave a valid access key, 1 when any did not (or could not \
            be read), 2 bad arguments. --json prints one object per image: {"file", "found", \
            "format", "lines", "valid", "accessKeyValid", "documentNumber", "dateOfBirth", \
            "dateOfExpiry", "issuingState", "nationality", "surname", "givenNames", "sex", \
            "optionalData", "checkDigits", "confidence", "accessKeyCandidates", "source", \
            "durationMs"}, "reason" when nothing \
            was claimed although the search ran (SEARCH_BUDGET_EXCEEDED: the image's 2 s ran \
            out; AMBIGUOUS_ZONE: lines of more than one document), and "error" with a stable \
            "errorCode" (FILE_NOT_FOUND, FILE_UNREADABLE, FILE_TOO_LARGE, NOT_AN_IMAGE, \
            IMAGE_INVALID, IMAGE_TOO_COSTLY, DECODER_FAILED) for a file that could not be \
            looked at (an array when more than one image is given). Each image is decoded and \
            read in a confined child process (gbgbridge-decode), killed past its budget.

            accessKeyCandidates: up to 3 access keys for a chip to confirm, best first — \
            [{"documentNumber", "dateOfBirth", "dateOfExpiry", "score", "compositeValid"}], each \
            passing its key's check digits and the format's rules (compositeValid: false when \
            the composite check digit fails with it; absent where the format has none). They \
            are guesses, not verdicts: gbgbridge read --mrz-from-image tries them on the chip, \
            and the chip's DG1 is the document's MRZ. Everything here is read optically \
            ("source": "photo") and unverified: a forger prints whatever MRZ he likes, check \
            digits included.
            """
    )

    @Argument(help: ArgumentHelp("The images.", valueName: "IMAGE"))
    var images: [String] = []

    @Flag(name: .long, help: "Print the results as JSON.")
    var json = false

    func validate() throws {
        guard !images.isEmpty else { throw ValidationError("give at least one image") }
        guard images.count <= 10_000 else { throw ValidationError("at most 10000 images at once") }
    }

    func run() throws {
        let outcomes = images.map { MRZTool.read($0) }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = images.count == 1 ? try encoder.encode(outcomes[0]) : try encoder.encode(outcomes)
            print(String(decoding: data, as: UTF8.self))
        } else {
            outcomes.flatMap(MRZTool.lines).forEach { print($0) }
        }
        if outcomes.contains(where: { !$0.accessKeyValid }) { throw ExitCode(1) }
    }
}
