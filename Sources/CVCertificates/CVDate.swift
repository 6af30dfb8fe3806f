import TextSanitizing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A date of a CV certificate: six unpacked BCD digits YYMMDD (each byte 0…9), 20YY.
public struct CVDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// `YYMMDD`; `nil` when it is not a calendar date.
    public init?(_ yymmdd: String) {
        let digits = yymmdd.unicodeScalars.compactMap { $0.isASCII && ("0"..."9").contains($0) ? UInt8($0.value - 48) : nil }
        guard digits.count == 6, yymmdd.unicodeScalars.count == 6 else { return nil }
        self.init(bytes: digits)
    }

    init?(bytes: [UInt8]) {
        guard bytes.count == 6, bytes.allSatisfy({ $0 <= 9 }) else { return nil }
        year = 2000 + Int(bytes[0]) * 10 + Int(bytes[1])
        month = Int(bytes[2]) * 10 + Int(bytes[3])
        day = Int(bytes[4]) * 10 + Int(bytes[5])
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        guard (1...12).contains(month), (1...31).contains(day), let date = calendar.date(from: components),
              calendar.component(.day, from: date) == day else { return nil }
    }

    /// The date a moment falls on (UTC).
    public init(_ date: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        year = parts.year ?? 2000
        month = parts.month ?? 1
        day = parts.day ?? 1
    }

    /// The start of the day (UTC), as a moment.
    public var date: Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        return calendar.date(from: DateComponents(year: year, month: month, day: day)) ?? Date(timeIntervalSince1970: 0)
    }

    /// The six value bytes.
    public var bytes: [UInt8] {
        let yy = year % 100
        return [UInt8(yy / 10), UInt8(yy % 10), UInt8(month / 10), UInt8(month % 10), UInt8(day / 10), UInt8(day % 10)]
    }

    public var description: String {
        Formatting.decimal(year, width: 4) + "-" + Formatting.decimal(month, width: 2) + "-" + Formatting.decimal(day, width: 2)
    }

    public static func < (lhs: CVDate, rhs: CVDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }
}
