/// A 128-bit Bluetooth UUID, as the DeviceEngagement carries it (16 bytes, big-endian) and as
/// BlueZ names it (`0000xxxx-a123-…`, lower case).
public struct BLEUUID: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Nil unless `bytes` is 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// A UUID this code spells out: 16 bytes (padded or cut, never failing).
    init(fixed bytes: [UInt8]) {
        self.bytes = Array((bytes + [UInt8](repeating: 0, count: 16)).prefix(16))
    }

    /// From the textual form `8-4-4-4-12` hex digits, either case; nil otherwise.
    public init?(_ text: String) {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
        var bytes: [UInt8] = []
        let digits = Array(groups.joined().utf8)
        var index = 0
        while index < digits.count {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Lower-case `8-4-4-4-12`, as BlueZ reports UUIDs.
    public var description: String {
        let hex = bytes.map { byte -> String in
            let text = String(byte, radix: 16)
            return text.count == 1 ? "0" + text : text
        }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
    }
}
