import Foundation
import MRTDCrypto

/// A machine-readable zone (ICAO 9303 Parts 4–6): TD1 (3 × 30, ID cards), TD2 (2 × 36) or
/// TD3 (2 × 44, passports), validated character set, lengths and check digits.
///
/// Error messages name the field that is wrong but never repeat the MRZ text.
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

    /// Parses MRZ text: lines separated by line breaks, or the lines run together.
    public init(_ text: String) throws(MRTDError) {
        let cleaned = text.uppercased().replacingOccurrences(of: "\r", with: "")
        var lines = cleaned.split(whereSeparator: { $0 == "\n" }).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        if lines.count == 1 {
            let joined = lines[0]
            switch joined.count {
            case 90: lines = MRZ.chunk(joined, 30)
            case 72: lines = MRZ.chunk(joined, 36)
            case 88: lines = MRZ.chunk(joined, 44)
            default: break
            }
        }
        for line in lines where !line.allSatisfy(MRZ.isMRZCharacter) {
            throw MRTDError(.invalidAccessKey, "the MRZ contains characters other than A–Z, 0–9 and '<'")
        }
        let shape = (lines.count, lines.first?.count ?? 0)
        guard lines.allSatisfy({ $0.count == shape.1 }) else {
            throw MRTDError(.invalidAccessKey, "MRZ lines have different lengths")
        }
        switch shape {
        case (3, 30): try self.init(td1: lines)
        case (2, 36): try self.init(twoLine: lines, format: .td2)
        case (2, 44): try self.init(twoLine: lines, format: .td3)
        default:
            throw MRTDError(.invalidAccessKey,
                            "an MRZ has 3 lines of 30 (TD1), 2 of 36 (TD2) or 2 of 44 (TD3) characters; got \(lines.count) line(s) of \(shape.1)")
        }
        guard !documentNumber.isEmpty, documentNumberCheckDigit != "<" else {
            throw MRTDError(.invalidAccessKey, "the MRZ has no document number")
        }
        guard AccessKey.isDate(dateOfExpiry, allowUnknown: false) else {
            throw MRTDError(.invalidAccessKey, "the MRZ date of expiry is not a valid YYMMDD date")
        }
        guard AccessKey.isDate(dateOfBirth) else {
            throw MRTDError(.invalidAccessKey, "the MRZ date of birth is not a valid YYMMDD date")
        }
    }

    private init(td1 lines: [String]) throws(MRTDError) {
        let l1 = Array(lines[0]), l2 = Array(lines[1]), l3 = Array(lines[2])
        format = .td1
        self.lines = lines
        documentCode = MRZ.field(l1, 0..<2)
        issuingState = MRZ.field(l1, 2..<5)
        let (number, numberCheck, optional1) = try MRZ.fullDocumentNumber(String(l1[5..<14]), check: l1[14],
                                                                         optional: String(l1[15..<30]), format: .td1)
        documentNumber = MRZ.trimFillers(number)
        documentNumberCheckDigit = numberCheck
        optionalData = MRZ.trimFillers(optional1)
        dateOfBirth = String(l2[0..<6])
        sex = String(l2[7])
        dateOfExpiry = String(l2[8..<14])
        nationality = MRZ.field(l2, 15..<18)
        optionalData2 = MRZ.field(l2, 18..<29)
        (primaryIdentifier, secondaryIdentifier) = MRZ.names(String(l3))
        try MRZ.check(number, numberCheck, "document number")
        try MRZ.check(dateOfBirth, l2[6], "date of birth")
        try MRZ.check(dateOfExpiry, l2[14], "date of expiry")
        let composite = String(l1[5..<30]) + String(l2[0..<7]) + String(l2[8..<15]) + String(l2[18..<29])
        try MRZ.check(composite, l2[29], "composite")
    }

    private init(twoLine lines: [String], format: Format) throws(MRTDError) {
        let l1 = Array(lines[0]), l2 = Array(lines[1])
        self.format = format
        self.lines = lines
        documentCode = MRZ.field(l1, 0..<2)
        issuingState = MRZ.field(l1, 2..<5)
        (primaryIdentifier, secondaryIdentifier) = MRZ.names(String(l1[5...]))
        let number = String(l2[0..<9])
        documentNumberCheckDigit = l2[9]
        nationality = MRZ.field(l2, 10..<13)
        dateOfBirth = String(l2[13..<19])
        sex = String(l2[20])
        dateOfExpiry = String(l2[21..<27])
        optionalData2 = ""
        try MRZ.check(dateOfBirth, l2[19], "date of birth")
        try MRZ.check(dateOfExpiry, l2[27], "date of expiry")
        if format == .td3 {
            optionalData = MRZ.trimFillers(String(l2[28..<42]))
            documentNumber = MRZ.trimFillers(number)
            try MRZ.check(number, l2[9], "document number")
            if l2[42] != "<" || l2[28..<42].contains(where: { $0 != "<" }) {
                try MRZ.check(String(l2[28..<42]), l2[42], "optional data")
            }
            try MRZ.check(String(l2[0..<10]) + String(l2[13..<20]) + String(l2[21..<43]), l2[43], "composite")
        } else {
            // TD2 long document numbers continue in the optional data, like TD1.
            let (fullNumber, check, optional) = try MRZ.fullDocumentNumber(number, check: l2[9], optional: String(l2[28..<35]),
                                                                           format: .td2)
            documentNumber = MRZ.trimFillers(fullNumber)
            optionalData = MRZ.trimFillers(optional)
            try MRZ.check(fullNumber, check, "document number")
            try MRZ.check(String(l2[0..<10]) + String(l2[13..<20]) + String(l2[21..<35]), l2[35], "composite")
        }
    }

    // MARK: Helpers

    /// The long-document-number rule of TD1/TD2 (ICAO 9303-5 §4.2.4): when the number field's
    /// check digit is `<`, the number continues at the start of the optional data, followed by
    /// its check digit and a filler. Returns the full number, its check digit, and the rest.
    static func fullDocumentNumber(_ number: String, check: Character, optional: String, format: Format)
        throws(MRTDError) -> (String, Character, String)
    {
        guard check == "<" else { return (number, check, optional) }
        let overflow = optional.prefix { $0 != "<" }
        guard let last = overflow.last, overflow.count >= 2 else {
            throw MRTDError(.invalidAccessKey, "the \(format.rawValue) document number check digit is missing")
        }
        return (number + overflow.dropLast(), last, String(optional.dropFirst(overflow.count)))
    }

    static func isMRZCharacter(_ c: Character) -> Bool {
        c == "<" || ("A"..."Z").contains(c) || ("0"..."9").contains(c)
    }

    static func chunk(_ text: String, _ size: Int) -> [String] {
        let characters = Array(text)
        return stride(from: 0, to: characters.count, by: size).map { String(characters[$0..<min($0 + size, characters.count)]) }
    }

    static func field(_ line: [Character], _ range: Range<Int>) -> String { trimFillers(String(line[range])) }

    static func trimFillers(_ text: String) -> String {
        var result = Substring(text)
        while result.last == "<" { result = result.dropLast() }
        return String(result)
    }

    static func names(_ text: String) -> (String, String) {
        let trimmed = trimFillers(text)
        let parts = trimmed.components(separatedBy: "<<")
        let primary = parts[0].replacingOccurrences(of: "<", with: " ").trimmingCharacters(in: .whitespaces)
        let secondary = parts.dropFirst().joined(separator: " ").replacingOccurrences(of: "<", with: " ")
            .split(separator: " ").joined(separator: " ")
        return (primary, secondary)
    }

    /// The ICAO check digit of `text` (weights 7, 3, 1; `<` = 0, A = 10 … Z = 35).
    public static func checkDigit(_ text: String) -> Character {
        let weights = [7, 3, 1]
        var sum = 0
        for (index, character) in text.enumerated() {
            let value: Int
            switch character {
            case "0"..."9": value = Int(String(character))!
            case "A"..."Z": value = Int(character.asciiValue! - Character("A").asciiValue!) + 10
            default: value = 0
            }
            sum += value * weights[index % 3]
        }
        return Character(String(sum % 10))
    }

    static func check(_ text: String, _ digit: Character, _ field: String) throws(MRTDError) {
        // A filler check digit counts as 0 (ICAO 9303-3 §4.9 allows '<' for an empty field).
        let expected = checkDigit(text)
        let given = digit == "<" ? "0" : digit
        guard given == expected else {
            throw MRTDError(.invalidAccessKey, "the \(field) check digit does not match")
        }
    }

    /// Key information from separate fields: `documentNumber` (any length, fillers added to 9),
    /// dates as YYMMDD.
    public static func keyInformation(documentNumber: String, dateOfBirth: String, dateOfExpiry: String) -> String {
        var number = documentNumber
        while number.count < 9 { number += "<" }
        return number + String(checkDigit(number)) + dateOfBirth + String(checkDigit(dateOfBirth))
            + dateOfExpiry + String(checkDigit(dateOfExpiry))
    }
}

