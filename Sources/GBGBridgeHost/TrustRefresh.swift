import BoundedFiles
import CFileSwapShim
import Foundation
import MRTD
import MRTDCrypto
import GBGBridgeRead
import TrustFetch

/// `gbgbridge trust refresh` (issue 45): the configured sources fetched as a careful client
/// (`TrustFetcher`), verified exactly as `trust import` verifies (`TrustImport`, the same code),
/// written into a copy of the store beside it, and swapped in with one rename
/// (`renameat2(RENAME_EXCHANGE)`). A source that fails — network, size, signature, parse — leaves
/// what it would have replaced untouched and is reported; nothing is ever deleted because a source
/// was unreachable. What each run did is kept beside the store, in `.NAME.refresh.json` (the
/// conditional-request validators, the last success, failures by reason), which `serve`,
/// `doctor` and /diagnostics read: outside it, so that a run that changes nothing leaves every
/// file of the store byte for byte as it was.
package enum TrustRefresh {
    /// One source: a URL and what it serves.
    package struct Source: Sendable, Equatable, Codable {
        package enum Kind: String, Sendable, Codable, CaseIterable {
            case masterList = "master-list"
            case crl
            case csca
        }
        package var url: String
        package var kind: Kind
        /// SHA-256 fingerprints of CSCAs inside a master list that may vouch for its signer (the
        /// ones its country publishes: `trust import --list-anchor-sha256`).
        package var anchors: [String] = []

        package init(url: String, kind: Kind, anchors: [String] = []) { (self.url, self.kind, self.anchors) = (url, kind, anchors) }

        /// A kind from a URL's file name, for `--source URL` (`.ml`, `.crl`; anything else a CSCA).
        package static func kind(guessedFrom url: String) -> Kind {
            let path = URL(string: url)?.path.lowercased() ?? url.lowercased()
            if path.hasSuffix(".ml") || path.hasSuffix(".ldif") { return .masterList }
            if path.hasSuffix(".crl") { return .crl }
            return .csca
        }
    }

    /// `trust-refresh:` in the configuration file.
    package struct Settings: Sendable, Equatable {
        package var sources: [Source] = []
        /// Also fetch the CRL URLs named in the stored CSCAs' CRL Distribution Points.
        package var crlDistributionPoints = false
        package init(sources: [Source] = [], crlDistributionPoints: Bool = false) {
            (self.sources, self.crlDistributionPoints) = (sources, crlDistributionPoints)
        }
    }

    /// What happened to one source.
    package struct SourceReport: Sendable {
        package enum Outcome: String, Sendable { case updated, unchanged, failed }
        package var url: String
        package var kind: Source.Kind
        package var outcome: Outcome
        /// For a failure: a stable reason (`TrustFetcher.Failure.Reason`, or `verification`,
        /// `wrong-kind`), and what exactly.
        package var reason: String?
        package var detail: String?
        package var httpStatus: Int?
        package var bytes: Int?
        package var changes: [String] = []

        package var json: [String: Any] {
            var object: [String: Any] = ["url": url, "kind": kind.rawValue, "outcome": outcome.rawValue, "changes": changes]
            if let reason { object["reason"] = reason }
            if let detail { object["detail"] = detail }
            if let httpStatus { object["httpStatus"] = httpStatus }
            if let bytes { object["bytes"] = bytes }
            return object
        }
    }

    package struct Report: Sendable {
        package var sources: [SourceReport] = []
        package var storeChanged = false
        package var dryRun = false
        package var store: String = ""

        package var anyFailed: Bool { sources.contains { $0.outcome == .failed } }

        package var json: [String: Any] {
            ["store": store, "dryRun": dryRun, "storeChanged": storeChanged, "sources": sources.map(\.json)]
        }

        package var lines: [String] {
            var lines: [String] = []
            for source in sources {
                let what = source.outcome == .failed ? "FAILED (\(source.reason ?? "?")): \(source.detail ?? "")"
                    : source.outcome == .updated ? (dryRun ? "would update" : "updated") : "unchanged"
                lines.append("\(source.kind.rawValue) \(source.url): \(what)")
                for change in source.changes.prefix(20) { lines.append("  \(change)") }
                if source.changes.count > 20 { lines.append("  and \(source.changes.count - 20) more") }
            }
            lines.append(dryRun ? "dry run: the store \(store) was not changed" : storeChanged ? "the store \(store) was updated (swapped in whole)"
                         : "the store \(store) is unchanged")
            return lines
        }
    }

    /// Why a refresh could not run at all (exit status 2).
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    /// What the store remembers of its refreshes.
    package struct State: Codable, Sendable, Equatable {
        package var validators: [String: TrustFetcher.Conditional] = [:]
        /// When a refresh last ended with no source failed (seconds since 1970).
        package var lastSuccess: Double?
        package var lastRun: Double?
        /// Failures by reason, counted over every run.
        package var failures: [String: Int] = [:]

        /// Where the state of `store` is kept: `.NAME.refresh.json` in the directory that holds it.
        package static func path(store: String) -> String {
            let url = URL(fileURLWithPath: store).standardizedFileURL
            return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).refresh.json").path
        }

        package static func load(store: String) -> State {
            let path = path(store: store)
            guard let bytes = try? BoundedFile.read(path, ceiling: 1 << 20, what: "trust refresh state"),
                  let state = try? JSONDecoder().decode(State.self, from: Data(bytes)) else { return State() }
            return state
        }

        func write(store: String) throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            try PrivateFile.write(Array(try encoder.encode(self)), to: Self.path(store: store), mode: 0o644)
        }
    }

    /// The reasons a failure is counted under (a closed set: a metric's label values).
    package static let failureReasons: Set<String> = Set(TrustFetcher.Failure.Reason.allCases.map(\.rawValue) + ["verification", "wrong-kind", "other"])

    /// At most this many distribution-point CRLs a run (a state has one or two).
    static let maxDistributionPoints = 300

    /// Runs a refresh of `store` from `sources`. `trustedElsewhere`: the host's other trust paths,
    /// whose CSCAs vouch as the store's own do (never written into it).
    /// `timeout`: the most one source may take (its redirects and body included).
    package static func run(_ settings: Settings, store: String, trustedElsewhere: [String], caFile: String?, dryRun: Bool,
                            timeout: Duration = TrustFetcher.Limits.standard.total,
                            now: Double = Date().timeIntervalSince1970) async throws(Problem) -> Report {
        let storeURL = URL(fileURLWithPath: store).standardizedFileURL
        let parent = storeURL.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: storeURL.path, isDirectory: &isDirectory)
        if exists, !isDirectory.boolValue { throw Problem(description: "\(store) is not a directory") }
        guard access(parent.path, W_OK) == 0 || dryRun else {
            throw Problem(description: "\(parent.path) is not writable: the refreshed store is built beside \(store) and swapped in there")
        }
        var state = State.load(store: storeURL.path)
        // The copy the refresh works on, beside the store (same file system: one rename swaps them).
        let staging = parent.appendingPathComponent(".\(storeURL.lastPathComponent).refresh-\(getpid())")
        try? FileManager.default.removeItem(at: staging)
        do {
            if exists {
                try FileManager.default.copyItem(at: storeURL, to: staging)
            } else {
                try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
            }
        } catch {
            throw Problem(description: "cannot make the working copy of \(store) at \(staging.path): \(error.localizedDescription)")
        }
        var keepStaging = false
        defer { if !keepStaging { try? FileManager.default.removeItem(at: staging) } }

        var importer: TrustImport
        do {
            importer = try TrustImport(store: staging.path)
        } catch {
            throw Problem(description: error.description)
        }
        var elsewhere = TrustStore()
        for path in trustedElsewhere where URL(fileURLWithPath: path).standardizedFileURL.path != storeURL.path {
            try? elsewhere.add(path: URL(fileURLWithPath: path))
        }
        importer.trustedElsewhere = elsewhere.certificates

        let fetcher: TrustFetcher
        do {
            var limits = TrustFetcher.Limits.standard
            limits.total = timeout
            limits.maxBytes = BoundedFile.Ceiling.trustFile  // what `trust import` reads of a file
            fetcher = try TrustFetcher(caFile: caFile, userAgent: "gbgbridge/\(GBGBridgeVersion.current) (trust refresh)", limits: limits)
        } catch {
            throw Problem(description: "--ca-file \(caFile ?? ""): \(error)")
        }
        var report = Report(store: storeURL.path)
        report.dryRun = dryRun
        var fetched: [String: Int] = [:]  // URL → index in report.sources

        func fetch(_ source: Source) async {
            var entry = SourceReport(url: source.url, kind: source.kind, outcome: .unchanged)
            let transport: TrustFetcher.Transport = source.kind == .masterList && source.anchors.isEmpty ? .httpsOnly : .httpAllowed
            do {
                switch try await fetcher.fetch(source.url, transport: transport, conditional: state.validators[source.url]) {
                case .notModified(let status):
                    entry.httpStatus = status
                case .fetched(let body, let status, let conditional, _):
                    entry.httpStatus = status
                    entry.bytes = body.count
                    if let problem = Self.wrongKind(body, source.kind) {
                        entry.outcome = .failed
                        entry.reason = "wrong-kind"
                        entry.detail = problem
                    } else {
                        importer.listAnchors = Set(source.anchors.map { $0.uppercased() })
                        importer.add(bytes: body, source: source.url)
                        entry.reason = nil
                        // Validators are kept only once the material is taken (below).
                        if conditional.etag != nil || conditional.lastModified != nil { pendingValidators[source.url] = conditional }
                    }
                }
            } catch {
                entry.outcome = .failed
                entry.reason = error.reason.rawValue
                entry.detail = error.detail
                entry.httpStatus = error.status
            }
            fetched[source.url] = report.sources.count
            report.sources.append(entry)
        }
        var pendingValidators: [String: TrustFetcher.Conditional] = [:]
        for source in settings.sources where fetched[source.url] == nil { await fetch(source) }
        if settings.crlDistributionPoints {
            var urls: [String] = []
            for certificate in importer.storedCertificates + elsewhere.certificates {
                for uri in certificate.crlDistributionURIs where uri.hasPrefix("http") && !urls.contains(uri) && fetched[uri] == nil { urls.append(uri) }
            }
            for url in urls.prefix(maxDistributionPoints) { await fetch(Source(url: url, kind: .crl)) }
        }
        await fetcher.shutdown()

        let committed: TrustImport.Report
        do {
            committed = try importer.commit(dryRun: dryRun, now: now)
        } catch {
            throw Problem(description: error.description)
        }
        // Each source's verdict: refused material fails it, what changed updates it.
        for (file, reason) in committed.refused {
            guard let index = fetched[file] else { continue }
            report.sources[index].outcome = .failed
            report.sources[index].reason = "verification"
            // The working copy's name means nothing to the operator: the store's does.
            report.sources[index].detail = reason.replacingOccurrences(of: staging.path, with: storeURL.path)
        }
        for (source, what) in committed.changes {
            guard let index = fetched[source], report.sources[index].outcome != .failed else { continue }
            report.sources[index].outcome = .updated
            report.sources[index].changes.append(what.replacingOccurrences(of: staging.path, with: storeURL.path))
        }
        for entry in report.sources where entry.outcome != .failed {
            if let validators = pendingValidators[entry.url] { state.validators[entry.url] = validators }
        }
        for entry in report.sources where entry.outcome == .failed {
            let reason = entry.reason.flatMap { failureReasons.contains($0) ? $0 : nil } ?? "other"
            state.failures[reason, default: 0] += 1
        }
        state.lastRun = now
        if !report.anyFailed { state.lastSuccess = now }
        let changed = report.sources.contains { $0.outcome == .updated }
        guard !dryRun else { return report }
        do {
            if changed {
                // The store first, then the state: a crash between them leaves old validators,
                // which only costs a full fetch next time (never a 304 for what was not applied).
                if exists {
                    let result = CFileSwapShim_exchange(staging.path, storeURL.path)
                    guard result == 0 else { throw Problem(description: "cannot swap \(staging.path) and \(store): \(String(cString: strerror(result)))") }
                } else {
                    try FileManager.default.moveItem(at: staging, to: storeURL)
                    keepStaging = true
                }
                report.storeChanged = true
            }
            try state.write(store: storeURL.path)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(description: "cannot write \(store): \(error)")
        }
        return report
    }

    /// Nil when `body` is the kind its source says; else what it is instead.
    static func wrongKind(_ body: [UInt8], _ kind: Source.Kind) -> String? {
        var parsed = TrustStore()
        switch kind {
        case .masterList:
            return TrustStore.isMasterList(body) ? nil : "not a master list (CMS SignedData of a CscaMasterList)"
        case .crl:
            guard (try? parsed.add(bytes: body)) != nil, !parsed.revocationLists.isEmpty else { return "not a CRL" }
            return nil
        case .csca:
            guard (try? parsed.add(bytes: body)) != nil, !parsed.certificates.isEmpty else { return "not a certificate" }
            return nil
        }
    }
}
