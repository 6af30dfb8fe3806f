import Foundation
import MRZ

/// A made-up document's MRZ with every check digit right: TD1, TD2, TD3, MRV-A or MRV-B, random
/// names, numbers, states, dates and optional data from a seeded generator (so a corpus is the
/// same on every machine).
public struct MRZSample: Sendable, Hashable, Codable {
    public var format: MRZFormat
    public var lines: [String]
    public var documentNumber: String
    public var dateOfBirth: String
    public var dateOfExpiry: String

    public var text: String { lines.joined(separator: "\n") }

    static let surnames = ["ERIKSSON", "MUSTERMANN", "GARCIA", "NGUYEN", "OBRIEN", "SMITH", "KOWALSKI", "VAN DER BERG", "DUBOIS",
                           "ROSSI", "OKONKWO", "TANAKA", "SILVA", "HANSEN", "MUELLER", "PAPADOPOULOS", "O CONNOR", "LI", "WU",
                           "ABDULLAH", "JOHANSSON", "GONZALEZ RODRIGUEZ", "KIM", "NOVAK", "MEYER", "QUIXOTE", "XAVIER", "ZHANG"]
    static let givenNames = ["ANNA MARIA", "ERIKA", "JOSE LUIS", "THI MAI", "SEAN", "JOHN", "PIOTR", "JAN WILLEM", "MARIE CLAIRE",
                             "GIULIA", "CHIOMA", "YUKI", "JOAO PEDRO", "KRISTIAN", "HANS GEORG", "ELENI", "AOIFE", "WEI", "QING",
                             "FATIMA", "SVEN", "MARIA DEL CARMEN", "MIN JUN", "PETRA", "KLAUS", "ZOE", "GQ", "OLGA"]
    static let states = ["UTO", "D<<", "GBR", "FRA", "NLD", "USA", "CAN", "AUS", "JPN", "ESP", "ITA", "POL", "SWE", "IRL", "BEL",
                         "AUT", "CHE", "NOR", "FIN", "DNK", "PRT", "GRC", "CZE", "NZL", "KOR", "BRA", "MEX", "IND", "ZAF", "XXA"]

    /// `numberAlphabet`: the document number's nine characters drawn from it instead (the
    /// benchmark's `zeros` tier: numbers of `0`s and `O`s, as honest as any).
    public init(format: MRZFormat, generator: inout some RandomNumberGenerator, numberAlphabet: String? = nil) {
        self.format = format
        func pick<T>(_ array: [T]) -> T { array[Int.random(in: 0..<array.count, using: &generator)] }
        func characters(_ count: Int, from alphabet: String) -> String {
            let set = Array(alphabet)
            return String((0..<count).map { _ in set[Int.random(in: 0..<set.count, using: &generator)] })
        }
        func date(years: ClosedRange<Int>) -> String {
            let year = Int.random(in: years, using: &generator) % 100
            let month = Int.random(in: 1...12, using: &generator), day = Int.random(in: 1...28, using: &generator)
            return [year, month, day].map { $0 < 10 ? "0\($0)" : "\($0)" }.joined()
        }
        func padded(_ text: String, _ length: Int) -> String {
            String((text + String(repeating: "<", count: max(0, length))).prefix(length))
        }
        func check(_ text: String) -> String { String(MRZCheckDigit.value(text.map(MRZGlyph.init))) }
        let alphanumeric = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        // Numbers: letters and digits mixed as real documents mix them (C01X00T47, L898902C3 …).
        let letters = Int.random(in: 0...2, using: &generator)
        let drawn = characters(letters, from: "ABCDEFGHIJKLMNOPQRSTUVWXYZ") + characters(9 - letters, from: letters == 0 ? "0123456789" : alphanumeric)
        let number9 = numberAlphabet.map { alphabet in
            // A letter first, as numbers start (never a filler), then the alphabet's characters.
            characters(1, from: "ABCDEFGHJKLMNPRSTUVWXYZ") + characters(8, from: alphabet)
        } ?? drawn
        let birth = date(years: 1930...2019), expiry = date(years: 2024...2040)
        let sex = pick(["M", "F", "<", "X"])
        let state = pick(Self.states), nationality = pick(Self.states)
        let surname = pick(Self.surnames).replacingOccurrences(of: " ", with: "<")
        let given = pick(Self.givenNames).replacingOccurrences(of: " ", with: "<")
        let hasOptional = Int.random(in: 0..<2, using: &generator) == 0
        documentNumber = number9
        dateOfBirth = birth
        dateOfExpiry = expiry
        switch format {
        case .td1:
            let code = pick(["I<", "ID", "AC", "IR", "C<"])
            let optional1 = padded(hasOptional ? characters(Int.random(in: 3...12, using: &generator), from: alphanumeric) : "", 15)
            let optional2 = padded(hasOptional ? characters(Int.random(in: 0...9, using: &generator), from: alphanumeric) : "", 11)
            let line1 = code + state + number9 + check(number9) + optional1
            let line2Head = birth + check(birth) + sex + expiry + check(expiry) + nationality + optional2
            let composite = check(String(line1.dropFirst(5)) + birth + check(birth) + expiry + check(expiry) + optional2)
            let line3 = padded(surname + "<<" + given, 30)
            lines = [line1, line2Head + composite, line3]
        case .td2, .td3, .mrvA, .mrvB:
            let length = format.lineLength
            let code: String = switch format {
            case .td3: pick(["P<", "PP", "PD", "PO"])
            case .td2: pick(["I<", "ID", "AC", "C<"])
            default: pick(["V<", "VI", "VT"])
            }
            let line1 = code + state + padded(surname + "<<" + given, length - 5)
            var line2 = number9 + check(number9) + nationality + birth + check(birth) + sex + expiry + check(expiry)
            switch format {
            case .td3:
                let optional = padded(hasOptional ? characters(Int.random(in: 4...14, using: &generator), from: alphanumeric) : "", 14)
                let optionalCheck = optional.allSatisfy { $0 == "<" } ? "<" : check(optional)
                line2 += optional + optionalCheck
                line2 += check(String(line2.prefix(10)) + String(line2.dropFirst(13).prefix(7)) + String(line2.dropFirst(21).prefix(22)))
            case .td2:
                let optional = padded(hasOptional ? characters(Int.random(in: 1...7, using: &generator), from: alphanumeric) : "", 7)
                line2 += optional
                line2 += check(String(line2.prefix(10)) + String(line2.dropFirst(13).prefix(7)) + String(line2.dropFirst(21).prefix(14)))
            default:
                line2 += padded(hasOptional ? characters(Int.random(in: 1...8, using: &generator), from: alphanumeric) : "", length - 28)
            }
            lines = [line1, line2]
        }
    }

    public init(lines: [String], format: MRZFormat, documentNumber: String, dateOfBirth: String, dateOfExpiry: String) {
        self.lines = lines
        self.format = format
        self.documentNumber = documentNumber
        self.dateOfBirth = dateOfBirth
        self.dateOfExpiry = dateOfExpiry
    }
}
