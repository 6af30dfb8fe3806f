/// Checks of text from outside (a journey, the command line, a chip) made on Unicode scalars in
/// the ASCII range, never on `Character`s: a `Character` is a grapheme cluster, and `"0\u{301}"`
/// (a digit with a combining accent) lies within `"0"..."9"` as a `Character` while it is not a
/// digit. Everything the MRZ, CAN and date logic sees has passed through here first.
package enum ASCII {
    package static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    package static func isUpper(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }
    package static func isLower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
    package static let filler: UInt8 = 0x3C  // '<'

    /// Whether `byte` is one of the MRZ's characters: A–Z, 0–9, '<'.
    package static func isMRZ(_ byte: UInt8) -> Bool { isUpper(byte) || isDigit(byte) || byte == filler }

    /// The ASCII byte of `scalar`, or `nil` for anything outside U+0000…U+007F.
    package static func byte(_ scalar: Unicode.Scalar) -> UInt8? {
        scalar.isASCII ? UInt8(truncatingIfNeeded: scalar.value) : nil
    }

    /// `text` as MRZ bytes: ASCII letters upper-cased, then every scalar must be A–Z, 0–9 or '<';
    /// `nil` otherwise (combining marks, variation selectors, full-width digits, controls …).
    package static func mrzBytes(_ text: some StringProtocol) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            guard var byte = byte(scalar) else { return nil }
            if isLower(byte) { byte -= 0x20 }
            guard isMRZ(byte) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// `text` as ASCII digits, `nil` when any scalar is not 0–9.
    package static func digitBytes(_ text: some StringProtocol) -> [UInt8]? {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            guard let byte = byte(scalar), isDigit(byte) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// The value of ASCII digits (at most 18 of them), `nil` for anything else.
    package static func number(_ digits: some Collection<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value = 0
        for byte in digits {
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// The value of a text of ASCII digits, `nil` for anything else.
    package static func number(_ text: some StringProtocol) -> Int? {
        digitBytes(text).flatMap { number($0) }
    }

    /// Bytes known to be ASCII, as a `String`.
    package static func string(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `text` is YYMMDD with a month 01–12 and a day 01–31; with `allowUnknown`, a date
    /// with unknown parts ('<', ICAO 9303-3 §4.6) passes too.
    package static func isDate(_ text: some StringProtocol, allowUnknown: Bool = true) -> Bool {
        guard let bytes = mrzBytes(text), bytes.count == 6 else { return false }
        if bytes.allSatisfy(isDigit) {
            guard let month = number(bytes[2..<4]), let day = number(bytes[4..<6]) else { return false }
            return (1...12).contains(month) && (1...31).contains(day)
        }
        return allowUnknown && bytes.allSatisfy { isDigit($0) || $0 == filler }
    }
}
