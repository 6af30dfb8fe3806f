#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// JSON on standard output (sorted keys, pretty, slashes as they are) for `--json`.
package func printJSON(_ value: some Encodable) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    if let data = try? encoder.encode(value) {
        print(String(decoding: data, as: UTF8.self))
    }
}

/// One line on standard error, written whole (a short write is continued; EINTR retried).
package func printError(_ message: String) {
    writeStandardError(message + "\n")
}

/// `text` to standard error as it is (the progress bar's carriage returns included).
package func writeStandardError(_ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
        if written > 0 {
            offset += written
        } else if written < 0 && errno == EINTR {
            continue
        } else {
            return  // stderr closed or full: nothing else to tell it
        }
    }
}
