import ChildProcesses
import Foundation
import TestSupport
import Testing

/// `gbgbridge serve --diagnostics` as an operator uses it: a real pcscd with the emulator in its vpcd
/// reader, a page that reads (once with a wrong key, once right), then `/diagnostics.json` and the
/// live `/diagnostics` page in headless Chromium (screenshot kept in artifacts/).
@Suite("gbgbridge serve --diagnostics", .serialized)
struct CLIDiagnosticsTests {
    static let binary = CLIShutdownTests.binary
    static let rightKey = #"{"documentNumber":"L898902C3","dateOfBirth":"740812","dateOfExpiry":"120415"}"#
    static let wrongKey = #"{"documentNumber":"L898902C3","dateOfBirth":"740813","dateOfExpiry":"120415"}"#

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text.prefix(300))")
    }

    @Test("mdoc reads show in /diagnostics.json: outcome, docType, verdicts, transport and counts, never an element's value",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func mdocReadThenLook() async throws {
        // A trust store whose iaca/ holds the kit's test IACA (mdoc.read never reads CSCAs for it).
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("gbg-diag-iaca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: store.appendingPathComponent("iaca"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: store) }
        try FileManager.default.copyItem(at: TestFixtures.url("mdoc/iaca.cert.pem"), to: store.appendingPathComponent("iaca/iaca.cert.pem"))
        try await PCSCDHarness.withEmulatorCommand(["--mdoc-profile", "utopia-mdl"]) {
            let serve = try await ServeProcess.start(["serve", "--port", "0", "--config", "/dev/null", "--diagnostics", "--trust", store.path])
            defer { serve.stop() }
            let operators = try #require(serve.operatorPort)
            let script = try await waitForScript(port: serve.port)
            let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
            let page = try await RawWebSocket.connect(port: serve.port, path: "/gbg-bridge/ws?token=\(token)", origin: "http://127.0.0.1:\(serve.port)", timeout: 30)
            await page.sendText(requestJSON("mdoc.read", id: "bad", data: #"{"docType":7,"timeoutSeconds":20}"#))
            let bad = try #require(await page.response(to: "bad"))
            #expect((bad["payload"] as? [String: Any])?["status"] as? String == "error")
            await page.sendText(requestJSON("mdoc.read", id: "phone", data: #"{"preset":"identity","timeoutSeconds":20}"#))
            let read = try #require(await page.response(to: "phone"))
            #expect((read["payload"] as? [String: Any])?["status"] as? String == "success", "\(read)")

            let answer = try await CLIMetricsTests.get(port: operators, path: "/diagnostics.json")
            #expect(answer.status == 200)
            let diagnostics = try Self.json(answer.body)
            // A request refused before any read is not a read.
            let reads = try #require(diagnostics["mdocReads"] as? [[String: Any]], "\(answer.body.prefix(1500))")
            try #require(reads.count == 1, "\(reads)")
            #expect(reads[0]["id"] as? String == "phone")
            #expect(reads[0]["outcome"] as? String == "verified")
            #expect(reads[0]["docType"] as? String == "org.iso.18013.5.1.mDL")
            #expect(reads[0]["issuer"] as? String == "valid" && reads[0]["device"] as? String == "valid", "\(reads[0])")
            #expect(reads[0]["transport"] as? String == "nfc")
            #expect(reads[0]["reader"] as? String == PCSCDHarness.vpcdReaderName)
            #expect((reads[0]["apdus"] as? Int ?? 0) > 2 && (reads[0]["elements"] as? Int ?? 0) > 0, "\(reads[0])")
            #expect(diagnostics["mdocReadsFinished"] as? Int == 1)
            #expect(diagnostics["mdocReadInProgress"] as? Bool == false)
            // Nothing of the document: no name, no birth date, no portrait.
            for secret in ["Mustermann", "family_name", "1971", "/9j/"] {
                #expect(!answer.body.contains(secret), "\(secret) in /diagnostics.json")
            }
            // The live page's mdoc section, as an operator's browser shows it.
            if ChromiumAvailable.value {
                let browser = try await JourneyBrowserTests.Page.open(width: 1280, height: 900)
                do {
                    try await browser.navigate("http://127.0.0.1:\(operators)/diagnostics")
                    _ = try await browser.wait(for: "document.body ? document.body.dataset.state : ''", in: ["live"], timeout: .seconds(30))
                    let text = try await browser.evaluate("document.getElementById('mdoc-reads').textContent") as? String ?? ""
                    #expect(text.contains("verified") && text.contains("org.iso.18013.5.1.mDL") && text.contains("nfc"), "\(text)")
                    #expect(!text.contains("Mustermann"))
                    try await browser.screenshot(to: JourneyBrowserTests.artifacts.appendingPathComponent("diagnostics-mdoc.png"))
                } catch {
                    await browser.browser.terminate()
                    throw error
                }
                await browser.browser.terminate()
            }
        }
    }

    @Test("reads show in /diagnostics.json and the live page; a page's Origin or another site gets 403",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func readThenLook() async throws {
        try await PCSCDHarness.withEmulatorCommand(["--passport", "Fixtures/passports/utopia-demo.json"]) {
            let serve = try await ServeProcess.start([
                "serve", "--port", "0", "--config", "/dev/null", "--diagnostics", "--trust", TestFixtures.url("pki/csca.cert.pem").path,
            ])
            defer { serve.stop() }
            let port = serve.port
            let operators = try #require(serve.operatorPort, "serve names its operators' listener")
            #expect(operators != port)
            let script = try await waitForScript(port: port)
            let token = try #require(script.firstMatch(of: /var token = "([0-9a-f]+)"/)?.1)
            let origin = "http://127.0.0.1:\(port)"
            let page = try await RawWebSocket.connect(port: port, path: "/gbg-bridge/ws?token=\(token)", origin: origin, timeout: 30)
            await page.sendText(requestJSON("nfc.read", id: "wrong", data: #"{"accessKey":\#(Self.wrongKey),"timeoutSeconds":20}"#))
            let refused = try #require(await page.response(to: "wrong"))
            #expect((refused["payload"] as? [String: Any])?["status"] as? String == "error")
            await page.sendText(requestJSON("nfc.read", id: "right", data: #"{"accessKey":\#(Self.rightKey),"timeoutSeconds":20}"#))
            let read = try #require(await page.response(to: "right"))
            #expect((read["payload"] as? [String: Any])?["status"] as? String == "success", "\(read)")

            // The journey's origin has no operator surface at all (issue 49): not even a scope to share.
            for path in ["/diagnostics.json", "/diagnostics", "/diagnostics/app.js", "/diagnostics/events", "/metrics"] {
                #expect(try await CLIMetricsTests.get(port: port, path: path).status == 404, "\(path) on the journey's origin")
            }
            // Operators' surfaces refuse pages: an Origin (the journey's own or any) or another site.
            for path in ["/diagnostics.json", "/diagnostics", "/diagnostics/app.js", "/diagnostics/events"] {
                #expect(try await CLIMetricsTests.get(port: operators, path: path, origin: origin).status == 403, "\(path)")
                #expect(try await CLIMetricsTests.get(port: operators, path: path, origin: "https://journey.example").status == 403, "\(path)")
            }
            #expect(try await Self.get(port: operators, path: "/diagnostics.json", headers: ["Sec-Fetch-Site: cross-site"]).status == 403)
            // The operators' listener answers only to its own Host (DNS rebinding).
            #expect(try await Self.get(port: operators, path: "/metrics", headers: [], host: "attacker.example:\(operators)").status == 421)

            let answer = try await CLIMetricsTests.get(port: operators, path: "/diagnostics.json")
            #expect(answer.status == 200)
            let diagnostics = try Self.json(answer.body)
            let reads = try #require(diagnostics["reads"] as? [[String: Any]])
            try #require(reads.count == 2, "\(answer.body.prefix(2000))")
            #expect(reads[0]["outcome"] as? String == "ACCESS_DENIED")
            #expect(reads[1]["outcome"] as? String == "success")
            #expect(reads[1]["reader"] as? String == PCSCDHarness.vpcdReaderName)
            // PACE as a rule; BAC when EF.CardAccess did not come back in time on a loaded CI
            // machine (the reader then falls back and reports the downgrade: PassportReaderTests).
            #expect(["PACE", "BAC"].contains(reads[1]["accessControl"] as? String ?? ""), "\(reads[1])")
            #expect((reads[1]["apdus"] as? Int ?? 0) > 5)
            #expect(reads[1]["tagLosses"] as? Int == 0)
            let phases = (reads[1]["phases"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            #expect(phases.first == "wait for card")
            #expect(phases.contains("access control") && phases.contains("verification"), "\(phases)")
            #expect(phases.contains("read DG1") && phases.contains("read DG2"), "\(phases)")
            let steps = (reads[1]["steps"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            #expect(steps.contains("access control") && steps.contains("data groups"), "\(steps)")
            #expect((reads[1]["dataGroups"] as? [String] ?? []).contains("DG2"))
            // The page, with its messages (payloads elided) and nothing open.
            let pages = try #require(diagnostics["pages"] as? [[String: Any]])
            try #require(pages.count == 1)
            #expect(pages[0]["origin"] as? String == origin)
            #expect((pages[0]["openRequests"] as? [Any])?.isEmpty == true)
            let messages = pages[0]["recentMessages"] as? [[String: Any]] ?? []
            #expect(messages.contains { $0["correlationId"] as? String == "wrong" && $0["errorCode"] as? String == "ACCESS_DENIED" })
            #expect(messages.allSatisfy { $0["payload"] as? String == "elided" })
            // A read's progress is one entry with a count, between its request and its response.
            let progress = messages.filter { $0["action"] as? String == "nfc.read.progress" }
            #expect(progress.count <= 2 && progress.contains { ($0["count"] as? Int ?? 0) > 3 }, "\(progress)")
            let readers = diagnostics["readers"] as? [[String: Any]] ?? []
            #expect(readers.contains { $0["name"] as? String == PCSCDHarness.vpcdReaderName && $0["state"] as? String == "card present" })
            // The test CSCA: the operator's page says it is a test anchor.
            #expect((diagnostics["trust"] as? [String: Any])?["status"] as? String == "warning")
            #expect(((diagnostics["trust"] as? [String: Any])?["finding"] as? String)?.contains("TEST anchors trusted") == true)
            // Nothing of the document or its key.
            for secret in ["L898902C3", "740812", "120415", "ERIKSSON", "ANNA"] { #expect(!answer.body.contains(secret), "\(secret)") }

            // The same reads through the live page, as an operator's browser shows them.
            if ChromiumAvailable.value {
                let browser = try await JourneyBrowserTests.Page.open(width: 1280, height: 1100)
                do {
                    let operatorOrigin = "http://127.0.0.1:\(operators)"
                    try await browser.navigate("\(operatorOrigin)/diagnostics")
                    let state = try await browser.wait(for: "document.body ? document.body.dataset.state : ''", in: ["live"], timeout: .seconds(30))
                    #expect(state == "live")
                    let live = try await browser.wait(for: "document.getElementById('live').textContent", in: ["live"], timeout: .seconds(10))
                    #expect(live == "live", "the page should get server-sent events")
                    try await browser.screenshot(to: JourneyBrowserTests.artifacts.appendingPathComponent("diagnostics.png"))
                    let text = try await browser.evaluate("document.getElementById('reads').textContent") as? String ?? ""
                    #expect(text.contains("success") && text.contains("ACCESS_DENIED"), "\(text)")
                    let bars = try await browser.evaluate("document.querySelectorAll('#chart rect').length") as? Int
                    #expect(bars == 2)
                    let pagesText = try await browser.evaluate("document.getElementById('pages').textContent") as? String ?? ""
                    #expect(pagesText.contains(origin))
                    // A script of the operators' own origin fetching the surfaces as subresources
                    // without the page's token: refused.
                    for path in ["/diagnostics.json", "/metrics", "/diagnostics/app.js", "/diagnostics/events"] {
                        let status = try await browser.evaluate("fetch('\(path)', { cache: 'no-store' }).then(r => r.status)") as? Int
                        #expect(status == 403, "fetch \(path) from the operators' own origin: \(status ?? -1)")
                    }
                    // A journey page (the bridge's origin, as --static or the demo serves one) has
                    // none of them, and the operators' origin is another one: a cross-origin fetch
                    // carries an Origin and is refused (and CORS keeps its answer from the script).
                    try await browser.navigate("\(origin)/gbg-bridge.js")
                    for path in ["/diagnostics.json", "/diagnostics/events", "/metrics"] {
                        let local = try await browser.evaluate("fetch('\(path)', { cache: 'no-store' }).then(r => r.status)") as? Int
                        #expect(local == 404, "fetch \(path) on the journey's origin: \(local ?? -1)")
                        let remote = try await browser.evaluate(
                            "fetch('\(operatorOrigin)\(path)', { cache: 'no-store' }).then(r => 'read ' + r.status, e => 'blocked')") as? String
                        #expect(remote == "blocked", "fetch \(operatorOrigin)\(path) from the journey's origin: \(remote ?? "?")")
                    }
                    // Typed in the address bar (a top-level navigation): served.
                    try await browser.navigate("\(operatorOrigin)/diagnostics.json")
                    let shown = try await browser.wait(for: "document.body && document.body.textContent.includes('\"reads\"') ? 'yes' : 'no'",
                                                       in: ["yes"], timeout: .seconds(20))
                    #expect(shown == "yes", "navigating to /diagnostics.json should show it")
                } catch {
                    await browser.browser.terminate()
                    throw error
                }
                await browser.browser.terminate()
            }
        }
    }

    @Test("without --diagnostics there is no /diagnostics",
          .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "needs the gbgbridge binary (swift build)"))
    func offByDefault() async throws {
        let serve = try await ServeProcess.start(["serve", "--port", "0", "--config", "/dev/null"])
        defer { serve.stop() }
        let port = serve.port
        #expect(try await CLIMetricsTests.get(port: port, path: "/diagnostics.json").status == 404)
        #expect(try await CLIMetricsTests.get(port: port, path: "/diagnostics").status == 404)
        let operators = try #require(serve.operatorPort, "the operators' listener serves /metrics without --diagnostics")
        #expect(try await CLIMetricsTests.get(port: operators, path: "/diagnostics.json").status == 404)
        #expect(try await CLIMetricsTests.get(port: operators, path: "/metrics").status == 200)
    }

    /// GET `path` with extra header lines.
    static func get(port: Int, path: String, headers: [String], host: String? = nil) async throws -> (status: Int, body: String) {
        let socket = try await RawSocket.connect(port: port, timeout: 10)
        await socket.send("GET \(path) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\n" + headers.map { $0 + "\r\n" }.joined() + "Connection: close\r\n\r\n")
        var bytes: [UInt8] = []
        while let chunk = await socket.receive(), !chunk.isEmpty { bytes += chunk }
        let text = String(decoding: bytes, as: UTF8.self)
        return (Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0, text)
    }
}
