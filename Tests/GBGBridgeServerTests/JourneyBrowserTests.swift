import ChildProcesses
import Foundation
import GBGBridgeServer
import TestSupport
import Testing

/// The sample journey in real headless Chromium, driven over the DevTools protocol on a pipe.
@Suite("Sample journey in headless Chromium", .serialized)
struct JourneyBrowserTests {
    /// Where screenshots are kept for people to look at.
    static let artifacts = TestFixtures.packageRoot.appendingPathComponent("artifacts")

    struct Page {
        let browser: ChromiumProcess
        let sessionId: String

        static func open(width: Int = 1100, height: Int = 1500) async throws -> Page {
            let browser = try ChromiumProcess(arguments: ["--headless=new", "--disable-gpu", "--hide-scrollbars",
                                                          "--window-size=\(width),\(height)", "about:blank"])
            let target = try await browser.devTools.send("Target.createTarget", params: ["url": "about:blank"])
            guard let targetId = target["targetId"] as? String else { throw DevToolsError("no target") }
            let attached = try await browser.devTools.send("Target.attachToTarget", params: ["targetId": targetId, "flatten": true])
            guard let sessionId = attached["sessionId"] as? String else { throw DevToolsError("no session") }
            try await browser.devTools.send("Page.enable", sessionId: sessionId)
            try await browser.devTools.send("Runtime.enable", sessionId: sessionId)
            try await browser.devTools.send("Emulation.setDeviceMetricsOverride",
                                            params: ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false],
                                            sessionId: sessionId)
            return Page(browser: browser, sessionId: sessionId)
        }

        func navigate(_ url: String) async throws {
            try await browser.devTools.send("Page.navigate", params: ["url": url], sessionId: sessionId)
        }

        /// Evaluates `expression` in the page and returns its value.
        func evaluate(_ expression: String) async throws -> Any? {
            let result = try await browser.devTools.send("Runtime.evaluate",
                                                         params: ["expression": expression, "returnByValue": true, "awaitPromise": true],
                                                         sessionId: sessionId)
            return (result["result"] as? [String: Any])?["value"]
        }

        /// Waits until `expression` yields one of `values` (or the timeout passes); returns the last value.
        func wait(for expression: String, in values: Set<String>, timeout: Duration = .seconds(60)) async throws -> String? {
            let deadline = ContinuousClock.now + timeout
            var last: String?
            while ContinuousClock.now < deadline {
                last = try? await evaluate(expression) as? String
                if let last, values.contains(last) { return last }
                try await Task.sleep(for: .milliseconds(100))
            }
            return last
        }

        func screenshot(to url: URL) async throws {
            let shot = try await browser.devTools.send("Page.captureScreenshot", params: ["format": "png", "captureBeyondViewport": true],
                                                       sessionId: sessionId)
            guard let base64 = shot["data"] as? String, let data = Data(base64Encoded: base64) else { throw DevToolsError("no screenshot") }
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
    }

    /// A fresh Chromium page, closed (with `rig`, when given) however `body` ends.
    func withPage(_ rig: ServerRig? = nil, _ body: (Page) async throws -> Void) async throws {
        let page = try await Page.open()
        do {
            try await body(page)
        } catch {
            await page.browser.terminate()
            await rig?.stop()
            throw error
        }
        await page.browser.terminate()
        await rig?.stop()
    }

