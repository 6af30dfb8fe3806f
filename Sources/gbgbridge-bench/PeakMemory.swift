import ChildProcesses
import Foundation
import MRTD
import MRTDEmulator
import SmartCard
import TestSupport

/// Peak resident memory of the `gbgbridge` command (the binary built next to this benchmark)
/// reading a chip through pcscd + vpcd, as a kiosk runs it: one process, one read.
///
/// For each chip the read is started before the card is there, so that while it waits the
/// process's resident set can be split into file-backed pages (the code of the Swift runtime,
/// Foundation, OpenSSL, pcsc-lite, libnfc and our own, mapped from disk and shared with every
/// other process using them) and anonymous memory (heap and stacks: what is ours alone). Then the
/// card goes in, the read runs, and the peak is the kernel's high-water mark of the process's own
/// address space (`VmHWM`), sampled until it exits. (`ru_maxrss` from wait4 is no use here: a child
/// started with vfork/posix_spawn inherits the *parent's* high-water mark at exec, so it would report
/// this benchmark's own size.)
enum PeakMemory {
    struct Chip {
        var name: String
        var passport: EmulatedPassport
        var accessArguments: [String]
        var extraArguments: [String] = []
    }

    struct Figures {
        var waiting: ResidentSet?
        /// The last reading before the process exited: how the peak splits into code and heap.
        var last: ResidentSet?
        var peakKiB: Int
        var apdus: Int
        var exitStatus: Int32
    }

    /// `/proc/PID/status`: VmRSS, RssAnon, RssFile and VmHWM in KiB.
    struct ResidentSet {
        var total: Int
        var anonymous: Int
        var file: Int
        var highWaterMark: Int

        init?(pid: pid_t) {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
            func field(_ name: String) -> Int? {
                status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                    .flatMap { Int($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") }
            }
            guard let total = field("VmRSS"), let anonymous = field("RssAnon"), let file = field("RssFile"),
                  let highWaterMark = field("VmHWM") else { return nil }
            self.highWaterMark = highWaterMark
            self.total = total
            self.anonymous = anonymous
            self.file = file
        }
    }

    /// The `gbgbridge` executable built beside this benchmark, when there is one.
    static var executable: String? {
        guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let path = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("gbgbridge").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    static func measure(_ chip: Chip, executable: String) async throws -> Figures {
        let harness = PCSCDHarness.shared
        guard await harness.ensureRunning() else {
            throw RigUnavailable(description: "pcscd with vpcd is required: \(await harness.unavailableReason ?? "unknown reason")")
        }
        return try await harness.withExclusiveReaders {
            let virtualChip = VirtualPassportChip(passport: chip.passport)
            let child = try ChildProcess(executable: executable, arguments: ["read", "--reader", PCSCDHarness.vpcdReaderName,
                                                                            "--timeout", "30"] + chip.accessArguments + chip.extraArguments)
            // Let it start and settle into waiting for the card.
            try await Task.sleep(for: .seconds(1.5))
            let waiting = ResidentSet(pid: child.pid)
            let client = VPCDClient(chip: virtualChip, port: PCSCDHarness.vpcdPort)
            client.start()
            defer { client.stop() }
            let deadline = ContinuousClock.now + .seconds(60)
            var peak = waiting?.highWaterMark ?? 0
            var last = waiting
            while child.isRunning {
                if ContinuousClock.now > deadline {
                    await child.terminate()
                    throw RigUnavailable(description: "gbgbridge read did not finish within 60 s")
                }
                // VmHWM only grows; the last reading before exit is the peak (to within the last 2 ms).
                if let now = ResidentSet(pid: child.pid) {
                    peak = max(peak, now.highWaterMark)
                    last = now
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            return Figures(waiting: waiting, last: last, peakKiB: peak, apdus: virtualChip.statistics.apdus,
                           exitStatus: child.exitStatus ?? -1)
        }
    }

    static func mebibytes(_ kib: Int) -> String { String(format: "%.1f", Double(kib) / 1024) }

    /// Measures each binary (by default the `gbgbridge` built beside this benchmark) on each chip.
    static func run(binaries: [String], chips: [Chip]) async {
        print("")
        print("Peak memory of one `gbgbridge read` process through pcscd + vpcd (waiting = before the card is there;")
        print("code/file = pages mapped from the binary and its libraries, shared and reclaimable; heap/anon = ours alone)")
        let executables = binaries.isEmpty ? [executable].compactMap { $0 } : binaries
        guard !executables.isEmpty else {
            print("skipped: no gbgbridge next to this benchmark — build it first: swift build -c release --product gbgbridge")
            return
        }
        for executable in executables {
            guard FileManager.default.isExecutableFile(atPath: executable) else {
                print("skipped: \(executable) is not an executable file")
                continue
            }
            print(executable)
            print("chip                                    APDUs  exit  waiting MiB  code/file  heap/anon  peak MiB  code/file  heap/anon")
            do {
                for chip in chips {
                    let figures = try await measure(chip, executable: executable)
                    let waiting = figures.waiting
                    func column(_ value: Int?, _ width: Int) -> String {
                        let text = value.map(mebibytes) ?? "?"
                        return String(repeating: " ", count: max(0, width - text.count)) + text
                    }
                    print(chip.name.padding(toLength: 38, withPad: " ", startingAt: 0)
                          + String(format: "  %5d  %4d", figures.apdus, figures.exitStatus)
                          + "  " + column(waiting?.total, 11) + "  " + column(waiting?.file, 9) + "  " + column(waiting?.anonymous, 9)
                          + "  " + column(figures.peakKiB, 8) + "  " + column(figures.last?.file, 9)
                          + "  " + column(figures.last?.anonymous, 9))
                }
            } catch {
                print("skipped: \(error)")
            }
        }
    }
}
