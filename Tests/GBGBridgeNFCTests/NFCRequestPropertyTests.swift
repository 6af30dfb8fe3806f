import Foundation
import GBGBridge
import MRTD
import PropertyBased
import TestSupport
import Testing
@testable import GBGBridgeNFC

/// `nfc.read` access keys from a hostile page: combining marks, variation selectors, full-width
/// digits and the like in every field. The page always gets an answer — `INVALID_REQUEST` naming
/// the field and never its value, or, for a key that is valid ASCII, the read (here timing out
/// for want of a card) — and the host goes on.
@Suite("nfc.read access keys from hostile text (property-based)")
@MainActor
struct NFCRequestPropertyTests {
    static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    func check(_ data: String, values: [String]) async throws {
        let rig = try NFCRig(insert: false)
        rig.request("p", data)
        let response = try #require(await rig.response("p"))
        let error = try #require(response.payload.error)
        if error.code == "INVALID_REQUEST" {
            #expect(error.message.hasPrefix("accessKey"), "\(error.message)")
            for value in values {
                let ascii = String(String.UnicodeScalarView(value.unicodeScalars.filter(\.isASCII)))
                #expect(ascii.count < 6 || !error.message.contains(ascii), "the message repeats a value")
            }
        } else {
            #expect(error.code == "CARD_TIMEOUT", "\(error.code): \(error.message)")
            #expect(!values.contains(where: HostileText.hasNonASCII), "a key with non-ASCII text went to the chip")
        }
        // The host is still there: a second request is served.
        rig.request("q", #"{"accessKey":{"can":"123456"},"timeoutSeconds":0.05}"#)
        #expect(try #require(await rig.response("q")).payload.error?.code == "CARD_TIMEOUT")
    }

    @Test func documentFields() async throws {
        let numbers = HostileText.mutations(of: ["L898902C3", "D23145890"])
        let dates = HostileText.mutations(of: ["740812", "120415"])
        await propertyCheck(count: 60, input: numbers, dates) { number, date in
            try await check(#"{"accessKey":{"documentNumber":\#(Self.quoted(number)),"dateOfBirth":\#(Self.quoted(date)),"dateOfExpiry":"120415"},"timeoutSeconds":0.05}"#,
                            values: [number, date])
        }
    }

    @Test func mrzAndCAN() async throws {
        let mrzs = HostileText.mutations(of: ["P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"])
        let cans = HostileText.mutations(of: ["123456", "11223344"])
        await propertyCheck(count: 60, input: mrzs, cans) { mrz, can in
            try await check(#"{"accessKey":{"mrz":\#(Self.quoted(mrz))},"timeoutSeconds":0.05}"#, values: [mrz])
            try await check(#"{"accessKey":{"can":\#(Self.quoted(can))},"timeoutSeconds":0.05}"#, values: [can])
        }
    }

    @Test("the issue's frame: a combining mark in the MRZ's document number is INVALID_REQUEST naming accessKey.mrz")
    func issueFrame() async throws {
        let rig = try NFCRig(insert: false)
        rig.transport.post(#"{"version":"1.0","correlationId":"x","type":"request","timestamp":1,"payload":{"action":"nfc.read","data":{"accessKey":{"mrz":"P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL89890\u03012C36UTO7408122F1204159ZE184226B<<<<<10"}}}}"#)
        let response = try #require(await rig.response("x"))
        #expect(response.payload.error?.code == "INVALID_REQUEST")
        #expect(response.payload.error?.message.hasPrefix("accessKey.mrz") == true, "\(response.payload.error?.message ?? "")")
        #expect(response.payload.error?.message.contains("L89890") == false)
    }
}
