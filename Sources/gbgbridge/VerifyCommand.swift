import ArgumentParser
import Foundation
import MRTD

/// `gbgbridge verify`: passive authentication of saved chip data.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Passive authentication of a saved dump (EF.SOD and data groups).",
        discussion: """
            Checks EF.SOD's signature, the hash of every data group given, and the document \
            signer's chain to the --trust anchors. Prints the same shape as `read`.
            Exit status: 0 valid or untrusted, 2 bad arguments or unreadable files, 6 invalid.
            """
    )

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
        guard (dump == nil) != (sod == nil) else { throw ValidationError("give --dump DIR or --sod FILE") }
        if dump != nil, !dg.isEmpty { throw ValidationError("--dg goes with --sod, not --dump") }
        for entry in dg {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let n = Int(parts[0]), (1...16).contains(n) else {
                throw ValidationError("--dg takes N=FILE with N from 1 to 16, got '\(entry)'")
            }
        }
        if trustOptions.trust.isEmpty { throw ValidationError("give at least one --trust PATH") }
    }

    func run() async throws {
        let trustStore = try trustOptions.load()
        var files: [LDSFile: [UInt8]] = [:]
        do {
            if let dump {
                let url = URL(fileURLWithPath: dump)
                for name in try FileManager.default.contentsOfDirectory(atPath: url.path) {
                    if let file = LDSFile(dumpFileName: name) {
                        files[file] = Array(try Data(contentsOf: url.appendingPathComponent(name)))
                    }
                }
            } else {
                files[.sod] = Array(try Data(contentsOf: URL(fileURLWithPath: sod!)))
                for entry in dg {
                    let parts = entry.split(separator: "=", maxSplits: 1)
                    files[.dataGroup(Int(parts[0])!)] = Array(try Data(contentsOf: URL(fileURLWithPath: String(parts[1]))))
                }
            }
        } catch {
            printError("gbgbridge verify: \(error.localizedDescription)")
            throw ExitCode(ReadExit.badArguments)
        }
        guard files[.sod] != nil else {
            printError("gbgbridge verify: no EF.SOD found (expected EF_SOD.bin in the dump)")
            throw ExitCode(ReadExit.badArguments)
        }
        let result = PassportReadResult.offline(files: files, trustStore: trustStore)
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
        }
        if report.verification.passive.status == .invalid { throw ExitCode(ReadExit.verificationFailed) }
    }
}
