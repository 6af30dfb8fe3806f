import TestSupport
import Testing

/// Tests that read `../shared/fixtures` (real-world chip data, not in this repository) run where
/// it exists — on CI and next to the team's checkout — and are skipped, saying why, elsewhere.
extension Trait where Self == ConditionTrait {
    public static var needsSharedFixtures: Self {
        .enabled(if: TestFixtures.sharedFixturesAvailable,
                 "needs ../shared/fixtures (real-world chip data, outside this repository)")
    }
}
