import CGBGBridgeCLI
import Foundation

// A program that crashes on purpose, linked like `gbgbridge` (CGBGBridgeCLI's start-up sets the
// crash backtracer's settings), so a test can look at a real crash report: it must show the
// message and the frames, and neither registers, memory nor a secret the program held.
CGBGBridgeCLI_line_buffer_stdout()
let marker = CommandLine.arguments.dropFirst().first ?? "GBGBRIDGE-SECRET-MARKER"
let held = Array(repeating: marker, count: 64).joined(separator: "|")
print("holding \(held.utf8.count) bytes; SWIFT_BACKTRACE=\(ProcessInfo.processInfo.environment["SWIFT_BACKTRACE"] ?? "")")
withExtendedLifetime(held) {
    fatalError("crash probe: a deliberate crash")  // trap: this program exists to crash
}