/// The secret a reader proves knowledge of to open a chip: the MRZ key fields or a CAN.
/// `description` never shows the secret.
public enum AccessKey: Sendable, Hashable, CustomStringConvertible {
    case mrz(documentNumber: String, dateOfBirth: String, dateOfExpiry: String)
    case can(String)

    /// The key from separate fields, validated: document number 1–22 of A–Z 0–9 `<`, dates YYMMDD.
    public static func fields(documentNumber: String, dateOfBirth: String, dateOfExpiry: String) throws(MRTDError) -> AccessKey {
        let number = documentNumber.uppercased().replacingOccurrences(of: " ", with: "")
        guard (1...22).contains(number.count), number.allSatisfy(MRZ.isMRZCharacter) else {
            throw MRTDError(.invalidAccessKey, "documentNumber must be 1 to 22 characters A–Z, 0–9 or '<'")
        }
        guard Self.isDate(dateOfBirth) else {
            throw MRTDError(.invalidAccessKey, "dateOfBirth must be YYMMDD")
        }
        guard Self.isDate(dateOfExpiry, allowUnknown: false) else {
            throw MRTDError(.invalidAccessKey, "dateOfExpiry must be YYMMDD")
        }
        return .mrz(documentNumber: MRZ.trimFillers(number), dateOfBirth: dateOfBirth, dateOfExpiry: dateOfExpiry)
    }

