import ArgumentParser
import BoundedFiles
import Foundation
import GBGBridgeHost
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
        if let evidence {
            let result: PassportReadResult
            do {
                let bytes = try BoundedFile.read(evidence, ceiling: BoundedFile.Ceiling.evidence, what: "chip evidence")
                let parsed = try ChipEvidence(json: Data(bytes))
                result = try EvidenceVerifier(trustStore: trustStore).verify(parsed, challenge: try challenge.map(ReadCommand.decodeChallenge))
            } catch let error as MRTDError {
                printError("gbgbridge verify: \(evidence): \(error.reason)")
                throw ExitCode(ReadExit.badArguments)
            } catch let error as BoundedFileError {
                printError("gbgbridge verify: \(error.description)")
                throw ExitCode(ReadExit.badArguments)
            } catch {
                printError("gbgbridge verify: \(evidence) is not chip evidence (\(error))")
                throw ExitCode(ReadExit.badArguments)
            }
            try report(result)
            if result.active.status == .invalid { throw ExitCode(ReadExit.verificationFailed) }
            return
        }
        var files: [LDSFile: [UInt8]] = [:]
        do {
            // Each file within the ceiling a chip's file of its kind has (LDSFile.sizeCeiling).
            if let dump {
                let url = URL(fileURLWithPath: dump)
                for name in try BoundedFile.list(url.path, what: "directory of EF dumps") {
                    if let file = LDSFile(dumpFileName: name) {
                        files[file] = try BoundedFile.read(url.appendingPathComponent(name).path, ceiling: file.sizeCeiling, what: file.name)
                    }
                }
            } else if let sod {
                files[.sod] = try BoundedFile.read(sod, ceiling: LDSFile.sod.sizeCeiling, what: "EF.SOD")
                for (number, path) in try dataGroupFiles() {
                    let file = LDSFile.dataGroup(number)
                    files[file] = try BoundedFile.read(path, ceiling: file.sizeCeiling, what: file.name)
                }
            }
        } catch let error as BoundedFileError {
            printError("gbgbridge verify: \(error.description)")
            throw ExitCode(ReadExit.badArguments)
        } catch {
            printError("gbgbridge verify: \(dump ?? sod ?? ""): \(error)")
            throw ExitCode(ReadExit.badArguments)
        }
        guard files[.sod] != nil else {
            printError("gbgbridge verify: no EF.SOD found (expected EF_SOD.bin in the dump)")
            throw ExitCode(ReadExit.badArguments)
        }
        try report(PassportReadResult.offline(files: files, trustStore: trustStore))
    }

    /// Prints the verification (text or JSON); exit 6 when passive authentication is invalid.
    func report(_ result: PassportReadResult) throws {
        let report = ReadReport(result)
        if json {
            print(String(decoding: try report.jsonData(pretty: true), as: UTF8.self))
        } else {
            let passive = report.verification.passive
            print("Passive authentication: \(passive.status.rawValue)")
            print("  \(passive.detail)")
            if let signature = passive.signature { print("  Signature   \(signature.rawValue) (\(passive.signatureAlgorithm ?? "?"), \(passive.digestAlgorithm ?? "?"))") }
            if let chain = passive.chain { print("  Chain       \(chain.rawValue)") }
            if let signer = passive.documentSigner { print("  Signer      \(signer)") }
            if let csca = passive.csca { print("  CSCA        \(csca)") }
            for (name, status) in (passive.dataGroups ?? [:]).sorted(by: { $0.key.count == $1.key.count ? $0.key < $1.key : $0.key.count < $1.key.count }) {
                print("  \(name.padding(toLength: 11, withPad: " ", startingAt: 0)) \(status.rawValue)")
            }
            for (file, reason) in result.parseErrors.sorted(by: { $0.key < $1.key }) { print("  Unparsed    \(file): \(reason)") }
            if evidence != nil {
                print("Active authentication: \(report.verification.active.status.rawValue)")
                print("  \(report.verification.active.detail)")
                print("Chip authentication: \(report.verification.chip.status.rawValue)")
                print("  \(report.verification.chip.detail)")
            }
        }
        if report.verification.passive.status == .invalid { throw ExitCode(ReadExit.verificationFailed) }
    }
}
