import TextSanitizing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A machine-readable zone (ICAO 9303 Parts 4–6): TD1 (3 × 30, ID cards), TD2 (2 × 36) or
/// TD3 (2 × 44, passports), validated character set, lengths and check digits.
///
/// Every character is checked as an ASCII scalar (`ASCII`), so no grapheme cluster can pass for
/// a digit. Error messages name the field that is wrong but never repeat the MRZ text.
public struct MRZ: Sendable, Hashable {
    public enum Format: String, Sendable, Hashable, Codable {
        case td1 = "TD1", td2 = "TD2", td3 = "TD3"
    }

    public let format: Format
    /// The lines, each exactly 30, 36 or 44 characters.
    public let lines: [String]
    public let documentCode: String
    public let issuingState: String
    /// The full document number without fillers (TD1 long numbers included).
    public let documentNumber: String
    public let documentNumberCheckDigit: Character
    /// YYMMDD (may contain `<` for an unknown part).
    public let dateOfBirth: String
    public let sex: String
    /// YYMMDD.
    public let dateOfExpiry: String
    public let nationality: String
    /// Surname(s), fillers turned into spaces.
    public let primaryIdentifier: String
    /// Given names, fillers turned into spaces.
    public let secondaryIdentifier: String
    /// Optional data (TD3: personal number; TD1: line 1 optional data after the number), trimmed.
    public let optionalData: String
    /// TD1 only: line 2 optional data, trimmed.
    public let optionalData2: String

    /// The MRZ as text, lines separated by newlines.
    public var text: String { lines.joined(separator: "\n") }

    /// The input to the BAC / PACE-MRZ key: document number, date of birth and date of expiry,
    /// each followed by its check digit.
    public var keyInformation: String {
        MRZ.keyInformation(documentNumber: documentNumber, dateOfBirth: dateOfBirth, dateOfExpiry: dateOfExpiry)
    }

    typealias Line = [UInt8]

    /// Parses MRZ text: lines separated by line breaks, or the lines run together. ASCII letters
    /// may be lower case; blanks around a line are ignored.
    public init(_ text: String) throws(MRTDError) {
        var lines = try MRZ.lines(of: text)
        if lines.count == 1 {
            switch lines[0].count {
            case 90: lines = MRZ.chunk(lines[0], 30)
            case 72: lines = MRZ.chunk(lines[0], 36)
            case 88: lines = MRZ.chunk(lines[0], 44)
            default: break
            }
        }
        let width = lines.first?.count ?? 0
        guard lines.allSatisfy({ $0.count == width }) else {
            throw MRTDError(.invalidAccessKey, "MRZ lines have different lengths")
        }
        switch (lines.count, width) {
        case (3, 30): try self.init(td1: lines)
        case (2, 36): try self.init(twoLine: lines, format: .td2)
        case (2, 44): try self.init(twoLine: lines, format: .td3)
        default:
            throw MRTDError(.invalidAccessKey,
                            "an MRZ has 3 lines of 30 (TD1), 2 of 36 (TD2) or 2 of 44 (TD3) characters; got \(lines.count) line(s) of \(width)")
        }
        guard !documentNumber.isEmpty, documentNumberCheckDigit != "<" else {
            throw MRTDError(.invalidAccessKey, "the MRZ has no document number")
        }
        guard ASCII.isDate(dateOfExpiry, allowUnknown: false) else {
            throw MRTDError(.invalidAccessKey, "the MRZ date of expiry is not a valid YYMMDD date")
        }
        guard ASCII.isDate(dateOfBirth) else {
            throw MRTDError(.invalidAccessKey, "the MRZ date of birth is not a valid YYMMDD date")
        }
    }

