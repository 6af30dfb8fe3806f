// Soak benchmark (not a test):
//   swift run -c release gbgbridge-soak [--pages N] [--seconds S] [--queries-per-read K] [--rate R]
// Runs a real BridgeServer on loopback with nfc.read on the in-process emulator and stub cameras;
// N pages (real WebSockets, one thread each) loop: K capability.query, then one nfc.read, each page
// at most R requests a second (default 50, below the server's per-page limit of 200, which would
// otherwise pace the pages and be measured instead of the host). Prints,
// every 10 s and at the end: requests served, p50/p99 latency per action, errors, open file
// descriptors and resident memory. Goals: RSS flat (< 10 % growth over 10 minutes), zero errors,
// p99 capability.query < 5 ms.

import CGBGBridgeCLI
import Foundation
import GBGBridge
import GBGBridgeHost
import GBGBridgeNFC
import GBGBridgeServer
import Logging
import MRTD
import MRTDEmulator
import Synchronization
import TestSupport

struct Options {
    var pages = 8
    var seconds = 60
    var queriesPerRead = 20
    var rate = 50

    init(_ arguments: [String]) {
        func value(_ name: String) -> Int? { arguments.firstIndex(of: name).flatMap { Int(arguments[$0 + 1]) } }
        pages = max(1, value("--pages") ?? pages)
        seconds = max(1, value("--seconds") ?? seconds)
        queriesPerRead = max(1, value("--queries-per-read") ?? queriesPerRead)
        rate = max(1, value("--rate") ?? rate)
    }
}

/// What the pages saw, per action.
final class Tally: Sendable {
    struct Counts {
        var latencies: [String: [Double]] = [:]   // milliseconds
        var served: [String: Int] = [:]
        var busy = 0                                // nfc.read answered BUSY while another page read: expected
        var errors: [String] = []
    }
    private let counts = Mutex(Counts())

    func record(_ action: String, milliseconds: Double) {
        counts.withLock {
            $0.latencies[action, default: []].append(milliseconds)
            $0.served[action, default: 0] += 1
        }
    }
    func busy() { counts.withLock { $0.busy += 1 } }
    func error(_ text: String) { counts.withLock { $0.errors.append(text) } }

    /// Takes the latencies gathered since the last call (the totals keep counting).
    func drain() -> Counts {
        counts.withLock { counts in
            defer { counts.latencies = [:] }
            return counts
        }
    }
}

/// Latencies counted in fixed 10 µs buckets up to 10 s (allocated once, so the soak's own memory
/// does not grow with the number of requests it measures).
struct Histogram {
    static let bucketWidth = 0.01  // ms
    private(set) var counts = [Int](repeating: 0, count: 1_000_000)
    private(set) var total = 0

    mutating func add(_ milliseconds: Double) {
        counts[min(counts.count - 1, max(0, Int(milliseconds / Self.bucketWidth)))] += 1
        total += 1
    }

    mutating func add(_ values: [Double]) { values.forEach { add($0) } }

    func percentile(_ p: Double) -> Double {
        guard total > 0 else { return 0 }
        let rank = max(1, Int((Double(total) * p).rounded(.up)))
        var seen = 0
        for (index, count) in counts.enumerated() where count > 0 {
            seen += count
            if seen >= rank { return Double(index + 1) * Self.bucketWidth }
        }
        return Double(counts.count) * Self.bucketWidth
    }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

func residentMegabytes() -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
}

func openDescriptors() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}

/// One page: queries and reads in a loop until `deadline`.
func runPage(_ index: Int, port: Int, token: String, options: Options, deadline: Date, tally: Tally) {
    let key = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#
    let page: RawWebSocket
    do {
        page = try RawWebSocket(port: port, path: "/gbg-bridge/ws?token=\(token)", origin: "ws://127.0.0.1", timeout: 15)
    } catch {
        tally.error("page \(index) could not connect: \(error)")
        return
    }
    var sequence = 0
    let interval = Duration.nanoseconds(1_000_000_000 / Int64(options.rate))
    var next = ContinuousClock.now
    while Date() < deadline {
        for step in 0...options.queriesPerRead {
            sequence += 1
            next += interval
            let wait = next - ContinuousClock.now
            if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.attoseconds) / 1e18 + Double(wait.components.seconds)) }
            let read = step == options.queriesPerRead
            let action = read ? "nfc.read" : "capability.query"
            let id = "p\(index)-\(sequence)"
            let data = read ? #"{"accessKey":\#(key),"dataGroups":["DG1","DG2"],"timeoutSeconds":5}"# : nil
            let dataPart = data.map { #","data":\#($0)"# } ?? ""
            let started = ContinuousClock.now
            guard page.sendText(#"{"version":"1.0","correlationId":"\#(id)","type":"request","timestamp":0,"payload":{"action":"\#(action)"\#(dataPart)}}"#),
                  let response = page.response(to: id), let payload = response["payload"] as? [String: Any] else {
                tally.error("page \(index): no answer to \(action)")
                return
            }
            let elapsed = ContinuousClock.now - started
            let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            let status = payload["status"] as? String
            let code = (payload["error"] as? [String: Any])?["code"] as? String
            if status == "success" {
                tally.record(action, milliseconds: milliseconds)
            } else if read, code == BridgeErrorCode.busy.rawValue {
                tally.busy()
            } else {
                tally.error("page \(index): \(action) answered \(status ?? "?") \(code ?? "")")
            }
        }
    }
}

