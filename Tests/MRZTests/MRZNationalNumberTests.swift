import Testing
@testable import MRZ

/// Germany's serial numbers (PassV, Anlage 11): digits and `C F G H J K L M N P R T V W X Y Z`,
/// the children's and temporary passports a letter, a filler and seven digits. Under `D<<` a
/// passport's or identity card's number has no `O`, so the `0`/`O` rival the small capitals'
/// floor raises is none there — and only there, and only while the number's own reading keeps
/// the law. Probabilities made up cell by cell (`MRZDecoderTests.scores`).
@Suite("MRZ national numbers: Germany's serial alphabet")
struct MRZNationalNumberTests {
    /// The German passport specimen (2017), `C01X00T47`: `0`s at places 2, 5 and 6 of the number.
    static let german = ["P<D<<MUSTERMANN<<ERIKA<<<<<<<<<<<<<<<<<<<<<<", "C01X00T478D<<6408125F2702283<<<<<<<<<<<<<<<4"]

    /// The same page under another issuer or document code (neither is in a check digit's span).
    static func issued(by state: String, code: String = "P<") -> [String] {
        [code + state + String(german[0].dropFirst(5)), german[1]]
    }

    /// Every cell read surely (0.99). At small capitals the floor still makes `O` 0.35 of a `0`
    /// and `Q` 0.3: the number's places 1 and 4 (weight 3 each) read `O` and `Q` add 72 + 78 ≡ 0 —
    /// `CO1XQ0T47` passes the check digit with the odds 0.105, over the tenth.
    static func scores(_ lines: [String]) -> [[[Float]]] {
        MRZDecoderTests.scores(lines, sure: 0.99)
    }

    static let smallCapitals = MRZDecoder.Policy.standard.forCapHeight(10)

