import Foundation
import TestSupport
import Testing
@testable import GBGBridge

@Suite("Fuzz: hostile input never crashes the host")
@MainActor
struct FuzzTests {
    static let seeds: [String] = [
        requestJSON("capability.query", id: "q"),
        requestJSON("camera.document.capture", id: "d"),
        requestJSON("nfc.read", id: "n", data: #"{"accessKey":{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"},"dataGroups":["DG1","DG2"],"verify":{"passive":true}}"#),
        #"{"version":"1.0","correlationId":"e","type":"event","timestamp":1,"payload":{"action":"x","data":[1,2.5,-3e10,null,true,"\u00e9\ud83d\ude00"]}}"#,
    ]

    @Test func truncatedMessagesAtEveryLength() {
        let h = Harness()
        h.host.documentCapture.handler = { _ in .cancelled(reason: "fuzz") }
        h.host.registerCustomCapability("nfc.read") { _, responder in responder.succeed() }
        for seed in Self.seeds {
            let bytes = Array(seed.utf8)
            for length in 0..<bytes.count {
                h.transport.post(String(decoding: bytes[0..<length], as: UTF8.self))
            }
        }
        // Only complete documents may have been accepted.
        #expect(h.host.receivedMessages.isEmpty)
        #expect(h.host.lastError?.hasPrefix("Failed to decode message") == true)
    }

    @Test func randomMutationsOfValidMessages() async {
        var rng = SeededGenerator(seed: 0x6B_6167_4272_6964)
        let h = Harness()
        h.host.documentCapture.handler = { _ in .cancelled(reason: "fuzz") }
        h.host.registerCustomCapability("nfc.read") { _, responder in responder.succeed() }
        let alphabet = Array(#"{}[]":,\ 0123456789.eE+-truefalsnl"abcxyz\u"#.utf8)
        for round in 0..<4_000 {
            // Let the pool's other work in now and then (two cores, many suites at once).
            if round % 200 == 0 { await Task.yield() }
            var bytes = Array(Self.seeds.randomElement(using: &rng)!.utf8)
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let position = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: bytes[position] = alphabet.randomElement(using: &rng)!
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(alphabet.randomElement(using: &rng)!, at: position)
                default: bytes[position] = UInt8.random(in: 0...255, using: &rng)
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            h.transport.post(String(decoding: bytes, as: UTF8.self))
        }
        await settle()
        // Every response the host sent is itself a valid message.
        #expect(h.transport.sent.allSatisfy { (try? BridgeMessage.decode(json: $0)) != nil })
    }

    @Test func randomBytesAndDeepNesting() {
        var rng = SeededGenerator(seed: 42)
        let h = Harness()
        for _ in 0..<2_000 {
            let length = Int.random(in: 0..<64, using: &rng)
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            h.transport.post(String(decoding: bytes, as: UTF8.self))
        }
        h.transport.post(String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000))
        h.transport.post(#"{"version":"1.0","correlationId":"c","type":"event","timestamp":1,"payload":{"action":"a","data":"# +
                         String(repeating: "[", count: 500) + String(repeating: "]", count: 500) + "}}")
        h.transport.post(#"{"version":"1.0","correlationId":"c","type":"event","timestamp":1e400,"payload":{"action":"a"}}"#)
        #expect(h.transport.sent.isEmpty)
    }
}
