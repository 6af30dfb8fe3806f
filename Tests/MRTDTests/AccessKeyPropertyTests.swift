import ChipRead
import Foundation
import GBGBridgeNFC
import PropertyBased
import TestSupport
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// Every text that reaches the MRZ, CAN and date logic, from a journey or the command line, mixed
/// with Unicode that looks like digits and letters: never a crash, always a typed error that names
/// the field and never repeats the value — or a key made of ASCII only.
@Suite("Access keys from hostile text (property-based)")
struct AccessKeyPropertyTests {
    static let numbers = ["L898902C3", "D23145890", "C01X00T47", "X1234567890123456789AB", "l898902c3", "L898 902C3"]
    static let dates = ["740812", "120415", "7408<<", "000229", "991231"]
    /// ICAO 9303-11 Appendix D's TD3 and ICAO 9303-5's TD1/TD2 examples (LDSTests' MRZTests read them).
    static let icaoTD3 = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"
    static let mrzs = [icaoTD3, "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<",
                       "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<\nD231458907UTO7408122F1204159<<<<<<<6", icaoTD3.replacingOccurrences(of: "\n", with: "")]
    static let cans = ["123456", "12345678", "0000000000", "112233"]

    /// A typed refusal: `invalidAccessKey`, and the reason holds none of the input's non-trivial parts.
    static func isCleanRefusal(_ error: MRTDError, input: String) -> Bool {
        guard error.code == .invalidAccessKey else { return false }
        let ascii = String(String.UnicodeScalarView(input.unicodeScalars.filter(\.isASCII)))
        return ascii.count < 6 || !error.reason.contains(ascii)
    }

    @Test func documentFields() async {
        await propertyCheck(count: 400, input: HostileText.mutations(of: Self.numbers), HostileText.mutations(of: Self.dates),
                            HostileText.mutations(of: Self.dates)) { number, birth, expiry in
            do {
                let key = try AccessKey.fields(documentNumber: number, dateOfBirth: birth, dateOfExpiry: expiry)
                #expect(![number, birth, expiry].contains(where: HostileText.hasNonASCII), "accepted non-ASCII input")
                guard case .mrz(let n, let b, let e) = key else { Issue.record("not an MRZ key"); return }
                #expect(n.utf8.allSatisfy { ASCII.isMRZ($0) } && b.utf8.count == 6 && e.utf8.count == 6)
                #expect(key.mrzInformation?.utf8.allSatisfy { ASCII.isMRZ($0) } == true)
                _ = key.pacePassword
            } catch let error as MRTDError {
                #expect(Self.isCleanRefusal(error, input: number + birth + expiry), "\(error)")
                #expect(["documentNumber", "dateOfBirth", "dateOfExpiry"].contains { error.reason.hasPrefix($0) }, "\(error.reason)")
            } catch {
                Issue.record("not a typed error: \(error)")
            }
        }
    }

    @Test func fullMRZText() async {
        await propertyCheck(count: 400, input: HostileText.mutations(of: Self.mrzs)) { text in
            do {
                let mrz = try MRZ(text)
                // Line breaks, carriage returns and blanks around lines are the only non-MRZ text allowed.
                let meaningful = text.unicodeScalars.filter { !["\n", "\r", " ", "\t"].contains($0) }
                let allASCII = meaningful.allSatisfy { $0.isASCII }
                #expect(allASCII, "accepted non-ASCII MRZ text")
                #expect(mrz.lines.allSatisfy { $0.utf8.allSatisfy { ASCII.isMRZ($0) } })
                _ = try AccessKey.mrz(text).pacePassword
            } catch let error as MRTDError {
                #expect(Self.isCleanRefusal(error, input: text), "\(error)")
            } catch {
                Issue.record("not a typed error: \(error)")
            }
        }
    }

    @Test func cardAccessNumbers() async {
        await propertyCheck(count: 300, input: HostileText.mutations(of: Self.cans)) { can in
            do {
                let key = try AccessKey.cardAccessNumber(can)
                #expect(!HostileText.hasNonASCII(can))
                guard case .can(let digits) = key else { Issue.record("not a CAN"); return }
                #expect(digits.utf8.allSatisfy(ASCII.isDigit) && (6...10).contains(digits.utf8.count))
            } catch let error as MRTDError {
                #expect(error.code == .invalidAccessKey && error.reason == "can must be 6 to 10 digits")
            } catch {
                Issue.record("not a typed error: \(error)")
            }
        }
    }

    @Test("keys built directly from the enum case never crash key derivation")
    func directKeys() async {
        await propertyCheck(count: 300, input: HostileText.mutations(of: Self.numbers), HostileText.mutations(of: Self.dates)) { number, date in
            let key = AccessKey.mrz(documentNumber: number, dateOfBirth: date, dateOfExpiry: date)
            _ = key.pacePassword
            _ = MRZ.keyInformation(documentNumber: number, dateOfBirth: date, dateOfExpiry: date)
            #expect(("0"..."9").contains(MRZ.checkDigit(number + date)))
        }
    }

    @Test("dates in reports and certificates: hostile digits are left alone, never trapped on")
    func dates() async {
        await propertyCheck(count: 300, input: HostileText.mutations(of: Self.dates + ["19740812", "20240101120000", "240101120000Z"])) { text in
            _ = ReadReport.isoDate(text, birth: true)
            _ = ReadReport.isoDate(text, birth: false)
            _ = ReadReport.isoFullDate(text)
            _ = PassiveAuthentication.parseASN1Time(text)
            #expect(ASCII.isDate(text) == false || !HostileText.hasNonASCII(text))
        }
    }

    @Test("the issue's inputs: a combining mark or variation selector inside a digit", arguments: [
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL89890\u{301}2C36UTO7408122F1204159ZE184226B<<<<<10",
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<1\u{FE0F}0",
    ])
    func issueMRZs(text: String) {
        #expect(throws: MRTDError.self) { _ = try MRZ(text) }
        #expect(throws: MRTDError.self) { _ = try AccessKey.fields(documentNumber: "L\u{332}898902C3", dateOfBirth: "740812", dateOfExpiry: "120415") }
        #expect(throws: MRTDError.self) { _ = try AccessKey.fields(documentNumber: "L898902C3", dateOfBirth: "7\u{301}40812", dateOfExpiry: "120415") }
        #expect(throws: MRTDError.self) { _ = try AccessKey.cardAccessNumber("1\u{301}12233") }
        #expect(throws: MRTDError.self) { _ = try AccessKey.cardAccessNumber("１２３４５６") }
        #expect(MRZ.checkDigit("0\u{301}") == MRZ.checkDigit("<<"))
    }
}