    @Test func journeyReadsTheVirtualPassportAndShowsNameAndPhoto() async throws {
        let rig = try await ServerRig.start(staticDirectory: TestFixtures.url("journey").path, passport: "utopia-td3-jpeg2000")
        try await withPage(rig) { page in
            try await page.navigate("\(rig.origin)/?autorun=1&documentNumber=X9Q7R2K41&dateOfBirth=950730&dateOfExpiry=320115")
            let state = try await page.wait(for: "document.body ? document.body.dataset.state : ''", in: ["done", "error"])
            let photo = try await page.wait(for: "document.body.dataset.photo || ''", in: ["413x531"], timeout: .seconds(10))
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("journey-demo.png"))
            let name = try await page.evaluate("document.getElementById('holder-name').textContent") as? String
            let badges = try await page.evaluate("document.getElementById('badges').textContent") as? String
            let capabilities = try await page.evaluate("document.getElementById('capabilities').textContent") as? String
            let documentImage = try await page.evaluate("document.getElementById('document-image').naturalWidth") as? Int
            let selfieImage = try await page.evaluate("document.getElementById('selfie-image').naturalHeight") as? Int
            #expect(state == "done")
            #expect(name == "ERIKA MUSTERMANN")
            #expect(photo == "413x531")  // the JPEG 2000 face, transcoded, decoded by the browser
            #expect(badges?.contains("Passive: valid") == true)
            #expect(capabilities?.contains("nfc.read ✓") == true)
            #expect(documentImage == 1000)
            #expect(selfieImage == 960)
        }
    }

    /// `gbgbridge demo`'s default passport: PACE, then Chip and Active Authentication, a drawn face.
    @Test func theDemoPassportShowsThreeValidBadgesAndAFace() async throws {
        let rig = try await ServerRig.start(staticDirectory: TestFixtures.url("journey").path, passport: "utopia-demo")
        try await withPage(rig) { page in
            try await page.navigate("\(rig.origin)/?autorun=1&documentNumber=L898902C3&dateOfBirth=740812&dateOfExpiry=120415")
            let state = try await page.wait(for: "document.body ? document.body.dataset.state : ''", in: ["done", "error"])
            let photo = try await page.wait(for: "document.body.dataset.photo || ''", in: ["360x480"], timeout: .seconds(10))
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("journey-demo-passport.png"))
            let badges = try await page.evaluate("document.getElementById('badges').textContent") as? String
            #expect(state == "done")
            #expect(photo == "360x480")  // the drawn portrait
            for badge in ["Passive: valid", "Chip: valid", "Active: valid"] {
                #expect(badges?.contains(badge) == true, "\(badges ?? "")")
            }
        }
    }

    /// Nobody types the MRZ: the document capture (the drawn page, ICAO's specimen in OCR-B) gives
    /// `data.mrz`, the journey opens the chip with `{"fromDocumentCapture": true}`, and the demo
    /// passport (the same MRZ) reads with three valid badges; a second read finds the MRZ taken.
    @Test func theChipOpensWithTheMRZReadFromTheDocumentPhoto() async throws {
        let rig = try await ServerRig.start(staticDirectory: TestFixtures.url("journey").path, passport: "utopia-demo")
        try await withPage(rig) { page in
            try await page.navigate("\(rig.origin)/?autorun=1")
            let state = try await page.wait(for: "document.body ? document.body.dataset.state : ''", in: ["done", "error"])
            let captured = try await page.evaluate("document.body.dataset.capturedMrz || ''") as? String
            let note = try await page.evaluate("document.getElementById('capture-mrz').textContent") as? String
            let badges = try await page.evaluate("document.getElementById('badges').textContent") as? String
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("journey-mrz-from-capture.png"))
            #expect(captured == "valid", "the drawn page's MRZ should read as valid")
            // Once the chip opened, the note says so: what is shown from then on is the chip's, verified.
            #expect(note?.contains("The chip confirmed the key read from the photo") == true, "\(note ?? "")")
            let chipStatus = try await page.evaluate("document.getElementById('chip-status').textContent") as? String
            #expect(state == "done", "\(chipStatus ?? "")")
            #expect(badges?.contains("Passive: valid") == true, "\(badges ?? "")")
            // The capture was marked as read from a photo; the chip took its first key candidate.
            #expect(try await page.evaluate("document.body.dataset.captureSource || ''") as? String == "photo")
            #expect(try await page.evaluate("document.body.dataset.keyFrom || ''") as? String == "photo:1/1")
            // The key was taken: asking again without a new capture is INVALID_REQUEST, naming why.
            let again = try await page.evaluate("""
                new Promise(function (resolve) {
                  var id = 'again-' + Date.now();
                  var previous = window.GBGBridge.receive;
                  window.GBGBridge.receive = function (m) { if (m.correlationId === id) { resolve(JSON.stringify(m.payload)); } previous(m); };
                  window.webkit.messageHandlers.gbgBridge.postMessage({version: '1.0', correlationId: id, type: 'request', timestamp: Date.now(),
                    payload: {action: 'nfc.read', data: {accessKey: {fromDocumentCapture: true}}}});
                })
                """) as? String
            #expect(again?.contains("INVALID_REQUEST") == true && again?.contains("fromDocumentCapture") == true, "\(again ?? "")")
        }
    }

    /// Opens the demo's journey with autorun and the demo passport's MRZ, once `demo` listens.
    static func openDemoJourney(_ page: Page, port: Int) async throws {
        var loaded = false
        for _ in 0..<100 where !loaded {
            try await page.navigate("http://127.0.0.1:\(port)/?autorun=1&documentNumber=L898902C3&dateOfBirth=740812&dateOfExpiry=120415")
            let state = try await page.wait(for: "document.body ? document.body.dataset.state || 'loading' : ''",
                                            in: ["ready", "done", "error"], timeout: .seconds(2))
            loaded = ["ready", "done", "error"].contains(state ?? "")
        }
    }

    /// `gbgbridge demo --eac`: the journey, unchanged but for showing what it gets, reads DG3/DG4
    /// after Terminal Authentication and draws the fingerprints and irises (raw pixels on a canvas).
    @Test(.enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
    func demoWithEACShowsFingerprintsAndIrises() async throws {
        let port = try freeLoopbackPort()
        let demo = try ChildProcess(executable: GBGBridgeBinary.path, arguments: ["demo", "--port", "\(port)", "--eac"])
        defer { demo.terminateBlocking(gracePeriod: .seconds(2)) }
        try await withPage { page in
            try await Self.openDemoJourney(page, port: port)
            let state = try await page.wait(for: "document.body.dataset.state || ''", in: ["done", "error"])
            let shown = try await page.wait(for: "document.body.dataset.biometrics || ''", in: ["4"], timeout: .seconds(10))
            _ = try await page.wait(for: "document.body.dataset.server || ''", in: ["done", "error", "unavailable"])
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("journey-demo-eac.png"))
            let badges = try await page.evaluate("document.getElementById('badges').textContent") as? String
            let captions = try await page.evaluate("Array.from(document.querySelectorAll('#biometric-images figcaption')).map(c => c.textContent).join('|')") as? String
            #expect(state == "done")
            #expect(shown == "4", "fingerprints and irises drawn: \(shown ?? "none")")
            #expect(badges?.contains("Terminal: valid") == true, "\(badges ?? "")")
            #expect(captions?.contains("right index finger · raw 64×64") == true && captions?.contains("left eye") == true, "\(captions ?? "")")
            let serverBadges = try await page.evaluate("document.getElementById('server-badges').textContent") as? String
            #expect(serverBadges?.contains("Server passive: valid") == true, "the evidence with DG3/DG4 verifies too: \(serverBadges ?? "")")
        }
    }

    /// README's main job as a user runs it: `gbgbridge demo`, the journey in a browser, the read,
    /// then "Verify on server": the demo's stand-in backend issued the AA challenge and checks the
    /// evidence offline.
    @Test(.enabled(if: GBGBridgeBinary.isBuilt, "needs the gbgbridge binary (swift build)"))
    func demoVerifiesTheEvidenceOnItsServer() async throws {
        let port = try freeLoopbackPort()
        let demo = try ChildProcess(executable: GBGBridgeBinary.path, arguments: ["demo", "--port", "\(port)"])
        defer { demo.terminateBlocking(gracePeriod: .seconds(2)) }
        try await withPage { page in
            try await Self.openDemoJourney(page, port: port)
            let server = try await page.wait(for: "document.body.dataset.server || ''", in: ["done", "error", "unavailable"])
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("journey-demo-server-verification.png"))
            let badges = try await page.evaluate("document.getElementById('server-badges').textContent") as? String
            let status = try await page.evaluate("document.getElementById('server-status').textContent") as? String
            let size = try await page.evaluate("document.getElementById('evidence-size').textContent") as? String
            #expect(server == "done", "\(status ?? "")")
            #expect(badges?.contains("Server passive: valid") == true, "\(badges ?? "")")
            #expect(badges?.contains("Server active: valid") == true, "\(badges ?? "")")
            #expect(badges?.contains("Server chip: notChecked") == true, "\(badges ?? "")")
            #expect(status?.contains("its own challenge") == true)
            #expect(size?.hasPrefix("Chip evidence: ") == true)
        }
    }

    @Test func wrongDetailsShowAccessDeniedInThePage() async throws {
        let rig = try await ServerRig.start(staticDirectory: TestFixtures.url("journey").path)
        let page = try await Page.open()
        try await page.navigate("\(rig.origin)/?autorun=1&documentNumber=L898902C3&dateOfBirth=740812&dateOfExpiry=991231")
        let state = try await page.wait(for: "document.body ? document.body.dataset.state : ''", in: ["done", "error"])
        let status = try await page.evaluate("document.getElementById('chip-status').textContent") as? String
        await page.browser.terminate()
        await rig.stop()
        #expect(state == "error")
        #expect(status?.contains("ACCESS_DENIED") == true)
    }
}
