import MRTD

extension ReadOptions {
    /// The read's deadline in tests that are not about it (a test of the deadline sets its own).
    /// The deadline is wall-clock time, and the full suite runs dozens of in-process reads at once
    /// on two cores: a read that takes a second alone took 50–60 s there and hit the product's
    /// 60 s default. Ten minutes is nfc.read's own upper bound.
    public static let testDeadline: Duration = .seconds(600)

    /// `ReadOptions(…)` with `testDeadline`.
    public static func forTest(dataGroups: [Int]? = nil, verifyPassive: Bool = true, verifyChip: Bool = true, verifyActive: Bool = true,
                               trustStore: TrustStore = TrustStore(), accessControl: AccessControlPreference = .automatic,
                               trace: APDUTrace? = nil) -> ReadOptions {
        var options = ReadOptions(dataGroups: dataGroups, verifyPassive: verifyPassive, verifyChip: verifyChip, verifyActive: verifyActive,
                                  trustStore: trustStore, accessControl: accessControl, trace: trace)
        options.readTimeout = testDeadline
        return options
    }
}
