import ChipRead
import ArgumentParser
import BoundedFiles
import Foundation
import GBGBridgeHost
import GBGBridgeRead
import GBGBridge
import GBGBridgeNFC
import MRTD

/// `gbgbridge verify`: passive authentication of saved chip data.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify saved chip data offline: a dump, an EF.SOD with data groups, or chip evidence.",
        discussion: """
            Checks EF.SOD's signature, the hash of every data group given, and the document \
            signer's chain to the --trust anchors. Prints the same shape as `read`.

            With --evidence FILE (what `read --evidence` writes, or nfc.read's data with \
            evidence: true, or its evidence object alone) it also verifies the chip's Active \
            Authentication signature with DG15's key over the challenge the chip signed — and, \
            with --challenge, that this is the challenge the backend chose (a replayed answer \
            fails). Chip Authentication cannot be re-checked offline: it is reported notChecked \
            with the host's statement (Docs/server-side-verification.md).
            Exit status: 0 valid or untrusted, 2 bad arguments or unreadable files, 6 invalid.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Chip evidence as JSON (read --evidence, or nfc.read's data with evidence: true).", valueName: "file"))
    var evidence: String?

    @Option(name: .long, help: ArgumentHelp("With --evidence: the 8-byte Active Authentication challenge the backend chose, base64.", valueName: "base64"))
    var challenge: String?

    @Option(name: .long, help: "A dump directory (EF_SOD.bin, DG1.bin … as `read --dump` writes them).")
    var dump: String?

    @Option(name: .long, help: "An EF.SOD file.")
    var sod: String?

    @Option(name: .long, help: ArgumentHelp("A data group: N=FILE (e.g. 1=DG1.bin); repeatable.", valueName: "N=FILE"))
    var dg: [String] = []

    @OptionGroup var trustOptions: TrustOptions

    @Flag(name: .long, help: "Print JSON (the nfc.read data shape).")
    var json = false

    func validate() throws {
        guard [dump, sod, evidence].compactMap({ $0 }).count == 1 else { throw ValidationError("give one of --dump DIR, --sod FILE or --evidence FILE") }
        if challenge != nil, evidence == nil { throw ValidationError("--challenge goes with --evidence") }
        if let challenge { _ = try ReadCommand.decodeChallenge(challenge) }
        if dump != nil, !dg.isEmpty { throw ValidationError("--dg goes with --sod, not --dump") }
        _ = try dataGroupFiles()
        if trustOptions.trust.isEmpty { throw ValidationError("give at least one --trust PATH") }
    }

    /// `--dg N=FILE` entries as (data group number, path).
    func dataGroupFiles() throws -> [(Int, String)] {
        try dg.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let number = ASCII.number(parts[0]), (1...16).contains(number), !parts[1].isEmpty else {
                throw ValidationError("--dg takes N=FILE with N from 1 to 16, got '\(LogText.clip(entry))'")
            }
            return (number, String(parts[1]))
        }
    }

    func run() async throws {
        let trustStore = try trustOptions.load()
        let result: PassportReadResult
        do {
            if let evidence {
                result = try OfflineVerification.verify(evidence: evidence, challenge: try challenge.map(ReadCommand.decodeChallenge), trust: trustStore)
            } else if let dump {
                result = try OfflineVerification.verify(dump: dump, trust: trustStore)
            } else {
                result = try OfflineVerification.verify(sod: sod ?? "", dataGroups: try dataGroupFiles(), trust: trustStore)
            }
        } catch let problem as OfflineVerification.Problem {
            printError("gbgbridge verify: \(problem)")
            throw ExitCode(ReadExit.badArguments)
        }
        let report = ReadReport(result)
        if json {
            print(String(decoding: try report.jsonData(pretty: true), as: UTF8.self))
        } else {
            OfflineVerification.lines(report, result, evidence: evidence != nil).forEach { print($0) }
        }
        if [report.verification.passive.status, report.verification.active.status].contains(.invalid) {
            throw ExitCode(ReadExit.verificationFailed)
        }
    }
}