    /// The non-empty lines of `text` as MRZ bytes: split at line feeds, carriage returns dropped,
    /// spaces and tabs around a line trimmed; anything but A–Z, a–z, 0–9 and '<' refused.
    static func lines(of text: String) throws(MRTDError) -> [Line] {
        var lines: [Line] = []
        for rawLine in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            var scalars = rawLine.filter { $0 != "\r" }[...]
            while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
            while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
            guard !scalars.isEmpty else { continue }
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars)
            guard let line = ASCII.mrzBytes(String(view)) else {
                throw MRTDError(.invalidAccessKey, "the MRZ contains characters other than A–Z, 0–9 and '<'")
            }
            lines.append(line)
        }
        return lines
    }

    private init(td1 lines: [Line]) throws(MRTDError) {
        let l1 = lines[0], l2 = lines[1], l3 = lines[2]
        format = .td1
        self.lines = lines.map(ASCII.string)
        documentCode = MRZ.field(l1, 0..<2)
        issuingState = MRZ.field(l1, 2..<5)
        let (number, numberCheck, optional1) = try MRZ.fullDocumentNumber(Array(l1[5..<14]), check: l1[14],
                                                                         optional: Array(l1[15..<30]), format: .td1)
        documentNumber = MRZ.trimFillers(number)
        documentNumberCheckDigit = Character(Unicode.Scalar(numberCheck))
        optionalData = MRZ.trimFillers(optional1)
        dateOfBirth = ASCII.string(l2[0..<6])
        sex = ASCII.string(l2[7..<8])
        dateOfExpiry = ASCII.string(l2[8..<14])
        nationality = MRZ.field(l2, 15..<18)
        optionalData2 = MRZ.field(l2, 18..<29)
        (primaryIdentifier, secondaryIdentifier) = MRZ.names(l3[...])
        try MRZ.check(number[...], numberCheck, "document number")
        try MRZ.check(l2[0..<6], l2[6], "date of birth")
        try MRZ.check(l2[8..<14], l2[14], "date of expiry")
        let composite = Array(l1[5..<30]) + l2[0..<7] + l2[8..<15] + l2[18..<29]
        try MRZ.check(composite[...], l2[29], "composite")
    }

    private init(twoLine lines: [Line], format: Format) throws(MRTDError) {
        let l1 = lines[0], l2 = lines[1]
        self.format = format
        self.lines = lines.map(ASCII.string)
        documentCode = MRZ.field(l1, 0..<2)
        issuingState = MRZ.field(l1, 2..<5)
        (primaryIdentifier, secondaryIdentifier) = MRZ.names(l1[5...])
        let number = Array(l2[0..<9])
        nationality = MRZ.field(l2, 10..<13)
        dateOfBirth = ASCII.string(l2[13..<19])
        sex = ASCII.string(l2[20..<21])
        dateOfExpiry = ASCII.string(l2[21..<27])
        optionalData2 = ""
        try MRZ.check(l2[13..<19], l2[19], "date of birth")
        try MRZ.check(l2[21..<27], l2[27], "date of expiry")
        if format == .td3 {
            documentNumberCheckDigit = Character(Unicode.Scalar(l2[9]))
            optionalData = MRZ.trimFillers(Array(l2[28..<42]))
            documentNumber = MRZ.trimFillers(number)
            try MRZ.check(number[...], l2[9], "document number")
            if l2[42] != ASCII.filler || l2[28..<42].contains(where: { $0 != ASCII.filler }) {
                try MRZ.check(l2[28..<42], l2[42], "optional data")
            }
            try MRZ.check((Array(l2[0..<10]) + l2[13..<20] + l2[21..<43])[...], l2[43], "composite")
        } else {
            // TD2 long document numbers continue in the optional data, like TD1.
            let (fullNumber, check, optional) = try MRZ.fullDocumentNumber(number, check: l2[9], optional: Array(l2[28..<35]),
                                                                           format: .td2)
            documentNumberCheckDigit = Character(Unicode.Scalar(check))
            documentNumber = MRZ.trimFillers(fullNumber)
            optionalData = MRZ.trimFillers(optional)
            try MRZ.check(fullNumber[...], check, "document number")
            try MRZ.check((Array(l2[0..<10]) + l2[13..<20] + l2[21..<35])[...], l2[35], "composite")
        }
    }

    // MARK: Helpers

    /// The long-document-number rule of TD1/TD2 (ICAO 9303-5 §4.2.4): when the number field's
    /// check digit is `<`, the number continues at the start of the optional data, followed by
    /// its check digit and a filler. Returns the full number, its check digit, and the rest.
    static func fullDocumentNumber(_ number: Line, check: UInt8, optional: Line, format: Format)
        throws(MRTDError) -> (Line, UInt8, Line)
    {
        guard check == ASCII.filler else { return (number, check, optional) }
        let overflow = optional.prefix { $0 != ASCII.filler }
        guard let last = overflow.last, overflow.count >= 2 else {
            throw MRTDError(.invalidAccessKey, "the \(format.rawValue) document number check digit is missing")
        }
        return (number + overflow.dropLast(), last, Array(optional.dropFirst(overflow.count)))
    }

    static func chunk(_ line: Line, _ size: Int) -> [Line] {
        stride(from: 0, to: line.count, by: size).map { Array(line[$0..<min($0 + size, line.count)]) }
    }

    static func field(_ line: Line, _ range: Range<Int>) -> String { trimFillers(Array(line[range])) }

    static func trimFillers(_ bytes: Line) -> String {
        var end = bytes.count
        while end > 0, bytes[end - 1] == ASCII.filler { end -= 1 }
        return ASCII.string(bytes[0..<end])
    }

    static func trimFillers(_ text: String) -> String {
        var result = Substring(text)
        while result.unicodeScalars.last == "<" { result = Substring(result.unicodeScalars.dropLast()) }
        return String(result)
    }

    static func names(_ bytes: ArraySlice<UInt8>) -> (String, String) {
        let trimmed = trimFillers(Array(bytes))
        let parts = trimmed.split(separator: "<<", omittingEmptySubsequences: false)
        let primary = (parts.first ?? "").replacing("<", with: " ").trimmingWhitespace()
        let secondary = parts.dropFirst().joined(separator: " ").replacing("<", with: " ")
            .split(separator: " ").joined(separator: " ")
        return (primary, secondary)
    }

    /// The ICAO check digit value of MRZ bytes (weights 7, 3, 1; `<` = 0, 0–9, A = 10 … Z = 35;
    /// anything else counts as 0).
    static func checkValue(_ bytes: some Sequence<UInt8>) -> UInt8 {
        let weights = [7, 3, 1]
        var sum = 0
        for (index, byte) in bytes.enumerated() {
            let value: Int
            if ASCII.isDigit(byte) {
                value = Int(byte - 0x30)
            } else if ASCII.isUpper(byte) {
                value = Int(byte - 0x41) + 10
            } else {
                value = 0
            }
            sum += value * weights[index % 3]
        }
        return UInt8(0x30 + sum % 10)
    }

    /// The ICAO check digit of `text` (weights 7, 3, 1; `<` = 0, A = 10 … Z = 35). Any scalar
    /// outside A–Z and 0–9 counts as 0, so the result is defined for every text.
    public static func checkDigit(_ text: String) -> Character {
        let bytes = text.unicodeScalars.map { ASCII.byte($0) ?? ASCII.filler }
        return Character(Unicode.Scalar(checkValue(bytes)))
    }

    static func check(_ bytes: ArraySlice<UInt8>, _ digit: UInt8, _ field: String) throws(MRTDError) {
        // A filler check digit counts as 0 (ICAO 9303-3 §4.9 allows '<' for an empty field).
        let given = digit == ASCII.filler ? 0x30 : digit
        guard given == checkValue(bytes) else {
            throw MRTDError(.invalidAccessKey, "the \(field) check digit does not match")
        }
    }

    /// Key information from separate fields: `documentNumber` (any length, fillers added to 9),
    /// dates as YYMMDD.
    package static func keyInformation(documentNumber: String, dateOfBirth: String, dateOfExpiry: String) -> String {
        var number = documentNumber
        while number.unicodeScalars.count < 9 { number += "<" }
        return number + String(checkDigit(number)) + dateOfBirth + String(checkDigit(dateOfBirth))
            + dateOfExpiry + String(checkDigit(dateOfExpiry))
    }
}
