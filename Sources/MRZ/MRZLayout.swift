/// The machine-readable zones of ICAO Doc 9303: where each field sits, what characters it may hold
/// and which check digit covers it (Part 3 §4.9 for the check digits; Part 4 for TD3, Part 5 for
/// TD1, Part 6 for TD2, Part 7 for the visas MRV-A and MRV-B).
public enum MRZFormat: String, Sendable, Hashable, Codable, CaseIterable {
    case td1 = "TD1", td2 = "TD2", td3 = "TD3", mrvA = "MRV-A", mrvB = "MRV-B"

    public var lineCount: Int { self == .td1 ? 3 : 2 }
    public var lineLength: Int {
        switch self {
        case .td1: return 30
        case .td2, .mrvB: return 36
        case .td3, .mrvA: return 44
        }
    }

    /// The formats with `lines` lines of `length` characters.
    static func candidates(lines: Int, length: Int) -> [MRZFormat] {
        allCases.filter { $0.lineCount == lines && $0.lineLength == length }
    }
}

/// What a position of the MRZ may hold.
package enum MRZCharacterClass: Sendable, Hashable {
    /// 0–9 only: dates, check digits.
    case digit
    /// 0–9 or `<`: a date of birth with an unknown part, a check digit that may be a filler.
    case digitOrFiller
    /// A–Z or `<`: names, states, the document code's second letter.
    case letterOrFiller
    /// A–Z: the document code's first letter.
    case letter
    /// A–Z, 0–9 or `<`: document numbers and optional data.
    case any
    /// M, F, X or `<`.
    case sex

    func allows(_ glyph: MRZGlyph) -> Bool {
        switch self {
        case .digit: return glyph.isDigit
        case .digitOrFiller: return glyph.isDigit || glyph == .filler
        case .letterOrFiller: return glyph.isLetter || glyph == .filler
        case .letter: return glyph.isLetter
        case .any: return true
        case .sex: return [MRZGlyph("M"), MRZGlyph("F"), MRZGlyph("X"), .filler].contains(glyph)
        }
    }
}

/// One of the 37 characters an MRZ is written with: 0–9, A–Z and the filler `<`.
public struct MRZGlyph: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// 0–9 for digits, 10–35 for A–Z, 36 for `<`.
    public let index: Int

    public static let count = 37
    public static let filler = MRZGlyph(index: 36)
    public static let all = (0..<count).map(MRZGlyph.init(index:))

    public init(index: Int) { self.index = index }

    /// The glyph for an MRZ character; a character outside the set gives the filler.
    public init(_ character: Character) {
        guard let ascii = character.asciiValue else { self.index = 36; return }
        switch ascii {
        case 0x30...0x39: index = Int(ascii - 0x30)
        case 0x41...0x5A: index = Int(ascii - 0x41) + 10
        default: index = 36
        }
    }

    public var character: Character {
        switch index {
        case 0..<10: return Character(Unicode.Scalar(UInt8(0x30 + index)))
        case 10..<36: return Character(Unicode.Scalar(UInt8(0x41 + index - 10)))
        default: return "<"
        }
    }

    public var isDigit: Bool { index < 10 }
    public var isLetter: Bool { index >= 10 && index < 36 }

    /// The value ICAO 9303-3 §4.9 gives it in a check digit: digits their value, A = 10 … Z = 35, `<` = 0.
    public var checkValue: Int { index == 36 ? 0 : index }

    public var description: String { String(character) }
    public static func < (a: MRZGlyph, b: MRZGlyph) -> Bool { a.index < b.index }
}

/// The 7-3-1 check digit of ICAO 9303-3 §4.9.
public enum MRZCheckDigit {
    public static let weights = [7, 3, 1]

    public static func value(_ glyphs: some Sequence<MRZGlyph>) -> Int {
        var sum = 0
        for (offset, glyph) in glyphs.enumerated() { sum += glyph.checkValue * weights[offset % 3] }
        return sum % 10
    }
}

/// A field of an MRZ: where it is and what it holds.
struct MRZField: Sendable {
    enum Name: String, Sendable, CaseIterable {
        case documentCode, issuingState, names, documentNumber, documentNumberCheck, nationality, dateOfBirth, dateOfBirthCheck,
             sex, dateOfExpiry, dateOfExpiryCheck, optionalData, optionalDataCheck, optionalData2, composite
    }

    let name: Name
    let line: Int
    let range: Range<Int>
    let kind: MRZCharacterClass

    init(_ name: Name, _ line: Int, _ range: Range<Int>, _ kind: MRZCharacterClass) {
        self.name = name
        self.line = line
        self.range = range
        self.kind = kind
    }
}

/// Where each format keeps its fields.
package enum MRZLayout {
    static func fields(_ format: MRZFormat) -> [MRZField] {
        switch format {
        case .td1:
            return [
                MRZField(.documentCode, 0, 0..<2, .letterOrFiller), MRZField(.issuingState, 0, 2..<5, .letterOrFiller),
                MRZField(.documentNumber, 0, 5..<14, .any), MRZField(.documentNumberCheck, 0, 14..<15, .digitOrFiller),
                MRZField(.optionalData, 0, 15..<30, .any),
                MRZField(.dateOfBirth, 1, 0..<6, .digitOrFiller), MRZField(.dateOfBirthCheck, 1, 6..<7, .digit),
                MRZField(.sex, 1, 7..<8, .sex), MRZField(.dateOfExpiry, 1, 8..<14, .digit), MRZField(.dateOfExpiryCheck, 1, 14..<15, .digit),
                MRZField(.nationality, 1, 15..<18, .letterOrFiller), MRZField(.optionalData2, 1, 18..<29, .any),
                MRZField(.composite, 1, 29..<30, .digit), MRZField(.names, 2, 0..<30, .letterOrFiller),
            ]
        case .td2, .td3, .mrvA, .mrvB:
            let length = format.lineLength
            var fields = [
                MRZField(.documentCode, 0, 0..<2, .letterOrFiller), MRZField(.issuingState, 0, 2..<5, .letterOrFiller),
                MRZField(.names, 0, 5..<length, .letterOrFiller),
                MRZField(.documentNumber, 1, 0..<9, .any),
                MRZField(.documentNumberCheck, 1, 9..<10, format == .td2 ? .digitOrFiller : .digit),
                MRZField(.nationality, 1, 10..<13, .letterOrFiller), MRZField(.dateOfBirth, 1, 13..<19, .digitOrFiller),
                MRZField(.dateOfBirthCheck, 1, 19..<20, .digit), MRZField(.sex, 1, 20..<21, .sex),
                MRZField(.dateOfExpiry, 1, 21..<27, .digit), MRZField(.dateOfExpiryCheck, 1, 27..<28, .digit),
            ]
            switch format {
            case .td3:
                fields += [MRZField(.optionalData, 1, 28..<42, .any), MRZField(.optionalDataCheck, 1, 42..<43, .digitOrFiller),
                           MRZField(.composite, 1, 43..<44, .digit)]
            case .td2:
                fields += [MRZField(.optionalData, 1, 28..<35, .any), MRZField(.composite, 1, 35..<36, .digit)]
            default:
                fields.append(MRZField(.optionalData, 1, 28..<length, .any))
            }
            return fields
        }
    }

    /// The class of every position, line by line.
    package static func classes(_ format: MRZFormat) -> [[MRZCharacterClass]] {
        var classes = Array(repeating: Array(repeating: MRZCharacterClass.any, count: format.lineLength), count: format.lineCount)
        for field in fields(format) {
            for position in field.range { classes[field.line][position] = field.kind }
        }
        classes[0][0] = .letter
        return classes
    }
}
