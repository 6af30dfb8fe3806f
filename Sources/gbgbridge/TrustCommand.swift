import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridgeRead
import MRTD
import MRTDCrypto
import GBGBridge

/// `gbgbridge trust`: the trust store's health, and adding to it.
struct TrustCommand: AsyncParsableCommand {
    static let defaultStore = "/etc/gbgbridge/trust"

    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Look after the trust store: CSCA certificates, master lists and CRLs.",
        subcommands: [TrustStatusCommand.self, TrustImportCommand.self]
    )
}

/// `gbgbridge trust status`: what `doctor` says of the store, in detail.
struct TrustStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the trust store by country: CSCAs, expiries, CRLs and their next update, master-list signers.",
        discussion: "Exit status: 0 when the store is usable (ok or warning), 1 when it is not (no valid CSCA, unreadable), 2 bad arguments."
    )

    @Option(name: .long, help: ArgumentHelp("The store or other trust files (CSCA certificates, master lists, CRLs); repeatable. Default: \(TrustCommand.defaultStore).", valueName: "path"))
    var trust: [String] = []

    @Flag(name: .long, help: "Print JSON: {\"check\", \"countries\", \"crls\", \"masterListSigners\"}.")
    var json = false

    func run() async throws {
        let paths = trust.isEmpty ? [TrustCommand.defaultStore] : trust
        let status = TrustStatus(paths: paths, now: Date().timeIntervalSince1970)
        if json {
            printJSON(status.json)
        } else {
            status.lines.forEach { print($0) }
        }
        if status.check.status == .error { throw ExitCode(1) }
    }
}

/// `gbgbridge trust import FILE…`: verified, de-duplicated additions to the store.
struct TrustImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add master lists, CSCA certificates and CRLs to the trust store: verified, de-duplicated, with a report.",
        discussion: """
            A master list is accepted only when its signer is issued by a CSCA trusted before the \
            list is read: one in the store, one this import takes from a certificate file given \
            before the list, or one of the list's certificates named by --list-anchor-sha256 (the \
            fingerprint its country publishes; the refusal prints the one the list claims). A \
            certificate inside the list never vouches for the list by itself. Its certificates are \
            then judged one by one (a CA, a sound key, a self-signature that verifies, or a link \
            from a trusted CSCA) and refused one by one with the reason; a list of more than \
            10,000 certificates, or a file over 16 MiB, is refused whole. A CSCA certificate must be self-signed with a \
            valid signature, or a link certificate issued by a CSCA in the store or in the same \
            import. A CRL must be signed by such a CSCA. A certificate already in the store is \
            skipped; one with the same subject and key as a stored one but a later expiry \
            replaces it; a CRL replaces an older one of the same issuer. Files are written as \
            CC-<hash>.pem and crl-CC-<hash>.crl (mode 0644, never through a symlink).

            Exit status: 0 everything imported (or already present; certificates of an accepted \
            list refused one by one are reported, not a failure), 1 a file, a certificate file \
            or a CRL was refused (the rest is imported), 2 bad arguments or the store cannot be written.
            """
    )

    @Argument(help: ArgumentHelp("Master lists (.ml), CSCA certificates (PEM/DER) and CRLs.", valueName: "FILE"))
    var files: [String]

    @Option(name: .long, help: ArgumentHelp("The trust store directory (default: \(TrustCommand.defaultStore)).", valueName: "DIR"))
    var store: String = TrustCommand.defaultStore

    @Flag(name: .long, help: "Report what would change without writing.")
    var dryRun = false

    @Option(name: .long, help: ArgumentHelp("The SHA-256 fingerprint (64 hex digits, colons or spaces allowed) of a CSCA its country publishes; a master list whose signer that CSCA issued is accepted. Repeatable.", valueName: "HEX"))
    var listAnchorSha256: [String] = []

    /// The --list-anchor-sha256 values as upper-case hex.
    func listAnchors() throws -> Set<String> {
        var anchors: Set<String> = []
        for text in listAnchorSha256 {
            let hex = String(text.unicodeScalars.filter { $0 != ":" && $0 != " " }.map(Character.init)).uppercased()
            guard hex.utf8.count == 64, hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) }) else {
                throw ValidationError("--list-anchor-sha256 takes a SHA-256 fingerprint: 64 hex digits (colons or spaces allowed), not '\(LogText.clip(text))'")
            }
            anchors.insert(hex)
        }
        return anchors
    }

    func validate() throws { _ = try listAnchors() }

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func run() async throws {
        var importer: TrustImport
        do {
            importer = try TrustImport(store: store)
        } catch {
            printError("gbgbridge trust import: \(error)")
            throw ExitCode(2)
        }
        importer.listAnchors = try listAnchors()
        for file in files { importer.add(file: file) }
        for anchor in importer.listAnchors.subtracting(importer.usedListAnchors).sorted() {
            printError("gbgbridge trust import: note: --list-anchor-sha256 \(anchor) matched no self-signed CSCA in the lists given")
        }
        let report: TrustImport.Report
        do {
            report = try importer.commit(dryRun: dryRun)
        } catch {
            printError("gbgbridge trust import: \(error)")
            throw ExitCode(2)
        }
        if json {
            printJSON(report.json)
        } else {
            print(report.text(dryRun: dryRun))
        }
        if !report.refused.isEmpty { throw ExitCode(1) }
    }
}
