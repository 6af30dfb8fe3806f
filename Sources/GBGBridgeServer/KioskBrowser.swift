import Foundation
import GBGBridge
import Logging
import Synchronization

/// Settings of a `KioskBrowser`.
public struct KioskConfiguration: Sendable {
    /// The journey to open (its origin is always allowed).
    public var journeyURL: URL
    /// Further origins the kiosk may show and that may use the bridge (exact match).
    public var allowedOrigins: [String] = []
    /// Run Chromium headless (test rigs, CI) instead of full-screen `--kiosk`.
    public var headless = false
    /// Chromium's profile directory; a fresh temporary one when `nil`.
    public var userDataDirectory: URL?
    /// The bridge configuration (bootstrap script, handler name, version) every page gets.
    public var bridge = BridgeConfiguration(hostVersion: "1.0", capabilities: [:])
    /// Window size (headless) in pixels.
    public var windowSize = (width: 1280, height: 1024)
    /// Extra Chromium flags.
    public var extraArguments: [String] = []
    /// Messages a page may post per second on average (bursts of twice that); the excess is
    /// dropped and counted (a DevTools event stream cannot be slowed down like a socket).
    public var maxMessagesPerSecond = 200
    /// The largest message a page may post.
    public var maxMessageBytes = 8 << 20
    /// How often a crashed browser is restarted before the kiosk gives up.
    public var maxRestarts = 5
    /// Requests for actions no capability handles are answered `unsupported` at once (as
    /// `BridgeServerConfiguration.answerUnhandledRequests`).
    public var answerUnhandledRequests = true
    /// Bytes of page messages waiting to be handled that the kiosk holds at most; beyond that new
    /// ones are dropped and counted (a page flooding with large messages).
    public var maxQueuedMessageBytes = 64 << 20
    /// Follows the kiosk's page for operators' diagnostics (as `BridgeServerConfiguration.pages`).
    public var pages: PageDiagnostics?
    /// Chrome DevTools may attach to the kiosk's page here (`--inspect`); off when `nil`.
    public var inspect: KioskInspectAddress?

    public init(journeyURL: URL) { self.journeyURL = journeyURL }
}

/// Runs an unmodified iOS journey in Chromium, bridged the way `BridgeWebView` bridges WKWebView:
/// the bootstrap and a `window.webkit.messageHandlers.gbgBridge` shim are injected at document
/// start (`Page.addScriptToEvaluateOnNewDocument` + `Runtime.addBinding`), page messages arrive
/// through `Runtime.bindingCalled`, and host messages are delivered with `Runtime.evaluate`
/// pinned to the page's execution context. The DevTools protocol runs over
/// `--remote-debugging-pipe`, never a port.
///
/// Only the main frame's default world on an allowed origin reaches the host; the main frame
/// may navigate only to allowed origins; new windows are closed; a crashed renderer or browser
/// is restarted with the journey URL. Every page (document) gets a `BridgeHost` of its own; when
/// the document goes away its requests are cancelled.
@MainActor
public final class KioskBrowser {
    public typealias HostSetup = @MainActor (BridgeHost) -> Void

    static let bindingName = "__gbgBridgePost"

    public let configuration: KioskConfiguration
    private let setUpHost: HostSetup
    private let tearDownHost: HostSetup
    let logger: Logger

    private var browser: ChromiumProcess?
    private var sessionId: String?
    private var targetId: String?
    private var mainFrameId: String?
    private var eventTask: Task<Void, Never>?
    private var restarts = 0
    private var stopping = false
    /// Forwards `configuration.inspect` to Chromium's loopback DevTools port (non-loopback addresses).
    private var inspector: KioskInspector?

    /// The document currently bridged: its execution context and host.
    private(set) var page: PageBinding?
    /// Counters tests and operators can read.
    public private(set) var droppedMessages = 0
    public private(set) var blockedNavigations = 0
    public private(set) var closedWindows = 0
    /// Hosts created so far (one per allowed document).
    public private(set) var pagesBridged = 0
    /// The journey's lines in the log, throttled per target and origin across reloads.
    private var logThrottles = KioskLogThrottles()

