import TestSupport
import Testing
import SmartCard

/// Bytes from hex in a test (crashes the test on a typo, which is what we want there).
func h(_ text: String) -> [UInt8] {
    guard let value = bytes(hex: text) else { fatalError("bad hex in test: \(text)") }
    return value
}

