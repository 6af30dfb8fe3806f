import Foundation
import Testing
@testable import GBGBridge

@Suite("capability.query")
@MainActor
struct CapabilityQueryTests {
    @Test func richProviderMatchesTheDocumentedAnswer() throws {
        let h = Harness(BridgeHost(hostVersion: "2.3.0"))
        h.host.documentCapture.handler = { _ in }
        h.host.documentCapture.permissionState = .granted
        h.host.registerCustomCapability("nfc.read", version: "2.0") { _, _ in }
        h.transport.post(try String(contentsOf: fixturesDirectory.appendingPathComponent("bridge/query-request.json"), encoding: .utf8))
        let response = try parse(try h.onlyResponse(to: "query-001").jsonString())
        #expect(without(["timestamp"], response) == without(["timestamp"], try fixtureJSON("query-response-rich.json")))
    }

    @Test func richProviderIsBuiltOnEveryQuery() throws {
        let h = Harness()
        h.post("capability.query", id: "q1")
        #expect(try h.onlyResponse(to: "q1").payload.data?["capabilities"]?["camera.selfie"]?["supported"] == false)
        h.host.selfieCapture.handler = { _ in }
        h.host.registerCustomCapability("kiosk.print") { _, _ in }
        h.post("capability.query", id: "q2")
        let capabilities = try #require(try h.onlyResponse(to: "q2").payload.data?["capabilities"])
        #expect(capabilities["camera.selfie"]?["supported"] == true)
        #expect(capabilities["kiosk.print"] == ["supported": true, "version": "1.0", "permissionState": "notApplicable"])
        h.host.selfieCapture.isEnabled = false
        h.host.unregisterCustomCapability("kiosk.print")
        h.post("capability.query", id: "q3")
        let after = try #require(try h.onlyResponse(to: "q3").payload.data?["capabilities"])
        #expect(after["camera.selfie"]?["supported"] == false)
        #expect(after["kiosk.print"] == nil)
    }

    @Test func slotWinsOverACustomCapabilityWithTheSameId() throws {
        let h = Harness()
        h.host.registerCustomCapability("camera.document", version: "9.9") { _, _ in }
        h.host.registerCustomCapability("camera.selfie.capture", version: "9.9") { _, _ in }
        let capabilities = h.host.capabilities
        #expect(capabilities["camera.document"]?.version == "1.0")
        #expect(capabilities["camera.document"]?.supported == false)
        #expect(capabilities["camera.selfie.capture"] == nil)
    }

    @Test func customCapabilityStateCanFollowHardware() throws {
        let h = Harness()
        h.host.registerCustomCapability("nfc.read") { _, _ in }
        #expect(h.host.updateCustomCapability("nfc.read", supported: false, permissionState: .denied,
                                              constraints: ["readers": []]))
        #expect(!h.host.updateCustomCapability("unknown", supported: true))
        #expect(h.host.capabilities["nfc.read"]?.jsonValue ==
                ["supported": false, "version": "1.0", "permissionState": "denied", "constraints": ["readers": []]])
    }

    @Test func simpleProviderReportsTheConfiguredDictionary() throws {
        let configuration = BridgeConfiguration(hostVersion: "1.4.2", capabilities: [
            "camera.document": BridgeCapabilityInfo(supported: true, permissionState: .granted,
                                                    constraints: ["maxResolution": "1920x1080",
                                                                  "formats": ["image/jpeg", "image/png"]]),
            "nfc.read": BridgeCapabilityInfo(supported: false, permissionState: .denied),
        ])
        let h = Harness(BridgeHost(configuration: configuration))
        // Slots still route, but the answer is the configured one.
        h.host.selfieCapture.handler = { _ in }
        h.post("capability.query", id: "query-001")
        let response = try parse(try h.onlyResponse(to: "query-001").jsonString())
        #expect(without(["timestamp"], response) == without(["timestamp"], try fixtureJSON("query-response-configured.json")))
        #expect(h.host.configuration.hostVersion == "1.4.2")
    }

    @Test func environmentIsLinux() throws {
        let handler = CapabilityQueryHandler(hostVersion: "1", provider: { [:] })
        #expect(handler.responseData()["environment"] == "linux")
        #expect(handler.action == "capability.query")
    }
}
