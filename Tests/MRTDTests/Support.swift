import TestSupport
import Testing
import SmartCard

/// Bytes from hex in a test (crashes the test on a typo, which is what we want there).
func h(_ text: String) -> [UInt8] {
    guard let value = bytes(hex: text) else { fatalError("bad hex in test: \(text)") }
    return value
}

/// Tests that read `../shared/fixtures` (real-world chip data, not in this repository) run where
/// it exists — on CI and next to the team's checkout — and are skipped, saying why, elsewhere.
extension Trait where Self == ConditionTrait {
    static var needsSharedFixtures: Self {
        .enabled(if: TestFixtures.sharedFixturesAvailable,
                 "needs ../shared/fixtures (real-world chip data, outside this repository)")
    }
}
