import Foundation
import GBGBridge
import MRTD
import MRTDEmulator
import TestSupport
import Testing
@testable import GBGBridgeNFC

/// Every nfc.read message of every outcome — the requests, each progress event, successes (BAC,
/// PACE, EAC with fingerprints and irises, evidence, a hostile card's parse errors and withheld
/// groups) and every error — validated against `Docs/nfc-read.schema.json` by Python's jsonschema.
@Suite("nfc.read messages match Docs/nfc-read.schema.json")
@MainActor
struct NFCReadSchemaTests {
    /// One scenario: a rig, what the page sends, and the code the response must carry (nil: success).
    struct Scenario {
        let name: String
        let rig: () throws -> NFCRig
        let data: String
        let code: String?
    }

    static func hostileRig(_ modes: [String]) throws -> NFCRig {
        var passport = try TestFixtures.passport("utopia-td3-pace")
        var hostile = HostileCard()
        for mode in modes { try hostile.add(mode) }
        try passport.makeHostile(hostile, signer: try TestFixtures.documentSigner())
        return try NFCRig(chip: VirtualPassportChip(passport: passport))
    }

    static var scenarios: [Scenario] {
        let key = NFCRig.annaKey
        return [
            Scenario(name: "BAC", rig: { try NFCRig() }, data: #"{"accessKey":\#(key)}"#, code: nil),
            Scenario(name: "PACE with evidence", rig: { try NFCRig(passport: "utopia-td3-pace") },
                     data: #"{"accessKey":{"can":"112233"},"evidence":true,"activeAuthenticationChallenge":"AAECAwQFBgc="}"#, code: nil),
            Scenario(name: "MRZ key, some groups", rig: { try NFCRig() },
                     data: #"{"accessKey":{"mrz":"P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10"},"dataGroups":["DG1","DG11"],"verify":{"active":false}}"#,
                     code: nil),
            Scenario(name: "parse errors and withheld groups", rig: { try hostileRig(["broken-dg11", "uncovered-dg14"]) },
                     data: #"{"accessKey":{"can":"112233"}}"#, code: nil),
            Scenario(name: "a refused file", rig: { try hostileRig(["lying-length"]) }, data: #"{"accessKey":{"can":"112233"}}"#, code: nil),
            Scenario(name: "a stalled chip", rig: { try hostileRig(["stall-after-access"]) },
                     data: #"{"accessKey":{"can":"112233"},"readTimeoutSeconds":5}"#, code: "CARD_TIMEOUT"),
            Scenario(name: "a chip without end", rig: { try hostileRig(["wrong-length-ladder"]) },
                     data: #"{"accessKey":{"can":"112233"}}"#, code: "CHIP_ERROR"),
            Scenario(name: "a wrong key", rig: { try NFCRig() },
                     data: #"{"accessKey":{"documentNumber":"L898902C3","dateOfBirth":"740813","dateOfExpiry":"120415"}}"#, code: "ACCESS_DENIED"),
            Scenario(name: "no card", rig: { try NFCRig(insert: false) }, data: #"{"accessKey":\#(key),"timeoutSeconds":0.3}"#, code: "CARD_TIMEOUT"),
            Scenario(name: "a bad request", rig: { try NFCRig() }, data: #"{"accessKey":{"documentNumber":"L898902C3"}}"#, code: "INVALID_REQUEST"),
            Scenario(name: "a bad read timeout", rig: { try NFCRig() }, data: #"{"accessKey":\#(key),"readTimeoutSeconds":4}"#,
                     code: "INVALID_REQUEST"),
        ]
    }

    @Test("every outcome's messages match the schema")
    func everyOutcome() async throws {
        var messages: [String] = []
        for (index, scenario) in Self.scenarios.enumerated() {
            let rig = try scenario.rig()
            let id = "s\(index)"
            let request = #"{"version":"1.0","correlationId":"\#(id)","type":"request","timestamp":1,"payload":{"action":"nfc.read","data":\#(scenario.data)}}"#
            rig.transport.post(request)
            let response = try #require(await rig.response(id), "\(scenario.name): no response")
            #expect(response.payload.error?.code == scenario.code, "\(scenario.name): \(String(describing: response.payload.error))")
            if scenario.code == nil || scenario.code == "CARD_TIMEOUT" || scenario.code == "CHIP_ERROR" {
                #expect(!rig.events(NFCReadService.progressEvent).isEmpty, "\(scenario.name): no progress events")
            }
            // Requests a journey sends are part of the contract too (the bad ones are not).
            if scenario.code != "INVALID_REQUEST" { messages.append(request) }
            messages += rig.transport.sent.filter { text in
                text.contains(#""action":"nfc.read""#) || text.contains(#""action":"nfc.read.progress""#)
            }
        }
        let problems = try await NFCReadSchema.problems(in: messages)
        #expect(problems.isEmpty, "\(problems.prefix(10).joined(separator: "\n"))")
        #expect(messages.count > 30)
    }

    @Test("the schema refuses what the contract does not allow")
    func schemaCanFail() async throws {
        let bad = [
            // An unknown error code, a success without verification, a progress percent over 100.
            #"{"version":"1.0","correlationId":"a","type":"response","timestamp":1,"payload":{"action":"nfc.read","status":"error","error":{"code":"OOPS","message":"m","recoverable":true}}}"#,
            #"{"version":"1.0","correlationId":"b","type":"response","timestamp":1,"payload":{"action":"nfc.read","status":"success","data":{"accessControl":"BAC","dataGroupsRead":[]}}}"#,
            #"{"version":"1.0","correlationId":"c","type":"event","timestamp":1,"payload":{"action":"nfc.read.progress","data":{"requestId":"x","phase":"reading","percent":101}}}"#,
        ]
        let problems = try await NFCReadSchema.problems(in: bad)
        #expect(problems.count == bad.count, "\(problems)")
    }
}
