import Foundation
import GBGBridgeExamples
import Testing
import GBGBridge

@Suite("README: Using the core")
@MainActor
struct ReadmeExampleTests {
    @Test("README.md shows the example source unchanged")
    func readmeShowsTheCompiledExample() throws {
        let root = fixturesDirectory.deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: root.appendingPathComponent("Sources/GBGBridgeExamples/UsingTheCore.swift"),
                                encoding: .utf8)
        let section = try #require(readme.range(of: "## Using the core"))
        let fence = try #require(readme.range(of: "```swift\n", range: section.upperBound..<readme.endIndex))
        let close = try #require(readme.range(of: "\n```", range: fence.upperBound..<readme.endIndex))
        #expect(String(readme[fence.upperBound..<close.lowerBound]) + "\n" == source)
    }

    @Test("the example serves a journey: query, document capture, custom capability")
    func exampleWorks() async throws {
        let transport = InMemoryBridgeTransport()
        let host = startHost(transport: transport)
        let h = Harness(host)
        let capabilities = try #require(try await h.query()["capabilities"])
        #expect(capabilities["camera.document"] == ["supported": true, "version": "1.0", "permissionState": "granted"])
        #expect(capabilities["kiosk.print"] == ["supported": true, "version": "1.0"])

        h.post("camera.document.capture", id: "d")
        await settle()
        #expect(host.documentCapture.activeRequest?.correlationId == "d")
        cameraFinished(host, png: Data([0x89, 0x50]), width: 2, height: 1)
        #expect(try await h.response(to: "d").payload.data == ["imageBase64": "iVA=", "imageWidth": 2, "imageHeight": 1,
                                                               "mimeType": "image/png"])
        h.post("camera.document.capture", id: "d2")
        await settle()
        cameraFinished(host, png: nil, width: 0, height: 0)
        #expect(try await h.response(to: "d2").payload.status == .cancelled)

        h.post("kiosk.print", id: "p", data: #"{"copies":3}"#)
        #expect(try await h.response(to: "p").payload.data == ["printed": 3])
    }
}