    /// Whether a line about the journey (of `origin`) may be logged now; what was left out before it.
    func admitLine(_ kind: ConsoleLogThrottle.Kind, origin: String) -> [ConsoleLogThrottle.Kind: Int]? {
        logThrottles.admit(target: targetId, origin: origin, kind, now: ContinuousClock.now)
    }

    public init(configuration: KioskConfiguration, logger: Logger = Logger(label: "gbgbridge.kiosk"),
                setUpHost: @escaping HostSetup, tearDownHost: @escaping HostSetup = { _ in }) {
        self.configuration = configuration
        self.setUpHost = setUpHost
        self.tearDownHost = tearDownHost
        self.logger = logger
    }

    /// The host of the page shown now, if it is bridged.
    public var currentHost: BridgeHost? { page?.host }

    /// Origins allowed to be shown and bridged.
    public var allowedOrigins: Set<String> {
        var origins = Set(configuration.allowedOrigins.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        if let origin = BridgeServer.origin(of: configuration.journeyURL) { origins.insert(origin) }
        return origins
    }

    // MARK: Lifecycle

    /// Starts Chromium and opens the journey.
    public func start() async throws {
        stopping = false
        if let address = configuration.inspect {
            if address.chromiumListensItself {
                try KioskInspector.check(address)
            } else if inspector == nil {
                inspector = try KioskInspector(address: address)
            }
            logger.warning("Chrome DevTools can attach to the kiosk's page on \(address) (--inspect): whoever reaches it controls the kiosk")
        }
        try await launch()
    }

    /// Closes the browser and cancels the page's requests.
    public func stop() async {
        stopping = true
        eventTask?.cancel()
        eventTask = nil
        dropPage(reason: "the kiosk is shutting down")
        inspector?.stop()
        inspector = nil
        if let browser { await browser.terminate(removeProfile: configuration.userDataDirectory == nil) }
        browser = nil
    }

    private func launch() async throws {
        var arguments = configuration.headless
            ? ["--headless=new", "--window-size=\(configuration.windowSize.width),\(configuration.windowSize.height)", "--hide-scrollbars"]
            : ["--kiosk", "--start-fullscreen", "--noerrdialogs", "--disable-infobars", "--disable-session-crashed-bubble"]
        arguments += ["--disable-gpu", "--disable-features=Translate,MediaRouter", "--autoplay-policy=no-user-gesture-required"]
        if let address = configuration.inspect {
            // Chromium's DevTools server listens on 127.0.0.1 only; elsewhere it takes a free
            // loopback port (written to DevToolsActivePort) and the inspector forwards to it.
            arguments.append("--remote-debugging-port=\(address.chromiumListensItself ? address.port : 0)")
        }
        arguments += configuration.extraArguments
        arguments.append("about:blank")
        if configuration.inspect != nil, let profile = configuration.userDataDirectory {
            try? FileManager.default.removeItem(at: profile.appendingPathComponent("DevToolsActivePort"))
        }
        let browser = try ChromiumProcess(arguments: arguments, userDataDirectory: configuration.userDataDirectory,
                                          maxQueuedPageMessageBytes: configuration.maxQueuedMessageBytes,
                                          eventMethods: Self.handledEvents)
        self.browser = browser
        let devTools = browser.devTools
        eventTask = Task { [weak self] in
            for await event in devTools.events {
                devTools.consumed(event)
                guard let self else { return }
                await self.handle(event)
            }
            await self?.browserEnded()
        }
        try await devTools.send("Browser.setDownloadBehavior", params: ["behavior": "deny"])
        // Every new target (window, iframe, worker) is attached and paused until we have set it up.
        try await devTools.send("Target.setDiscoverTargets", params: ["discover": true])
        let target = try await devTools.send("Target.createTarget", params: ["url": "about:blank"])
        guard let targetId = target["targetId"] as? String else { throw DevToolsError("Chromium made no page") }
        self.targetId = targetId
        let attached = try await devTools.send("Target.attachToTarget", params: ["targetId": targetId, "flatten": true])
        guard let sessionId = attached["sessionId"] as? String else { throw DevToolsError("could not attach to the page") }
        self.sessionId = sessionId
        try await prepare(session: sessionId, isMainPage: true)
        // Close the initial about:blank window Chromium opened by itself.
        let targets = try await devTools.send("Target.getTargets")
        for info in (targets["targetInfos"] as? [[String: Any]]) ?? [] {
            if info["type"] as? String == "page", let id = info["targetId"] as? String, id != targetId {
                devTools.post("Target.closeTarget", params: ["targetId": id])
            }
        }
        try await devTools.send("Page.navigate", params: ["url": configuration.journeyURL.absoluteString], sessionId: sessionId)
        logger.info("kiosk showing \(configuration.journeyURL.absoluteString)")
        if let inspector { await forward(inspector, to: browser) }
    }

    /// Points the inspector at the port Chromium chose (its profile's DevToolsActivePort, first line).
    private func forward(_ inspector: KioskInspector, to browser: ChromiumProcess) async {
        let file = browser.userDataDirectory.appendingPathComponent("DevToolsActivePort")
        for _ in 0..<100 {
            if let text = try? String(contentsOf: file, encoding: .utf8),
               let port = text.split(separator: "\n").first.flatMap({ Int($0) }), (1...65_535).contains(port) {
                inspector.forward(to: port)
                return
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        logger.error("--inspect: Chromium did not say which DevTools port it listens on; DevTools cannot attach")
    }

    /// Sets up a page session: injection, binding, context tracking, navigation policy, and
    /// auto-attach for its out-of-process iframes (which get no binding and are never bridged).
    private func prepare(session: String, isMainPage: Bool) async throws {
        guard let devTools = browser?.devTools else { return }
        try await devTools.send("Page.enable", sessionId: session)
        try await devTools.send("Runtime.enable", sessionId: session)
        if isMainPage {
            try await devTools.send("Inspector.enable", sessionId: session)
            try await devTools.send("Runtime.addBinding", params: ["name": Self.bindingName], sessionId: session)
            try await devTools.send("Page.addScriptToEvaluateOnNewDocument",
                                    params: ["source": injectedScript, "runImmediately": true], sessionId: session)
            try await devTools.send("Fetch.enable", params: ["patterns": [["resourceType": "Document", "requestStage": "Request"]]],
                                    sessionId: session)
            let tree = try await devTools.send("Page.getFrameTree", sessionId: session)
            mainFrameId = ((tree["frameTree"] as? [String: Any])?["frame"] as? [String: Any])?["id"] as? String
        }
        try await devTools.send("Target.setAutoAttach", params: ["autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true],
                                sessionId: session)
    }

    /// Bootstrap, then the shim mapping the iOS message handler onto the binding. Runs in every
    /// frame; only the main frame's default world is ever listened to.
    var injectedScript: String {
        let handler = BridgeScript.jsString(configuration.bridge.messageHandlerName)
        return """
            \(configuration.bridge.effectiveBootstrapScript)
            (function () {
              'use strict';
              var post = window[\(BridgeScript.jsString(Self.bindingName))];
              if (typeof post !== 'function') { return; }
              window.webkit = window.webkit || {};
              window.webkit.messageHandlers = window.webkit.messageHandlers || {};
              window.webkit.messageHandlers[\(handler)] = {
                postMessage: function (message) { post(typeof message === 'string' ? message : JSON.stringify(message)); }
              };
            })();
            """
    }

    // MARK: Events

    /// The DevTools events `handle(_:)` acts on; the pipe drops every other one as it is read.
    static let handledEvents: Set<String> = [
        "Runtime.executionContextCreated", "Runtime.executionContextDestroyed", "Runtime.executionContextsCleared",
        "Runtime.bindingCalled", "Fetch.requestPaused", "Target.attachedToTarget", "Target.targetCreated",
        "Inspector.targetCrashed", "Target.targetCrashed", "Target.targetDestroyed",
        // Console errors and uncaught exceptions, for /diagnostics (the pipe passes only errors
        // and assertions of console calls, and holds at most a few hundred).
        "Runtime.consoleAPICalled", "Runtime.exceptionThrown",
    ]

    private func handle(_ event: DevToolsConnection.Event) async {
        switch event.method {
        case "Runtime.executionContextCreated" where event.sessionId == sessionId:
            contextCreated(event.params["context"] as? [String: Any] ?? [:])
        case "Runtime.executionContextDestroyed" where event.sessionId == sessionId:
            if let id = event.params["executionContextId"] as? Int, id == page?.contextId {
                dropPage(reason: "the page went away")
            }
        case "Runtime.executionContextsCleared" where event.sessionId == sessionId:
            dropPage(reason: "the page went away")
        case "Runtime.bindingCalled" where event.sessionId == sessionId:
            bindingCalled(event.params)
        case "Runtime.consoleAPICalled" where event.sessionId == sessionId:
            consoleCalled(event.params)
        case "Runtime.exceptionThrown" where event.sessionId == sessionId:
            exceptionThrown(event.params)
        case "Fetch.requestPaused" where event.sessionId == sessionId:
            requestPaused(event.params)
        case "Target.attachedToTarget":
            attached(event.params)
        case "Target.targetCreated":
            targetCreated(event.params["targetInfo"] as? [String: Any] ?? [:])
        case "Inspector.targetCrashed" where event.sessionId == sessionId && !stopping:
            logger.error("the journey's renderer crashed; reloading the journey")
            dropPage(reason: "the page crashed")
            await recoverPage()
        case "Target.targetCrashed":
            if let id = event.params["targetId"] as? String, id == targetId, !stopping {
                logger.error("the journey's renderer crashed (\(event.params["status"] ?? "?")); reloading the journey")
                dropPage(reason: "the page crashed")
                await recoverPage()
            }
        case "Target.targetDestroyed":
            if let id = event.params["targetId"] as? String, id == targetId, !stopping {
                logger.error("the journey's window was closed; reopening it")
                dropPage(reason: "the page was closed")
                await recoverPage()
            }
        default:
            break
        }
    }

    private func contextCreated(_ context: [String: Any]) {
        guard let id = context["id"] as? Int, let aux = context["auxData"] as? [String: Any],
              aux["isDefault"] as? Bool == true, let frame = aux["frameId"] as? String, frame == mainFrameId else { return }
        let origin = context["origin"] as? String ?? ""
        guard allowedOrigins.contains(origin) else {
            if let dropped = admitLine(.refused, origin: origin) {
                logger.warning("not bridging a document from \(origin.isEmpty ? "(no origin)" : LogText.clip(origin))\(ConsoleLogThrottle.note(dropped))")
            }
            return
        }
        dropPage(reason: "the page went away")
        let transport = KioskTransport()
        let bridged = BridgedPage(configuration.pageSettings, transport: transport, origin: origin, via: "kiosk",
                                  setUpHost: setUpHost, tearDownHost: tearDownHost)
        let binding = PageBinding(contextId: id, uniqueId: context["uniqueId"] as? String ?? "", page: bridged,
                                  transport: transport, rate: configuration.maxMessagesPerSecond)
        transport.deliverToPage = { [weak self, weak binding] json in
            guard let self, let binding else { return }
            self.deliver(json, to: binding)
        }
        page = binding
        pagesBridged += 1
        if let dropped = admitLine(.load, origin: origin) {
            logger.info("bridging \(LogText.clip(origin)) (context \(id))\(ConsoleLogThrottle.note(dropped))")
        }
    }

    private func dropPage(reason: String) {
        guard let binding = page else { return }
        page = nil
        binding.transport.deliverToPage = nil
        binding.page.end(reason: reason)
    }

    private func bindingCalled(_ params: [String: Any]) {
        guard params["name"] as? String == Self.bindingName else { return }
        guard let binding = page, params["executionContextId"] as? Int == binding.contextId else {
            droppedMessages += 1
            logger.warning("dropped a bridge message from a frame or world that is not the journey's main page")
            return
        }
        guard let payload = params["payload"] as? String, payload.utf8.count <= configuration.maxMessageBytes else {
            droppedMessages += 1
            logger.warning("dropped an oversized bridge message")
            return
        }
        guard binding.bucket.tryTake() else {
            droppedMessages += 1
            binding.droppedInARow += 1
            if binding.droppedInARow == 1 {
                logger.warning("the page posts more than \(configuration.maxMessagesPerSecond) messages a second; dropping the excess")
            }
            return
        }
        if binding.droppedInARow > 0 {
            logger.warning("dropped \(binding.droppedInARow) messages of a flooding page")
            binding.droppedInARow = 0
        }
        binding.page.receive(payload)
    }

    private func deliver(_ json: String, to binding: PageBinding) {
        guard let devTools = browser?.devTools, let sessionId, page === binding else { return }
        var params: [String: Any] = ["expression": "window.GBGBridge.receive(\(json))", "returnByValue": true]
        if binding.uniqueId.isEmpty { params["contextId"] = binding.contextId } else { params["uniqueContextId"] = binding.uniqueId }
        // Posted in order over the pipe; a context that is gone makes the evaluation fail, and the
        // message is dropped rather than landing in another page.
        devTools.post("Runtime.evaluate", params: params, sessionId: sessionId)
    }

    private func requestPaused(_ params: [String: Any]) {
        guard let devTools = browser?.devTools, let sessionId, let requestId = params["requestId"] as? String else { return }
        let url = ((params["request"] as? [String: Any])?["url"] as? String).flatMap(URL.init(string:))
        let frame = params["frameId"] as? String
        let origin = url.flatMap(BridgeServer.origin(of:))
        let isMainFrame = frame == nil || frame == mainFrameId
        if !isMainFrame || url?.scheme == "about" || (origin.map { allowedOrigins.contains($0) } ?? false) {
            devTools.post("Fetch.continueRequest", params: ["requestId": requestId], sessionId: sessionId)
        } else {
            blockedNavigations += 1
            logger.warning("blocked navigation to \(origin ?? url?.absoluteString ?? "?"): not an allowed origin")
            // "Aborted" leaves the current document in place (BlockedByClient would show an error page).
            devTools.post("Fetch.failRequest", params: ["requestId": requestId, "errorReason": "Aborted"], sessionId: sessionId)
        }
    }

    private func attached(_ params: [String: Any]) {
        guard let devTools = browser?.devTools, let session = params["sessionId"] as? String,
              let info = params["targetInfo"] as? [String: Any] else { return }
        let type = info["type"] as? String
        if type == "page", let id = info["targetId"] as? String, id != targetId {
            closedWindows += 1
            logger.warning("closed a new window the page tried to open")
            devTools.post("Target.closeTarget", params: ["targetId": id])
            return
        }
        // Out-of-process iframes and workers: let them run, with nothing bridged.
        devTools.post("Target.setAutoAttach", params: ["autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true], sessionId: session)
        devTools.post("Runtime.runIfWaitingForDebugger", sessionId: session)
    }

    private func targetCreated(_ info: [String: Any]) {
        guard let devTools = browser?.devTools, info["type"] as? String == "page", let id = info["targetId"] as? String,
              id != targetId, targetId != nil, info["openerId"] != nil else { return }
        closedWindows += 1
        logger.warning("closed a new window the page tried to open")
        devTools.post("Target.closeTarget", params: ["targetId": id])
    }

    private func recoverPage() async {
        guard !stopping, let devTools = browser?.devTools else { return }
        do {
            logger.debug("recovery: opening a new page")
            let target = try await devTools.send("Target.createTarget", params: ["url": "about:blank"])
            guard let id = target["targetId"] as? String else { return }
            logger.debug("recovery: attaching to \(id)")
            let old = targetId
            targetId = id
            let attached = try await devTools.send("Target.attachToTarget", params: ["targetId": id, "flatten": true])
            guard let session = attached["sessionId"] as? String else { return }
            sessionId = session
            logger.debug("recovery: preparing \(session)")
            try await prepare(session: session, isMainPage: true)
            logger.debug("recovery: navigating")
            if let old { devTools.post("Target.closeTarget", params: ["targetId": old]) }
            // Posted, not awaited: this runs inside the event loop, and the navigation's document
            // request pauses in Fetch until the loop handles it.
            devTools.post("Page.navigate", params: ["url": configuration.journeyURL.absoluteString], sessionId: session)
        } catch {
            logger.error("could not reopen the journey: \(error)")
        }
    }

    private func browserEnded() async {
        dropPage(reason: "the browser stopped")
        guard !stopping else { return }
        restarts += 1
        guard restarts <= configuration.maxRestarts else {
            logger.critical("Chromium stopped \(restarts) times; giving up")
            return
        }
        logger.error("Chromium stopped; restarting it (\(restarts)/\(configuration.maxRestarts))")
        if let browser { await browser.terminate(removeProfile: configuration.userDataDirectory == nil) }
        browser = nil
        try? await Task.sleep(for: .seconds(1))
        do { try await launch() } catch { logger.error("restarting Chromium failed: \(error)") }
    }

    // MARK: For test rigs and operators

    /// Evaluates `expression` in the journey's page (main world) and returns its JSON-able value;
    /// `userGesture` makes it count as a user action (as a tap would).
    public func evaluate(_ expression: String, userGesture: Bool = false, timeout: Duration = .seconds(30)) async throws -> Any? {
        guard let devTools = browser?.devTools, let sessionId else { throw DevToolsError("the kiosk is not running") }
        let result = try await devTools.send("Runtime.evaluate",
                                             params: ["expression": expression, "returnByValue": true, "awaitPromise": true,
                                                      "userGesture": userGesture],
                                             sessionId: sessionId, timeout: timeout)
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Navigates the kiosk (subject to the navigation policy).
    public func navigate(to url: URL) async throws {
        guard let devTools = browser?.devTools, let sessionId else { throw DevToolsError("the kiosk is not running") }
        try await devTools.send("Page.navigate", params: ["url": url.absoluteString], sessionId: sessionId)
    }

    /// A PNG screenshot of the page.
    public func screenshot() async throws -> Data {
        guard let devTools = browser?.devTools, let sessionId else { throw DevToolsError("the kiosk is not running") }
        let shot = try await devTools.send("Page.captureScreenshot", params: ["format": "png"], sessionId: sessionId)
        guard let base64 = shot["data"] as? String, let data = Data(base64Encoded: base64) else { throw DevToolsError("no screenshot") }
        return data
    }

    /// Crashes the page's renderer (to test recovery).
    public func crashRenderer() {
        guard let devTools = browser?.devTools, let sessionId else { return }
        devTools.post("Page.crash", sessionId: sessionId)
    }

    /// The browser's process id.
    public var browserProcessID: Int32? { browser?.pid }
}

/// Delivers host messages into the kiosk page (set by `KioskBrowser`).
@MainActor
final class KioskTransport: BridgeTransport {
    var deliverToPage: (@MainActor (String) -> Void)?
    func deliver(_ json: String) { deliverToPage?(json) }
}
