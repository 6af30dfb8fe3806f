import CBORCoding

/// Dates of ISO 18013-5: tdate (`#6.0(tstr)`, RFC 3339 date-time) and full-date (`#6.1004(tstr)`
/// or a bare tstr, RFC 3339 full-date), as seconds since 1970 (UTC).
public enum MdocTime {
    /// Seconds since 1970 of an RFC 3339 date-time (`2024-01-31T12:00:00Z`, fractions and offsets allowed).
    public static func seconds(dateTime text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40, let date = days(bytes[0..<10]), bytes[10] == 0x54 || bytes[10] == 0x74,
              bytes[13] == 0x3A, bytes[16] == 0x3A,
              let hour = number(bytes[11..<13]), let minute = number(bytes[14..<16]), let second = number(bytes[17..<19]),
              hour < 24, minute < 60, second <= 60 else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == 0x2E {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 0x5A, 0x7A:
            guard index + 1 == bytes.count else { return nil }
        case 0x2B, 0x2D:
            guard index + 6 == bytes.count, bytes[index + 3] == 0x3A, let hours = number(bytes[(index + 1)..<(index + 3)]),
                  let minutes = number(bytes[(index + 4)..<(index + 6)]), hours < 24, minutes < 60 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[index] == 0x2B ? 1 : -1)
        default: return nil
        }
        return Double(date * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }

    /// Days since 1970 of `YYYY-MM-DD`.
    public static func days(fullDate text: String) -> Int? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10 else { return nil }
        return days(bytes[0..<10])
    }

    static func days(_ bytes: ArraySlice<UInt8>) -> Int? {
        let start = bytes.startIndex
        guard bytes[start + 4] == 0x2D, bytes[start + 7] == 0x2D, let year = number(bytes[start..<(start + 4)]),
              let month = number(bytes[(start + 5)..<(start + 7)]), let day = number(bytes[(start + 8)..<(start + 10)]),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            value = value * 10 + Int(digit - 0x30)
        }
        return value
    }

    /// A tdate item's seconds (tag 0 around text; a bare text accepted).
    static func seconds(_ item: CBOR?, _ what: String) throws(MdocError) -> Double {
        var text: String?
        switch item {
        case .tagged(0, .text(let value))?: text = value
        case .text(let value)?: text = value
        default: text = nil
        }
        guard let text, let seconds = seconds(dateTime: text) else { throw .malformed("\(what) is not an RFC 3339 date-time (tdate)") }
        return seconds
    }

    /// `2024-01-31T12:00:00Z` for seconds since 1970.
    public static func dateTime(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        var days = whole / 86_400
        var rest = whole % 86_400
        if rest < 0 { rest += 86_400; days -= 1 }
        return "\(fullDate(days: days))T\(pad(rest / 3600)):\(pad(rest / 60 % 60)):\(pad(rest % 60))Z"
    }

    /// `YYYY-MM-DD` of days since 1970.
    public static func fullDate(days: Int) -> String {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return "\(String(year).leftPadded(4))-\(pad(month))-\(pad(day))"
    }

    static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