    /// The key from a full MRZ text.
    public static func mrz(_ text: String) throws(MRTDError) -> AccessKey {
        let mrz = try MRZ(text)
        return .mrz(documentNumber: mrz.documentNumber, dateOfBirth: mrz.dateOfBirth, dateOfExpiry: mrz.dateOfExpiry)
    }

    /// A card access number: 6 digits (some cards print 8–10).
    public static func cardAccessNumber(_ can: String) throws(MRTDError) -> AccessKey {
        guard (6...10).contains(can.count), can.allSatisfy({ ("0"..."9").contains($0) }) else {
            throw MRTDError(.invalidAccessKey, "can must be 6 to 10 digits")
        }
        return .can(can)
    }

    static func isDate(_ text: String, allowUnknown: Bool = true) -> Bool {
        let chars = Array(text)
        guard chars.count == 6 else { return false }
        if allowUnknown, chars.allSatisfy({ ("0"..."9").contains($0) || $0 == "<" }) {
            if chars.contains("<") { return true }
        }
        guard chars.allSatisfy({ ("0"..."9").contains($0) }),
              let month = Int(String(chars[2..<4])), let day = Int(String(chars[4..<6])) else { return false }
        return (1...12).contains(month) && (1...31).contains(day)
    }

    /// The MRZ key information string (document number, dates and check digits), for `.mrz`.
    public var mrzInformation: String? {
        guard case .mrz(let number, let birth, let expiry) = self else { return nil }
        return MRZ.keyInformation(documentNumber: number, dateOfBirth: birth, dateOfExpiry: expiry)
    }

    /// The PACE password bytes: SHA-1 of the MRZ information, or the CAN digits (ICAO 9303-11 §4.4.3.1).
    public var pacePassword: [UInt8] {
        switch self {
        case .mrz: return DigestAlgorithm.sha1.hash(Array(mrzInformation!.utf8))
        case .can(let can): return Array(can.utf8)
        }
    }

    public var description: String {
        switch self {
        case .mrz: return "AccessKey.mrz(<redacted>)"
        case .can: return "AccessKey.can(<redacted>)"
        }
    }
}
