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
        subcommands: [TrustStatusCommand.self, TrustImportCommand.self, TrustRefreshCommand.self]
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
            10,000 certificates, or a file over 16 MiB, is refused whole. A CSCA certificate file \
            is taken only through something already trusted: a self-signed CSCA when its SHA-256 \
            is given with --anchor-sha256 (a self-signature proves nothing: refused as \
            unanchored-csca, with the fingerprint to compare), a link certificate or a renewal \
            when a CSCA in the store (or taken earlier in the same import) signed it. A CRL must \
            be signed by such a CSCA. A CSCA is the same CSCA only when its key is the same: a \
            certificate already in the store is skipped, one with the same key and a later expiry \
            replaces it, and one with another key never replaces or removes anything. A CRL \
            belongs to the key that signed it: it replaces only an older CRL of that key. Files \
            are written as CC-<hash>.pem and crl-CC-<hash>.crl (mode 0644, never through a \
            symlink; a store that is or holds a symbolic link is refused).

            With --iaca the files are mdoc issuers (ISO 18013-5) instead: IACA certificates, or a \
            VICAL (the COSE-signed list AAMVA publishes), written into the store's iaca/ directory \
            (IACA-CC-<hash>.pem), apart from the CSCAs: a CSCA never vouches for an mdoc, an IACA \
            never for a passport. A self-signed IACA is taken only when its SHA-256 is given with \
            --anchor-sha256 (else refused as unanchored-iaca), a VICAL only when --anchor-sha256 \
            names its signer's certificate or the one that issued it (else unanchored-vical).

            Exit status: 0 everything imported (or already present; certificates of an accepted \
            list refused one by one are reported, not a failure), 1 a file, a certificate file \
            or a CRL was refused (the rest is imported), 2 bad arguments or the store cannot be written.
            """
    )

    @Flag(name: .long, help: "The files are mdoc issuers: IACA certificates or a VICAL, for the store's iaca/ (mdoc read, mdoc.read).")
    var iaca = false

    @Argument(help: ArgumentHelp("Master lists (.ml), CSCA certificates (PEM/DER) and CRLs; with --iaca, IACA certificates and VICALs.", valueName: "FILE"))
    var files: [String]

    @Option(name: .long, help: ArgumentHelp("The trust store directory (default: \(TrustCommand.defaultStore)).", valueName: "DIR"))
    var store: String = TrustCommand.defaultStore

    @Flag(name: .long, help: "Report what would change without writing.")
    var dryRun = false

    @Option(name: [.customLong("list-anchor-sha256"), .customLong("anchor-sha256")],
            help: ArgumentHelp("The SHA-256 fingerprint (64 hex digits, colons or spaces allowed) of a CSCA its country publishes: that self-signed CSCA is taken, and a master list whose signer it issued is accepted. Repeatable.", valueName: "HEX"))
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
        // One writer of a store at a time: an import waits for a running refresh (30 s at most).
        let lock: StoreLock
        do {
            lock = try StoreLock.acquire(store: store, until: .now + .seconds(30), shared: dryRun)
        } catch {
            printError("gbgbridge trust import: \(error)")
            throw ExitCode(error.exitStatus)
        }
        defer { lock.release() }
        if iaca {
            try importIssuers()
            return
        }
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
            printError("gbgbridge trust import: note: the anchor \(anchor) matched no self-signed CSCA in the files given")
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

extension TrustImportCommand {
    /// `--iaca`: IACA certificates and VICALs into the store's iaca/.
    func importIssuers() throws {
        var importer: IACAImport
        do {
            importer = try IACAImport(store: store)
        } catch {
            printError("gbgbridge trust import: \(error)")
            throw ExitCode(2)
        }
        importer.anchors = try listAnchors()
        for file in files { importer.add(file: file) }
        let report: IACAImport.Report
        do {
            report = try importer.commit(dryRun: dryRun)
        } catch {
            printError("gbgbridge trust import: \(error)")
            throw ExitCode(2)
        }
        if json { printJSON(report.json) } else { print(report.text(dryRun: dryRun)) }
        if !report.refused.isEmpty { throw ExitCode(1) }
    }
}

/// `gbgbridge trust refresh`: the configured sources fetched, verified as `trust import` verifies,
/// and swapped into the store in one rename.
struct TrustRefreshCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Fetch master lists, CRLs and CSCAs from their sources, verify them as trust import does, and swap them into the store.",
        discussion: """
            Sources come from the configuration file's trust-refresh: (sources: each url, kind: \
            master-list | crl | csca | vical — a vical brings mdoc IACAs into the store's iaca/, \
            verified through its signer's anchor — and for master lists, CSCAs and VICALs the anchor-sha256 \
            fingerprints trust import --anchor-sha256 takes; crl-distribution-points: true also \
            fetches the CRL URLs the stored CSCAs name) and from --source. Fetched through libcurl \
            on the system's OpenSSL: HTTPS verified against the system's CAs or --ca-file; plain \
            http only for what is verified on arrival by what the store already trusts or by an \
            anchor (CRLs, link certificates, anchored CSCAs and master lists); at most 3 redirects, \
            never to another scheme nor from https to http; 16 MiB at most, a connect, low-speed \
            and total timeout; conditional requests (ETag, Last-Modified: 304 is unchanged, and a \
            304 to a request that named no version is a failure). Up to 4 sources are fetched at \
            once, the whole run within --deadline. A master list published as a ZIP archive (the \
            BSI's) is unpacked within bounds. What is fetched is verified by trust import's own \
            code (a master list only through a trusted or anchored signer; a self-signed CSCA only \
            when anchored — unanchored-csca otherwise; a CSCA is identified by its key, never \
            replaced by another key; a CRL belongs to the key that signed it and is taken only \
            when newer than that key's and not issued in the future), written into a copy of the \
            store beside it and swapped in with one rename: a source that fails leaves what it \
            would have replaced untouched, and nothing is deleted because a source was \
            unreachable. One refresh or import of a store runs at a time (a lock on its \
            directory); the working copy of a killed run is removed by the next. The store and \
            everything in it are opened without following symbolic links. A running serve picks \
            the new store up between reads.

            Exit status: 0 every source fresh or updated, 1 a source failed (the others were \
            applied) or another refresh holds the store past --timeout, 2 bad arguments, no \
            source, or the store cannot be written. --json prints {"store", "dryRun", \
            "storeChanged", "sources": [{"url", "kind", "outcome": updated | unchanged | failed, \
            "reason", "detail", "httpStatus", "bytes", "seconds", "changes"}], "stateProblem", \
            "leftoversRemoved"}.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The configuration file (default: /etc/gbgbridge/gbgbridge.conf when it exists).", valueName: "FILE"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("The trust store directory to refresh (default: \(TrustCommand.defaultStore)).", valueName: "DIR"))
    var store: String = TrustCommand.defaultStore

    @Option(name: .long, help: ArgumentHelp("A source: URL (its kind from its name: .ml a master list, .crl a CRL, .vical a VICAL, else a CSCA) or KIND=URL (master-list, crl, csca, vical); repeatable.", valueName: "URL"))
    var source: [String] = []

    @Option(name: [.customLong("list-anchor-sha256"), .customLong("anchor-sha256")],
            help: ArgumentHelp("For the --source master lists and CSCAs: the SHA-256 fingerprint of a CSCA its country publishes (as trust import). Repeatable.", valueName: "HEX"))
    var listAnchorSha256: [String] = []

    @Option(name: .long, help: ArgumentHelp("Servers' certificates must chain to this PEM bundle instead of the system's CAs.", valueName: "PEM"))
    var caFile: String?

    @Flag(name: .long, help: "Fetch and verify, report what would change, write nothing.")
    var dryRun = false

    @Option(name: .long, help: ArgumentHelp("The most seconds one source may take, its redirects and body included, and how long to wait for another refresh of the store (1–3600).", valueName: "seconds"))
    var timeout: Int = 120

    @Option(name: .long, help: ArgumentHelp("The most seconds the whole refresh may take, every source included (1–3600; default 600, under the packaged unit's 30-minute start limit).", valueName: "seconds"))
    var deadline: Int = 600

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func sources() throws -> [TrustRefresh.Source] {
        let anchors = try listAnchorSha256.map { text -> String in
            let hex = String(text.unicodeScalars.filter { $0 != ":" && $0 != " " }.map(Character.init)).uppercased()
            guard hex.utf8.count == 64, hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) }) else {
                throw ValidationError("--list-anchor-sha256 takes a SHA-256 fingerprint: 64 hex digits, not '\(LogText.clip(text))'")
            }
            return hex
        }
        return try source.map { text in
            for kind in TrustRefresh.Source.Kind.allCases where text.hasPrefix(kind.rawValue + "=") {
                let url = String(text.dropFirst(kind.rawValue.count + 1))
                return TrustRefresh.Source(url: url, kind: kind, anchors: kind == .crl ? [] : anchors)
            }
            guard text.lowercased().hasPrefix("http://") || text.lowercased().hasPrefix("https://") else {
                throw ValidationError("--source takes an http(s) URL or KIND=URL (master-list, crl, csca), not '\(LogText.clip(text))'")
            }
            let kind = TrustRefresh.Source.kind(guessedFrom: text)
            return TrustRefresh.Source(url: text, kind: kind, anchors: kind == .crl ? [] : anchors)
        }
    }

    func validate() throws {
        _ = try sources()
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be between 1 and 3600 seconds") }
        guard (1...3600).contains(deadline) else { throw ValidationError("--deadline must be between 1 and 3600 seconds") }
    }

    func run() async throws {
        let loaded: (settings: ServeSettings, path: String)?
        do {
            loaded = try ServeSettings.load(path: config)
        } catch {
            printError("gbgbridge trust refresh: \(error)")
            throw ExitCode(2)
        }
        var settings = loaded?.settings.trustRefresh ?? TrustRefresh.Settings()
        settings.sources += try sources()
        guard !settings.sources.isEmpty || settings.crlDistributionPoints else {
            printError("gbgbridge trust refresh: no source: name them under trust-refresh: sources: in \(loaded?.path ?? ServeSettings.defaultPath), or give --source URL")
            throw ExitCode(2)
        }
        let trustPaths = loaded?.settings.trust ?? [TrustCommand.defaultStore]
        let report: TrustRefresh.Report
        do {
            report = try await TrustRefresh.run(settings, store: store, trustedElsewhere: trustPaths, caFile: caFile, dryRun: dryRun,
                                                timeout: .seconds(timeout), deadline: .seconds(deadline))
        } catch {
            printError("gbgbridge trust refresh: \(error)")
            throw ExitCode(error.exitStatus)
        }
        if json {
            printJSON(report.json)
        } else {
            report.lines.forEach { print($0) }
        }
        if report.anyFailed { throw ExitCode(1) }
    }
}
