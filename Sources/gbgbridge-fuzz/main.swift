// gbgbridge-fuzz: the parsers strangers feed (FuzzTargets), under libFuzzer or replayed.
//
// Built by scripts/fuzz.sh with `-sanitize=fuzzer,address -D FUZZING -parse-as-library`: libFuzzer
// drives `LLVMFuzzerTestOneInput`, the target named by GBGBRIDGE_FUZZ_TARGET. Built as usual
// (`swift build`), it replays files through a target, lists the targets, or writes seed corpora:
//   gbgbridge-fuzz list
//   gbgbridge-fuzz replay TARGET FILE…
//   gbgbridge-fuzz seeds DIR        (a corpus per target, from Fixtures and ../shared/fixtures)
import Foundation
import FuzzTargets

#if FUZZING
nonisolated(unsafe) var selected: FuzzTarget?

/// libFuzzer's driver (libclang_rt.fuzzer), entered from this executable's own entry point:
/// SwiftPM names an executable's `main` after its module and points `main` at it.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
               _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@_cdecl("gbgbridge_fuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in testOneInput(data, size) }
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    let name = ProcessInfo.processInfo.environment["GBGBRIDGE_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget.named(name) else {
        FileHandle.standardError.write(Data("gbgbridge-fuzz: set GBGBRIDGE_FUZZ_TARGET to one of \(FuzzTarget.all.map(\.name).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    selected = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let selected else { return 0 }
    selected.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}
#else
@main
struct FuzzReplay {
    static func main() throws {
        let arguments = CommandLine.arguments
        switch arguments.dropFirst().first {
        case "list":
            for target in FuzzTarget.all { print("\(target.name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(target.summary)") }
        case "replay":
            guard arguments.count >= 3, let target = FuzzTarget.named(arguments[2]) else {
                print("usage: gbgbridge-fuzz replay TARGET FILE…  (targets: gbgbridge-fuzz list)")
                exit(2)
            }
            for path in arguments.dropFirst(3) {
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
                target.run(bytes)
                print("\(target.name) \(path): \(bytes.count) bytes, no crash")
            }
        case "seeds":
            guard arguments.count >= 3 else { print("usage: gbgbridge-fuzz seeds DIR"); exit(2) }
            let written = try FuzzSeeds.write(to: URL(fileURLWithPath: arguments[2]))
            print("seeds: \(written.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))")
        default:
            print("usage: gbgbridge-fuzz list | replay TARGET FILE… | seeds DIR")
            exit(2)
        }
    }
}
#endif
