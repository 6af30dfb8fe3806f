import Foundation

/// Where `demo` and `emulate` find the sample journey, the virtual passports and field profiles,
/// and the test PKI and CV certificates (all test-only): the first of
///
/// 1. `$GBGBRIDGE_DATA` (a directory laid out as `Fixtures/` is),
/// 2. `Fixtures/` in the working directory (a checkout),
/// 3. `Fixtures/` above the executable (`.build/<configuration>/gbgbridge` in a checkout),
/// 4. `../share/gbgbridge` beside the executable (`/usr/bin` → `/usr/share/gbgbridge`: the package),
/// 5. `/usr/share/gbgbridge`
///
/// that holds the file asked for.
package enum KitData {
    /// The places looked in, in order (those that do not exist included, for messages).
    package static func directories(environment: [String: String] = ProcessInfo.processInfo.environment,
                                    workingDirectory: String = FileManager.default.currentDirectoryPath,
                                    executable: String = CommandLine.arguments.first ?? "") -> [URL] {
        var places: [URL] = []
        if let data = environment["GBGBRIDGE_DATA"], !data.isEmpty { places.append(URL(fileURLWithPath: data)) }
        places.append(URL(fileURLWithPath: workingDirectory).appendingPathComponent("Fixtures"))
        if !executable.isEmpty {
            let bin = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
            places.append(bin.appendingPathComponent("../../../Fixtures").standardizedFileURL)
            places.append(bin.appendingPathComponent("../../Fixtures").standardizedFileURL)
            places.append(bin.appendingPathComponent("../share/gbgbridge").standardizedFileURL)
        }
        places.append(URL(fileURLWithPath: "/usr/share/gbgbridge"))
        var seen = Set<String>()
        return places.filter { seen.insert($0.path).inserted }
    }

    /// `relative` (`journey`, `pki/ds.cert.pem`, `passports/field/de-passport-2023.json` …) in the
    /// first place that has it.
    package static func url(_ relative: String) -> URL? {
        directories().map { $0.appendingPathComponent(relative) }.first { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// The places, for `--help` and for a message saying what was not found.
    package static var searchedText: String {
        "$GBGBRIDGE_DATA, ./Fixtures, the checkout above the executable, /usr/share/gbgbridge"
    }
}
