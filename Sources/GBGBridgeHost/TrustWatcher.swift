import CoreMetrics
import Dispatch
import Foundation
import GBGBridgeMdoc
import GBGBridgeNFC
import MdocRead
import Logging
import MRTD

/// `serve` picks up a trust store that changed under it — `trust refresh` swapping in a new one,
/// `trust import` adding to it — without a restart (issue 45): the trust paths are looked at every
/// `interval` (the swapped directory is a new inode; an import changes the directory), and at once
/// on SIGHUP. A changed store is loaded off the main actor and handed to the reader service, which
/// gives each read the store it started with: never one mid-read. What changed is logged (countries,
/// CSCAs, CRLs); the refresh state's figures go to the metrics.
@MainActor
package final class TrustWatcher {
    package static let interval: Duration = .seconds(2)
    private let paths: [String]
    private let nfc: NFCReadService
    /// mdoc.read, whose IACAs (the stores' iaca/) are reloaded with the CSCAs.
    package weak var mdoc: MdocReadService?
    private let logger: Logger
    private var fingerprint: [String]
    /// The refresh states' marks (kept beside the stores): a refresh that changed nothing still
    /// moves the metrics (its failures, its last success).
    private var stateFingerprint: [String]
    private var task: Task<Void, Never>?
    private var hangup: (any DispatchSourceSignal)?
    private var failuresSeen: [String: Int] = [:]
    /// Reloads so far (tests).
    package private(set) var reloads = 0
    /// What the last reload that was refused could not read (logged once).
    private var lastProblems: [String] = []

    package init(paths: [String], nfc: NFCReadService, logger: Logger) {
        self.paths = paths
        self.nfc = nfc
        self.logger = logger
        fingerprint = Self.fingerprint(paths)
        stateFingerprint = Self.stateFingerprint(paths)
        for path in paths { failuresSeen.merge(TrustRefresh.State.load(store: path).failures) { max($0, $1) } }
    }

    /// Starts watching (and listening for SIGHUP).
    package func start() {
        Self.recordRefreshMetrics(paths: paths, failuresSeen: &failuresSeen, trust: nfc.trustStore)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .main)
        signal(SIGHUP, SIG_IGN)
        source.setEventHandler { [weak self] in
            MainActor.assumeIsolated { self?.reload(reason: "SIGHUP") }
        }
        source.resume()
        hangup = source
        task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.interval)
                guard let self else { return }
                let now = Self.fingerprint(self.paths)
                if now != self.fingerprint {
                    self.reload(reason: "the trust store changed")
                } else {
                    let states = Self.stateFingerprint(self.paths)
                    if states != self.stateFingerprint {
                        self.stateFingerprint = states
                        Self.recordRefreshMetrics(paths: self.paths, failuresSeen: &self.failuresSeen, trust: self.nfc.trustStore)
                    }
                }
            }
        }
    }

    package func stop() {
        task?.cancel()
        hangup?.cancel()
    }

    /// What identifies the paths' present contents: each path's inode and modification time, and
    /// its entries' (one level down: the store is flat, `trust import` and `trust refresh` write
    /// files into it).
    nonisolated static func fingerprint(_ paths: [String]) -> [String] {
        var marks: [String] = []
        func mark(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { marks.append("\(path):-"); return }
            marks.append("\(path):\(info.st_ino):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec):\(info.st_size)")
        }
        for path in paths {
            mark(path)
            for entry in ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().prefix(10_000) {
                mark(URL(fileURLWithPath: path).appendingPathComponent(entry).path)
            }
        }
        return marks
    }

    nonisolated static func stateFingerprint(_ paths: [String]) -> [String] {
        paths.map { path in
            var info = stat()
            let file = TrustRefresh.State.path(store: path)
            guard stat(file, &info) == 0 else { return "\(file):-" }
            return "\(file):\(info.st_ino):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec):\(info.st_size)"
        }
    }

    /// Loads the store again (off the main actor) and hands it to the reader service.
    package func reload(reason: String) {
        fingerprint = Self.fingerprint(paths)
        stateFingerprint = Self.stateFingerprint(paths)
        let paths = self.paths
        Task { [weak self] in
            let (store, problems, issuers) = await Task.detached { () -> (TrustStore, [String], MdocTrust) in
                let (store, problems) = DoctorChecks.loadTrust(paths)
                return (store, problems, MdocTrust(storePaths: paths))
            }.value
            guard let self else { return }
            if let mdoc = self.mdoc, issuers.anchors.count != mdoc.trust.anchors.count || issuers.anchors.map(\.keyIdentity) != mdoc.trust.anchors.map(\.keyIdentity) {
                mdoc.trust = issuers
                self.logger.notice("mdoc IACAs reloaded (\(reason)): \(issuers.anchors.count)")
            }
            let before = self.nfc.trustStore
            // A path that cannot be read whole now (a store swapped again and again under the
            // reader, a permission changed) never replaces the store in use by part of one: the
            // one loaded before stays, and the next look tries again (said once per problem).
            if !problems.isEmpty, self.reloads > 0 || !before.isEmpty {
                self.fingerprint = []
                if problems != self.lastProblems {
                    self.logger.warning("trust store not reloaded (\(reason)): \(problems.joined(separator: "; ")); the store loaded before (\(before.certificates.count) CSCAs, \(before.revocationLists.count) CRLs) stays in use")
                    self.lastProblems = problems
                }
                return
            }
            self.lastProblems = []
            self.nfc.trustStore = store
            self.reloads += 1
            let countries = { (trust: TrustStore) in Set(trust.certificates.compactMap { $0.country?.uppercased() }).count }
            self.logger.notice("trust store reloaded (\(reason)): \(store.certificates.count) CSCAs from \(countries(store)) countries, \(store.revocationLists.count) CRLs (were \(before.certificates.count), \(countries(before)), \(before.revocationLists.count))\(problems.isEmpty ? "" : "; \(problems.count) unreadable")")
            Self.recordRefreshMetrics(paths: paths, failuresSeen: &self.failuresSeen, trust: store)
        }
    }

    /// `gbgbridge_trust_refresh_last_success_timestamp_seconds`, `gbgbridge_trust_refresh_failures_total{reason}`
    /// (from the stores' refresh state: counted on as it grows) and each country's CRL
    /// `nextUpdate` (`gbgbridge_trust_crl_next_update_timestamp_seconds{country}`).
    static func recordRefreshMetrics(paths: [String], failuresSeen: inout [String: Int], trust: TrustStore) {
        var unreadable = 0
        for path in paths {
            let (state, problem) = TrustRefresh.State.loadReporting(store: path)
            if problem != nil { unreadable += 1 }
            if let success = state.lastSuccess { Gauge(label: "gbgbridge_trust_refresh_last_success_timestamp_seconds").record(success) }
            for (reason, count) in state.failures where TrustRefresh.failureReasons.contains(reason) {
                let delta = count - (failuresSeen[reason] ?? 0)
                if delta > 0 { Counter(label: "gbgbridge_trust_refresh_failures_total", dimensions: [("reason", reason)]).increment(by: delta) }
                failuresSeen[reason] = max(failuresSeen[reason] ?? 0, count)
            }
        }
        // 1 while a refresh state beside a store cannot be read (its figures above are then unknown).
        Gauge(label: "gbgbridge_trust_refresh_state_unreadable").record(Double(unreadable))
        var byCountry: [String: Double] = [:]
        for crl in trust.revocationLists {
            guard let due = crl.nextUpdate else { continue }
            let country = crl.issuer.split(separator: ",").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("C=") }
                .map { String($0.trimmingCharacters(in: .whitespaces).dropFirst(2)) } ?? "XX"
            let label = TrustImport.safe(country)
            byCountry[label] = min(byCountry[label] ?? .infinity, due)
        }
        for (country, due) in byCountry.prefix(300) {
            Gauge(label: "gbgbridge_trust_crl_next_update_timestamp_seconds", dimensions: [("country", country)]).record(due)
        }
        if let due = trust.revocationLists.compactMap(\.nextUpdate).min() {
            Gauge(label: "gbgbridge_crl_next_update_timestamp_seconds").record(due)
        }
    }
}