    @Test("the alphabet: passports and identity cards of D<< only, O never, vowels and B D Q S never past the first place")
    func alphabet() throws {
        let passport = try #require(MRZDecoder.nationalNumberAlphabet(documentCode: "P<", issuer: "D<<"))
        #expect(passport.count == 9)
        #expect(!passport[0].contains(MRZGlyph("O")) && passport[0].contains(MRZGlyph("A")) && passport[0].contains(MRZGlyph("1")))
        #expect(passport[1].contains(.filler) && !passport[2].contains(.filler))
        for letter in "ABDEIOQSU" { #expect(!passport[4].contains(MRZGlyph(letter)), "\(letter)") }
        for letter in "CFGHJKLMNPRTVWXYZ0123456789" { #expect(passport[8].contains(MRZGlyph(letter)), "\(letter)") }
        #expect(MRZDecoder.nationalNumberAlphabet(documentCode: "ID", issuer: "D") != nil, "a reading's issuer comes trimmed")
        #expect(MRZDecoder.nationalNumberAlphabet(documentCode: "AC", issuer: "D<<") == nil, "crew certificates number S00000001")
        #expect(MRZDecoder.nationalNumberAlphabet(documentCode: "V<", issuer: "D<<") == nil, "visas number D09174053")
        #expect(MRZDecoder.nationalNumberAlphabet(documentCode: "P<", issuer: "DEU") == nil)
        #expect(MRZDecoder.nationalNumberAlphabet(documentCode: "P<", issuer: "UTO") == nil)
        for number in ["C01X00T47", "G<0000000", "A<0000000", "LZ6311T47", "122001085", "C01X"] {
            #expect(MRZDecoder.nationalNumberAllows(number, documentCode: "P", issuer: "D"), "\(number)")
        }
        for number in ["CO1X00T47", "C01X00T4A", "O01X00T47", "C<1X00T<7", "C01X00T470"] {
            #expect(!MRZDecoder.nationalNumberAllows(number, documentCode: "P", issuer: "D"), "\(number)")
        }
        #expect(MRZDecoder.nationalNumberAllows("CO1X00T47", documentCode: "P", issuer: "UTO"))
    }

    @Test("small capitals: D<<'s passport claims its key, the same cells under UTO are refused for the O rival")
    func rivalGone() throws {
        let decoder = MRZDecoder(format: .td3, policy: Self.smallCapitals)
        let german = try #require(decoder.decode(Self.scores(Self.german)))
        #expect(german.documentNumber == "C01X00T47" && german.checkDigits.values.allSatisfy { $0 })
        #expect(german.accessKeyValid, "no O in a German number: no 0/O rival")
        let elsewhere = try #require(decoder.decode(Self.scores(Self.issued(by: "UTO"))))
        #expect(elsewhere.documentNumber == "C01X00T47")
        #expect(!elsewhere.accessKeyValid, "two 0s whose change to O cancels: a rival over the tenth")
        let diplomatic = try #require(decoder.decode(Self.scores(Self.issued(by: "D<<", code: "PD"))))
        #expect(diplomatic.accessKeyValid, "PD (diplomatic) is a passport")
    }

    @Test("candidates of a German passport never hold an O; elsewhere the O readings are offered after the 0s")
    func candidates() throws {
        let decoder = MRZDecoder(format: .td3, policy: Self.smallCapitals)
        let german = decoder.keyCandidates(Self.scores(Self.german))
        #expect(german.first?.documentNumber == "C01X00T47")
        #expect(german.allSatisfy { !$0.documentNumber.contains("O") }, "\(german.map(\.documentNumber))")
        let elsewhere = decoder.keyCandidates(Self.scores(Self.issued(by: "UTO")))
        #expect(elsewhere.first?.documentNumber == "C01X00T47")
        #expect(elsewhere.contains { $0.documentNumber.contains("O") }, "\(elsewhere.map(\.documentNumber))")
    }

    @Test("a number whose own reading breaks the law is read by ICAO's rules: an A in it")
    func lawBrokenByTheReading() throws {
        let decoder = MRZDecoder(format: .td3, policy: Self.smallCapitals)
        // Another generator's German passport numbered with a vowel: read as it is printed.
        let number = "C01X00T4A"
        let check = MRZCheckDigit.value(number.map(MRZGlyph.init))
        var lines = Self.german
        lines[1] = number + String(check) + String(lines[1].dropFirst(10))
        let two = Array(lines[1])
        let composite = String(two[0..<10]) + String(two[13..<20]) + String(two[21..<43])  // TD3's composite span
        lines[1] = String(lines[1].dropLast()) + String(MRZCheckDigit.value(composite.map(MRZGlyph.init)))
        let reading = try #require(decoder.decode(Self.scores(lines)))
        #expect(reading.documentNumber == number && reading.checkDigits.values.allSatisfy { $0 })
        #expect(!reading.accessKeyValid, "the O rival stands when the law does not")
        #expect(decoder.keyCandidates(Self.scores(lines)).first?.documentNumber == number)
    }

    @Test("a German temporary passport at 5-pixel pitch: noise picking O where the law says 0 does not set the law aside for the candidates; a sure unlawful A does")
    func temporaryPassportAtFivePixels() throws {
        // The real specimen's (uscutil-DE-PPD_Reisepass_Vorlaeufig) lines; at half its size the
        // classifier gave the filler 0.03 and two of the 0s nothing but "not OCR-B", O a hair ahead.
        let lines = ["PPD<<MUSTERMANN<<ERIKA<<<<<<<<<<<<<<<<<<<<<<", "H<00000009D<<6408125F1310317<<<<<<<<<<<<<<<4"]
        let noise: [Character: Float] = ["O": 0.004, "0": 0.003, "D": 0.003]
        let decoder = MRZDecoder(format: .td3, policy: Self.smallCapitals)
        let scores = MRZDecoderTests.scores(lines, sure: 0.99, overrides: [[1, 1]: ["<": 0.03], [1, 3]: noise, [1, 8]: noise])
        let candidates = decoder.keyCandidates(scores)
        #expect(candidates.first?.documentNumber == "H<0000000", "\(candidates.map(\.documentNumber))")
        #expect(candidates.allSatisfy { !$0.documentNumber.contains("O") && !$0.documentNumber.contains("D") }, "\(candidates.map(\.documentNumber))")
        // The verdicts keep the strict gate: nothing is claimed on noise.
        #expect(decoder.decode(scores)?.accessKeyValid != true)
        // A sure A in the number's fourth place (the law forbids vowels past the first): another
        // generator's number, read by ICAO's rules — H<0A00000 holds the check digit (A ≡ 0).
        let generator = decoder.keyCandidates(MRZDecoderTests.scores(lines, sure: 0.99, overrides: [[1, 1]: ["<": 0.03], [1, 3]: ["A": 0.95, "0": 0.02]]))
        #expect(generator.first?.documentNumber == "H<0A00000", "\(generator.map(\.documentNumber))")
    }
}
