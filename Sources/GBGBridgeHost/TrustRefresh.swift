import BoundedFiles
import CFileSwapShim
import Foundation
import Mdoc
import MRTD
import MRTDCrypto
import GBGBridgeRead
import TrustFetch
@_exported import HostConfiguration

/// `gbgbridge trust refresh` (issue 45): the configured sources fetched as a careful client
/// (`TrustFetcher`), verified exactly as `trust import` verifies (`TrustImport`, the same code),
/// written into a copy of the store beside it, and swapped in with one rename
/// (`renameat2(RENAME_EXCHANGE)`). A source that fails — network, size, signature, parse — leaves
/// what it would have replaced untouched and is reported; nothing is ever deleted because a source
/// was unreachable. What each run did is kept beside the store, in `.NAME.refresh.json` (the
/// conditional-request validators, the last success, failures by reason), which `serve`,
/// `doctor` and /diagnostics read: outside it, so that a run that changes nothing leaves every
/// file of the store byte for byte as it was.
extension TrustRefresh {
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
        /// How long the fetch took (seconds).
        package var seconds: Double?

        package var json: [String: Any] {
            var object: [String: Any] = ["url": url, "kind": kind.rawValue, "outcome": outcome.rawValue, "changes": changes]
            if let reason { object["reason"] = reason }
            if let detail { object["detail"] = detail }
            if let httpStatus { object["httpStatus"] = httpStatus }
            if let bytes { object["bytes"] = bytes }
            if let seconds { object["seconds"] = (seconds * 1000).rounded() / 1000 }
            return object
        }
    }

    package struct Report: Sendable {
        package var sources: [SourceReport] = []
        package var storeChanged = false
        package var dryRun = false
        package var store: String = ""
        /// What was wrong with the state file beside the store, when it could not be read.
        package var stateProblem: String?
        /// Working copies of killed runs removed before this one.
        package var leftoversRemoved: [String] = []

        package var anyFailed: Bool { sources.contains { $0.outcome == .failed } }

        package var json: [String: Any] {
            var object: [String: Any] = ["store": store, "dryRun": dryRun, "storeChanged": storeChanged, "sources": sources.map(\.json)]
            if let stateProblem { object["stateProblem"] = stateProblem }
            if !leftoversRemoved.isEmpty { object["leftoversRemoved"] = leftoversRemoved }
            return object
        }

        package var lines: [String] {
            var lines: [String] = []
            if let stateProblem { lines.append("note: the refresh state could not be read: \(stateProblem)") }
            for leftover in leftoversRemoved { lines.append("note: removed \(leftover), the working copy of a refresh that did not finish") }
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

    /// Why a refresh could not run at all: exit status 2 (usage, a store that cannot be written),
    /// or 1 (another refresh holds the store).
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
        package var exitStatus: Int32 = 2
        package init(description: String, exitStatus: Int32 = 2) { (self.description, self.exitStatus) = (description, exitStatus) }
    }

    /// What the store remembers of its refreshes.
    package struct State: Codable, Sendable, Equatable {
        package var validators: [String: TrustFetcher.Conditional] = [:]
        /// When a refresh last ended with no source failed (seconds since 1970).
        package var lastSuccess: Double?
        package var lastRun: Double?
        /// Failures by reason, counted over every run.
        package var failures: [String: Int] = [:]

        /// The most the state file may be: it is read within this ceiling, and written within it.
        package static let ceiling = 1 << 20

        /// Where the state of `store` is kept: `.NAME.refresh.json` in the directory that holds it.
        package static func path(store: String) -> String {
            let url = URL(fileURLWithPath: store).standardizedFileURL
            return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).refresh.json").path
        }

        /// The state, and what was wrong with the file when it could not be read (never silently
        /// empty: `doctor`, the metrics and the next refresh report it). No file is no problem.
        package static func loadReporting(store: String) -> (state: State, problem: String?) {
            let path = path(store: store)
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.read(path, ceiling: ceiling, what: "trust refresh state")
            } catch {
                if case .cannotOpen(let code) = error.problem, code == ENOENT { return (State(), nil) }
                return (State(), error.description)
            }
            do {
                return (try JSONDecoder().decode(State.self, from: Data(bytes)), nil)
            } catch {
                return (State(), "\(path) is not a refresh state (\(bytes.count) bytes that do not decode): the next refresh writes a new one")
            }
        }

        package static func load(store: String) -> State { loadReporting(store: store).state }

        /// The state as written: validators for URLs no longer fetched are dropped, and while the
        /// file would pass its ceiling the longest validators go first (a full fetch next time).
        func encoded() throws -> [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            var state = self
            var bytes = Array(try encoder.encode(state))
            while bytes.count > Self.ceiling, let longest = state.validators.max(by: {
                ($0.value.etag?.count ?? 0) + ($0.value.lastModified?.count ?? 0) + $0.key.count
                    < ($1.value.etag?.count ?? 0) + ($1.value.lastModified?.count ?? 0) + $1.key.count }) {
                state.validators[longest.key] = nil
                bytes = Array(try encoder.encode(state))
            }
            return bytes
        }

        func write(store: String) throws {
            try PrivateFile.write(try encoded(), to: Self.path(store: store), mode: 0o644)
        }
    }

    /// The reasons a failure is counted under (a closed set: a metric's label values).
    package static let failureReasons: Set<String> = Set(TrustFetcher.Failure.Reason.allCases.map(\.rawValue)
                                                          + ["verification", "unanchored-csca", "unanchored-vical", "wrong-kind", "archive", "other"])

    /// At most this many distribution-point CRLs a run (a state has one or two).
    static let maxDistributionPoints = 300

    /// Nil when `body` is the kind its source says; else what it is instead.
    static func wrongKind(_ body: [UInt8], _ kind: Source.Kind) -> String? {
        var parsed = TrustStore()
        switch kind {
        case .masterList:
            return TrustStore.isMasterList(body) || ZipArchive.isZip(body) ? nil : "not a master list (CMS SignedData of a CscaMasterList, or a ZIP archive holding one)"
        case .crl:
            guard (try? parsed.add(bytes: body)) != nil, !parsed.revocationLists.isEmpty else { return "not a CRL" }
            return nil
        case .csca:
            guard (try? parsed.add(bytes: body)) != nil, !parsed.certificates.isEmpty else { return "not a certificate" }
            return nil
        case .vical:
            return VICAL.looksLikeVICAL(body) && (try? VICAL(bytes: body)) != nil ? nil : "not a VICAL (a COSE_Sign1 over a list of IACA certificates)"
        }
    }
}
