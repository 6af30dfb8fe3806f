import Foundation
import Testing
@testable import LDS

@Suite("MRZ")
struct MRZTests {
    static let td3 = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"
    static let td1 = "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<"
    static let td2 = "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<\nD231458907UTO7408122F1204159<<<<<<<6"

    @Test func parsesTD3() throws {
        let mrz = try MRZ(Self.td3)
        #expect(mrz.format == .td3)
        #expect(mrz.documentCode == "P" && mrz.issuingState == "UTO" && mrz.nationality == "UTO")
        #expect(mrz.documentNumber == "L898902C3")
        #expect(mrz.primaryIdentifier == "ERIKSSON" && mrz.secondaryIdentifier == "ANNA MARIA")
        #expect(mrz.dateOfBirth == "740812" && mrz.sex == "F" && mrz.dateOfExpiry == "120415")
        #expect(mrz.optionalData == "ZE184226B")
        #expect(mrz.keyInformation == "L898902C3" + "6" + "740812" + "2" + "120415" + "9")
        #expect(mrz.text == Self.td3)
    }

    @Test func parsesTD3RunTogetherAndLowercase() throws {
        let mrz = try MRZ(Self.td3.replacingOccurrences(of: "\n", with: "").lowercased())
        #expect(mrz.documentNumber == "L898902C3")
    }

    @Test func parsesTD1() throws {
        let mrz = try MRZ(Self.td1)
        #expect(mrz.format == .td1)
        #expect(mrz.documentCode == "I" && mrz.documentNumber == "D23145890" && mrz.documentNumberCheckDigit == "7")
        #expect(mrz.dateOfBirth == "740812" && mrz.dateOfExpiry == "120415" && mrz.sex == "F")
        #expect(mrz.primaryIdentifier == "ERIKSSON" && mrz.secondaryIdentifier == "ANNA MARIA")
    }

    @Test func parsesTD2() throws {
        let mrz = try MRZ(Self.td2)
        #expect(mrz.format == .td2)
        #expect(mrz.documentNumber == "D23145890")
        #expect(mrz.keyInformation == "D231458907" + "7408122" + "1204159")
    }

    @Test func td1LongDocumentNumber() throws {
        // Document number D23145890123 (12 chars): 9 in place, '<' as check digit, the rest and
        // the real check digit at the start of the optional data.
        let number = "D23145890123"
        let check = MRZ.checkDigit(number)
        var line1 = "I<UTO" + "D23145890" + "<" + "123" + String(check) + "<"
        line1 += String(repeating: "<", count: 30 - line1.count)
        var line2 = "7408122F1204159UTO" + String(repeating: "<", count: 11)
        let composite = String(Array(line1)[5..<30]) + String(Array(line2)[0..<7]) + String(Array(line2)[8..<15]) + String(Array(line2)[18..<29])
        line2 += String(MRZ.checkDigit(composite))
        let mrz = try MRZ([line1, line2, "ERIKSSON<<ANNA<MARIA<<<<<<<<<<"].joined(separator: "\n"))
        #expect(mrz.documentNumber == number)
        #expect(mrz.keyInformation.hasPrefix(number + String(check)))
        #expect(AccessKey.mrz(documentNumber: number, dateOfBirth: "740812", dateOfExpiry: "120415").mrzInformation == mrz.keyInformation)
    }

    @Test func appendixDKeyInformationFromFields() throws {
        let key = try AccessKey.fields(documentNumber: "L898902C", dateOfBirth: "690806", dateOfExpiry: "940623")
        #expect(key.mrzInformation == "L898902C<369080619406236")
        #expect("\(key)" == "AccessKey.mrz(<redacted>)")
    }

    @Test("invalid MRZs are typed errors that do not echo the MRZ", arguments: [
        "", "P<UTO", String(repeating: "<", count: 88),
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C37UTO7408122F1204159ZE184226B<<<<<10",  // doc check
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408123F1204159ZE184226B<<<<<10",  // dob check
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<11",  // composite
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<1",   // short line
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F12041$9ZE184226B<<<<<10",  // bad char
    ])
    func invalid(text: String) {
        #expect {
            _ = try MRZ(text)
        } throws: { error in
            guard let error = error as? MRTDError, error.code == .invalidAccessKey else { return false }
            return !error.reason.contains("L898902C") && !error.reason.contains("ERIKSSON")
        }
    }

    @Test func accessKeyValidation() throws {
        #expect(throws: MRTDError.self) { _ = try AccessKey.fields(documentNumber: "", dateOfBirth: "740812", dateOfExpiry: "120415") }
        #expect(throws: MRTDError.self) { _ = try AccessKey.fields(documentNumber: "L898902C3", dateOfBirth: "741312", dateOfExpiry: "120415") }
        #expect(throws: MRTDError.self) { _ = try AccessKey.fields(documentNumber: "L898902C3", dateOfBirth: "740812", dateOfExpiry: "12041") }
        #expect(throws: MRTDError.self) { _ = try AccessKey.cardAccessNumber("12a456") }
        #expect(try AccessKey.cardAccessNumber("123456") == .can("123456"))
        #expect("\(try AccessKey.cardAccessNumber("123456"))".contains("123456") == false)
        #expect(try AccessKey.mrz(Self.td3).mrzInformation == "L898902C367408122120415" + "9")
    }
}