func report(_ label: String, _ counts: Tally.Counts, elapsed: Double) {
    var line = String(format: "%@ %6.0f s", label, elapsed)
    for action in ["capability.query", "nfc.read"] {
        let values = counts.latencies[action] ?? []
        line += String(format: "  %@ %d served, p50 %.2f ms, p99 %.2f ms", action, counts.served[action] ?? 0,
                       percentile(values, 0.5), percentile(values, 0.99))
    }
    line += String(format: "  busy %d  errors %d  fds %d  RSS %.1f MB", counts.busy, counts.errors.count, openDescriptors(),
                   residentMegabytes())
    print(line)
}

let options = Options(CommandLine.arguments)
CGBGBridgeCLI_line_buffer_stdout()
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
let nfc = await MainActor.run { NFCReadService(backend: EmulatedReaderBackend(chip: chip), trustStore: TestFixtures.testTrustStore) }
await nfc.refreshReaders()
var configuration = BridgeServerConfiguration()
configuration.port = 0
configuration.maxConnections = max(16, options.pages)
configuration.maxOpenConnections = max(128, options.pages * 2)
configuration.allowedOrigins = ["ws://127.0.0.1"]
configuration.bridge = BridgeConfiguration(hostVersion: "soak", capabilities: [:])
// The pages get what `gbgbridge serve` gives them (the metrics system is not bootstrapped here).
let services = await MainActor.run { HostServices(nfc: nfc, countsRequests: false) }
let server = try BridgeServer(configuration: configuration, logger: Logger(label: "soak.server"),
                              setUpHost: { services.setUp($0) }, tearDownHost: { services.tearDown($0) })
let serving = Task { try await server.run() }
var boundPort = server.port
while boundPort == nil {
    try await Task.sleep(for: .milliseconds(10))
    boundPort = server.port
}
let port = boundPort ?? 0

print("soak: \(options.pages) pages for \(options.seconds) s, \(options.queriesPerRead) capability.query per nfc.read, \(options.rate) requests/s per page, port \(port)")
let startRSS = residentMegabytes()
let startFDs = openDescriptors()
print(String(format: "start: fds %d  RSS %.1f MB", startFDs, startRSS))
let tally = Tally()
let started = Date()
let deadline = started.addingTimeInterval(TimeInterval(options.seconds))
let running = Mutex(options.pages)
for index in 0..<options.pages {
    let token = server.token
    Thread.detachNewThread {
        runPage(index, port: port, token: token, options: options, deadline: deadline, tally: tally)
        running.withLock { $0 -= 1 }
    }
}
var all = Tally.Counts()
var histograms = ["capability.query": Histogram(), "nfc.read": Histogram()]
var earlyRSS: Double?
// The pages run on threads of their own; the hosts need the main actor, so wait without blocking it.
func waitForPages(upTo seconds: Int) async -> Bool {
    for _ in 0..<(seconds * 10) {
        if running.withLock({ $0 }) == 0 { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return running.withLock { $0 } == 0
}
while !(await waitForPages(upTo: 10)) {
    let window = tally.drain()
    for (action, values) in window.latencies { histograms[action]?.add(values) }
    report("      ", window, elapsed: Date().timeIntervalSince(started))
    // Warm-up: the first tenth of the run (at least 10 s), while every page's message log fills up.
    if earlyRSS == nil, Date().timeIntervalSince(started) >= max(10, Double(options.seconds) / 10) { earlyRSS = residentMegabytes() }
}
let last = tally.drain()
for (action, values) in last.latencies { histograms[action]?.add(values) }
all.served = last.served
all.busy = last.busy
all.errors = last.errors
print("")
var summary = String(format: "total  %6.0f s", Date().timeIntervalSince(started))
for action in ["capability.query", "nfc.read"] {
    let histogram = histograms[action] ?? Histogram()
    summary += String(format: "  %@ %d served, p50 %.2f ms, p99 %.2f ms", action, all.served[action] ?? 0,
                      histogram.percentile(0.5), histogram.percentile(0.99))
}
summary += String(format: "  busy %d  errors %d", all.busy, all.errors.count)
print(summary)
let endRSS = residentMegabytes()
let warm = earlyRSS ?? startRSS
print(String(format: "RSS: start %.1f MB, after warm-up %.1f MB, end %.1f MB (%+.1f %% since warm-up); fds: start %d, end %d",
             startRSS, warm, endRSS, (endRSS - warm) / warm * 100, startFDs, openDescriptors()))
for error in all.errors.prefix(10) { print("error: \(error)") }
let p99 = histograms["capability.query"]?.percentile(0.99) ?? 0
print("goals: errors \(all.errors.isEmpty ? "0 ✓" : "\(all.errors.count) ✗"), p99 capability.query \(String(format: "%.2f", p99)) ms \(p99 < 5 ? "✓" : "✗"), RSS growth \((endRSS - warm) / warm < 0.10 ? "< 10 % ✓" : "≥ 10 % ✗")")
await server.shutdown()
_ = try? await serving.value
