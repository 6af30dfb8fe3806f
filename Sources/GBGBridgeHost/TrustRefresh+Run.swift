import BoundedFiles
import CFileSwapShim
import Foundation
import MRTD
import MRTDCrypto
import GBGBridgeRead
import TrustFetch

extension TrustRefresh {
    /// At most this many sources are fetched at once.
    static let concurrentFetches = 4
    /// The whole refresh's time bound by default (`--deadline`), well under the packaged unit's
    /// `TimeoutStartSec=30min`.
    package static let defaultDeadline: Duration = .seconds(600)
    /// At most this many sources a configuration may name.
    package static let maxSources = 64

    /// Runs a refresh of `store` from `sources`. `trustedElsewhere`: the host's other trust paths,
    /// whose CSCAs vouch as the store's own do (never written into it). `timeout`: the most one
    /// source may take (its redirects and body included), and how long to wait for another
    /// refresh of the same store; `deadline`: the most the whole refresh may take.
    package static func run(_ settings: Settings, store: String, trustedElsewhere: [String], caFile: String?, dryRun: Bool,
                            timeout: Duration = TrustFetcher.Limits.standard.total, deadline: Duration = defaultDeadline,
                            now: Double = Date().timeIntervalSince1970) async throws(Problem) -> Report {
        let started = ContinuousClock.now
        let until = started + deadline
        let storeURL = URL(fileURLWithPath: store).standardizedFileURL
        let parent = storeURL.deletingLastPathComponent()
        var info = stat()
        let exists = lstat(storeURL.path, &info) == 0
        if exists, info.st_mode & S_IFMT == S_IFLNK {
            throw Problem(description: "\(store) is a symbolic link: refused (the store is opened without following links; name the directory it points to)")
        }
        if exists, info.st_mode & S_IFMT != S_IFDIR { throw Problem(description: "\(store) is not a directory") }
        guard settings.sources.count <= maxSources else {
            throw Problem(description: "\(settings.sources.count) sources: at most \(maxSources) are fetched by one refresh")
        }
        guard access(parent.path, W_OK) == 0 || dryRun else {
            throw Problem(description: "\(parent.path) is not writable: the refreshed store is built beside \(store) and swapped in there")
        }
        // One refresh (or import) of a store at a time: a second waits, then gives up (exit 1).
        let lock = try StoreLock.acquire(store: storeURL.path, until: min(started + timeout, until), shared: dryRun)
        defer { lock.release() }

        var report = Report(store: storeURL.path)
        report.dryRun = dryRun
        if !dryRun { report.leftoversRemoved = StoreLock.removeLeftovers(store: storeURL.path) }
        var (state, stateProblem) = State.loadReporting(store: storeURL.path)
        report.stateProblem = stateProblem

        // The copy the refresh works on, beside the store (same file system: one rename swaps
        // them), made from one consistent read of the store that follows no link.
        let staging = parent.appendingPathComponent(".\(storeURL.lastPathComponent).refresh-\(getpid())")
        try copyStore(from: storeURL.path, exists: exists, to: staging.path)
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
        // mdoc issuers (vical sources) go into the copy's iaca/, apart from the CSCAs.
        var issuers: IACAImport
        do {
            issuers = try IACAImport(store: staging.path)
        } catch {
            throw Problem(description: error.description)
        }

        let fetcher: TrustFetcher
        do {
            var limits = TrustFetcher.Limits.standard
            limits.total = timeout
            limits.maxBytes = BoundedFile.Ceiling.trustFile  // what `trust import` reads of a file
            fetcher = try TrustFetcher(caFile: caFile, userAgent: "gbgbridge/\(GBGBridgeVersion.current) (trust refresh)", limits: limits)
        } catch {
            throw Problem(description: "--ca-file \(caFile ?? ""): \(error)")
        }
        var fetched: [String: Int] = [:]  // URL → index in report.sources
        var pendingValidators: [String: TrustFetcher.Conditional] = [:]

        func apply(_ source: Source, _ result: Result<TrustFetcher.Outcome, TrustFetcher.Failure>, seconds: Double) {
            var entry = SourceReport(url: source.url, kind: source.kind, outcome: .unchanged)
            entry.seconds = seconds
            switch result {
            case .failure(let error):
                entry.outcome = .failed
                entry.reason = error.reason.rawValue
                entry.detail = error.detail
                entry.httpStatus = error.status
            case .success(.notModified(let status)):
                entry.httpStatus = status
            case .success(.fetched(let body, let status, let conditional, _)):
                entry.httpStatus = status
                entry.bytes = body.count
                if let problem = wrongKind(body, source.kind) {
                    (entry.outcome, entry.reason, entry.detail) = (.failed, "wrong-kind", problem)
                } else {
                    importer.listAnchors = Set(source.anchors.map { $0.uppercased() })
                    if source.kind == .vical {
                        issuers.anchors = Set(source.anchors.map { $0.uppercased() })
                        issuers.add(bytes: body, source: source.url)
                        if !conditional.isEmpty { pendingValidators[source.url] = conditional }
                        fetched[source.url] = report.sources.count
                        report.sources.append(entry)
                        return
                    }
                    do {
                        for file in try unpacked(body, kind: source.kind) { importer.add(bytes: file, source: source.url) }
                        // Validators are kept only once the material is taken (below).
                        if !conditional.isEmpty { pendingValidators[source.url] = conditional }
                    } catch {
                        (entry.outcome, entry.reason, entry.detail) = (.failed, error.reason, error.description)
                    }
                }
            }
            fetched[source.url] = report.sources.count
            report.sources.append(entry)
        }

        var configured: [Source] = []
        for source in settings.sources where !configured.contains(where: { $0.url == source.url }) { configured.append(source) }
        for (source, result, seconds) in await fetchAll(configured, fetcher: fetcher, state: state, until: until) {
            apply(source, result, seconds: seconds)
        }
        if settings.crlDistributionPoints {
            var urls: [String] = []
            for certificate in importer.storedCertificates + elsewhere.certificates {
                for uri in certificate.crlDistributionURIs where uri.hasPrefix("http") && !urls.contains(uri) && fetched[uri] == nil { urls.append(uri) }
            }
            let points = urls.prefix(maxDistributionPoints).map { Source(url: $0, kind: .crl) }
            for (source, result, seconds) in await fetchAll(points, fetcher: fetcher, state: state, until: until) {
                apply(source, result, seconds: seconds)
            }
        }

        let committed: TrustImport.Report
        let issuersCommitted: IACAImport.Report
        do {
            committed = try importer.commit(dryRun: dryRun, now: now)
            issuersCommitted = try issuers.commit(dryRun: dryRun)
        } catch {
            throw Problem(description: error.description)
        }
        for (file, reason, code) in issuersCommitted.refused {
            guard let index = fetched[file] else { continue }
            // A VICAL refused whole fails its source; single entries refused are reported with it.
            if reason.hasPrefix("the VICAL") {
                report.sources[index].outcome = .failed
                report.sources[index].reason = code == "unanchored-vical" ? "unanchored-vical" : "verification"
            }
            report.sources[index].detail = reason
        }
        for entry in issuersCommitted.added {
            guard let index = fetched[entry.source], report.sources[index].outcome != .failed else { continue }
            report.sources[index].outcome = .updated
            report.sources[index].changes.append("added IACA \(entry.subject)")
        }
        // Each source's verdict: refused material fails it, what changed updates it.
        for (file, reason, code) in committed.refused {
            guard let index = fetched[file] else { continue }
            report.sources[index].outcome = .failed
            report.sources[index].reason = code == .unanchoredCSCA ? "unanchored-csca" : "verification"
            // The working copy's name means nothing to the operator: the store's does.
            report.sources[index].detail = reason.replacingOccurrences(of: staging.path, with: storeURL.path)
        }
        for (source, what) in committed.changes {
            guard let index = fetched[source], report.sources[index].outcome != .failed else { continue }
            report.sources[index].outcome = .updated
            report.sources[index].changes.append(what.replacingOccurrences(of: staging.path, with: storeURL.path))
        }
        // Validators of the sources fetched this time (a source no longer named is forgotten).
        var validators: [String: TrustFetcher.Conditional] = [:]
        for entry in report.sources {
            if entry.outcome != .failed, let fresh = pendingValidators[entry.url] {
                validators[entry.url] = fresh
            } else if let held = state.validators[entry.url] {
                validators[entry.url] = held
            }
        }
        state.validators = validators
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

    /// Fetches `sources`, at most `concurrentFetches` at once, each bounded by its own time and
    /// by `until`; the results in the sources' order.
    static func fetchAll(_ sources: [Source], fetcher: TrustFetcher, state: State, until: ContinuousClock.Instant) async
        -> [(Source, Result<TrustFetcher.Outcome, TrustFetcher.Failure>, Double)] {
        var results = [(Result<TrustFetcher.Outcome, TrustFetcher.Failure>, Double)?](repeating: nil, count: sources.count)
        await withTaskGroup(of: (Int, Result<TrustFetcher.Outcome, TrustFetcher.Failure>, Double).self) { group in
            var next = 0
            func start() {
                guard next < sources.count else { return }
                let index = next
                let source = sources[index]
                let conditional = state.validators[source.url]
                next += 1
                group.addTask {
                    let began = ContinuousClock.now
                    // A master list only over https unless it is anchored; the rest is verified by
                    // what the store already trusts (or anchored) on arrival, so http may carry it.
                    let transport: TrustFetcher.Transport = source.kind == .masterList && source.anchors.isEmpty ? .httpsOnly : .httpAllowed
                    let result: Result<TrustFetcher.Outcome, TrustFetcher.Failure>
                    if ContinuousClock.now >= until {
                        result = .failure(.init(.timeout, "the refresh's deadline passed before this source could be fetched"))
                    } else {
                        do throws(TrustFetcher.Failure) {
                            result = .success(try await fetcher.fetch(source.url, transport: transport, conditional: conditional, deadline: until))
                        } catch {
                            result = .failure(error)
                        }
                    }
                    let elapsed = ContinuousClock.now - began
                    return (index, result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                }
            }
            for _ in 0..<concurrentFetches { start() }
            for await (index, result, seconds) in group {
                results[index] = (result, seconds)
                start()
            }
        }
        return zip(sources, results).map { source, result in
            (source, result?.0 ?? .failure(.init(.network, "not fetched")), result?.1 ?? 0)
        }
    }

    /// Why unpacking failed, with its reason (`archive`, `wrong-kind`).
    struct UnpackFailure: Error, CustomStringConvertible {
        let reason: String
        let description: String
    }

    /// The trust files in what a source served: the body itself, or a master-list source's ZIP
    /// archive's `.ml` files (unpacked within bounds: ZipArchive).
    static func unpacked(_ body: [UInt8], kind: Source.Kind) throws(UnpackFailure) -> [[UInt8]] {
        guard kind == .masterList, ZipArchive.isZip(body) else { return [body] }
        let entries: [ZipArchive.Entry]
        do {
            entries = try ZipArchive.entries(body) { $0.lowercased().hasSuffix(".ml") }
        } catch {
            throw UnpackFailure(reason: "archive", description: error.description)
        }
        guard !entries.isEmpty else { throw UnpackFailure(reason: "wrong-kind", description: "a ZIP archive holding no .ml master list") }
        for entry in entries where !TrustStore.isMasterList(entry.bytes) {
            throw UnpackFailure(reason: "wrong-kind", description: "\(ZipArchive.printable(entry.name)) in the ZIP archive is not a master list")
        }
        return entries.map(\.bytes)
    }

    /// Copies the store into `target` from one consistent read that follows no link (a store that
    /// is or holds a symbolic link is refused).
    static func copyStore(from store: String, exists: Bool, to target: String) throws(Problem) {
        try? FileManager.default.removeItem(atPath: target)
        do {
            try BoundedFile.makeDirectory(target, mode: 0o755, what: "working copy of the trust store")
            guard exists else { return }
            let snapshot = try DirectorySnapshot.read(store, what: "trust store", fileCeiling: BoundedFile.Ceiling.trustFile,
                                                      totalCeiling: TrustStore.directoryCeiling, symlinks: .refuse)
            for entry in snapshot.entries {
                let relative = String(entry.path.dropFirst(store.count + 1))
                let destination = target + "/" + relative
                let folder = (destination as NSString).deletingLastPathComponent
                try BoundedFile.makeDirectory(folder, mode: 0o755, what: "working copy of the trust store")
                try PrivateFile.write(entry.bytes, to: destination, mode: 0o644)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: target)
            throw Problem(description: "\(error)".replacingOccurrences(of: target, with: store))
        }
    }
}
