/// SplitMix64: the generator behind the MRZ corpus of the benchmark, the lab and the tests, so
/// that the same seed makes the same pages and photographs in all three (a false accept the
/// benchmark reports can be made again in a test from its seed).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public var state: UInt64

    /// The benchmark's and the lab's seeding: `seed` plus SplitMix64's gamma.
    public init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    /// A generator whose state is `state` (the tests' seeding).
    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Photographer.Conditions {
    /// A tier of the benchmark by name: `scan`, `hard`, anything else `kiosk`.
    public init(tier: String) {
        switch tier {
        case "scan": self = .scan
        case "hard": self = .hard
        case "small": self = .small
        case "tiny": self = .tiny
        case "overprint": self = .overprint
        default: self = .kiosk
        }
    }
}
