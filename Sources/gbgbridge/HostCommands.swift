import ArgumentParser
import MdocEmulator
import Cameras
import CVCertificates
import CGBGBridgeCLI
import Foundation
import GBGBridge
import GBGBridgeHost
import GBGBridgeRead
import GBGBridgeNFC
import GBGBridgeServer
import GBGBridgeStubs
import Logging
import MRTD
import MRTDEmulator
import SmartCard

/// Builds the host and runs it until SIGINT/SIGTERM; a failure is printed and becomes the exit code.
@MainActor
func runHost(command: String, _ make: () throws -> HostApplication, onRunning: @escaping @Sendable (HostPorts) -> Void) async throws {
    do {
        try await make().run(onRunning: onRunning)
    } catch let failure as HostServer.Failure {
        printError("gbgbridge \(command): \(failure)")
        throw ExitCode(failure.exitCode)
    }
}

/// `gbgbridge serve`: the host for real readers.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the bridge host: loopback HTTP + WebSocket, nfc.read through pcscd, the cameras.",
        discussion: """
            Pages load http://127.0.0.1:PORT/gbg-bridge.js, which gives them \
            window.webkit.messageHandlers.gbgBridge and window.GBGBridge.receive as on iOS. Only \
            pages from --allow-origin origins (and this server's own) may connect. Every PC/SC \
            reader is used, so an emulated card in the vpcd reader is read like a real one.

            With --kiosk URL the host also runs Chromium in kiosk mode on the journey and bridges \
            it directly (DevTools over a pipe): the journey needs no change at all. The kiosk \
            stays on the journey's origin and --allow-origin origins. SIGTERM stops everything.

            Settings come from /etc/gbgbridge/gbgbridge.conf when it exists (or --config FILE): \
            YAML, one key per option below without its dashes (port: 8450, allow-origin: \
            [https://journey.example.com], trust: /etc/gbgbridge/trust, diagnostics: true). \
            Options given here override the file; an unknown key in it is an error.

            --diagnostics adds /diagnostics (a live page for operators), /diagnostics.json and \
            /diagnostics/events; like /metrics they are refused (403) to any request from a page.

            Cameras: camera.document.capture answers a PNG photo and camera.selfie.capture a JPEG \
            from the V4L2 camera --document-camera / --selfie-camera name (auto: the first that \
            works, else the drawn placeholder; stub: always the drawing). No detection, cropping \
            or liveness: a plain photo, as the iOS stubs take on a device.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Settings file (YAML). Default: \(ServeSettings.defaultPath) when it exists.", valueName: "FILE"))
    var config: String?

    @Option(name: .long, help: "Port on 127.0.0.1 (default: \(ServeSettings.defaultPort)).")
    var port: Int?

    @Option(name: .long, help: ArgumentHelp("An origin allowed to use the bridge, e.g. https://journey.example.com (exact match); repeatable.", valueName: "URL"))
    var allowOrigin: [String] = []

    @OptionGroup var trustOptions: TrustOptions

    @OptionGroup var terminalOptions: TerminalOptions

    @Option(name: .long, help: "Serve the files of this directory at / (for a local journey).")
    var `static`: String?

    @Option(name: .long, help: "Open this journey URL in Chromium kiosk mode, bridged like WKWebView (no script needed in the page).")
    var kiosk: String?

    @Flag(name: .long, inversion: .prefixedNo, help: "Run the kiosk browser headless (test rigs, CI).")
    var headless: Bool?

    @Option(name: .long, help: "Chromium profile directory for the kiosk (default: a fresh temporary one).")
    var kioskProfile: String?

    @Option(name: .long, help: ArgumentHelp("With --kiosk: let Chrome DevTools attach to the kiosk's page (chrome://inspect, through an SSH tunnel), as Web Inspector does on iOS. Off by default; loopback unless HOST is given. No authentication: whoever reaches the port controls the kiosk.", valueName: "[HOST:]PORT"))
    var inspect: String?

    @Option(name: .long, help: ArgumentHelp("Also read through this libnfc device (PN532/PN533), e.g. pn532_uart:/dev/ttyUSB0; repeatable. Its reader name is libnfc:<connstring>.", valueName: "CONNSTRING"))
    var libnfcDevice: [String] = []

    @Flag(name: .long, inversion: .prefixedNo, help: "Also use the devices libnfc finds itself (/etc/nfc/libnfc.conf, USB).")
    var libnfcDiscover: Bool?

    @Flag(name: .long, inversion: .prefixedNo, help: "Log debug details.")
    var verbose: Bool?

    @Option(name: .long, help: ArgumentHelp("Also serve GET /metrics (Prometheus text format) alone on this address, for a fleet's Prometheus (the operators' listener has /metrics too).", valueName: "HOST:PORT"))
    var metricsListen: ListenAddress?

    @Option(name: .long, help: ArgumentHelp("Where the operators' surfaces listen: /metrics, and with --diagnostics /diagnostics, /diagnostics.json and /diagnostics/events (default: 127.0.0.1 and the journey's port + 1). Never the journey's origin: a journey's scripts and service workers share no scope with them.", valueName: "HOST:PORT"))
    var operatorListen: ListenAddress?

    @Option(name: .long, help: ArgumentHelp("Log as text, or as one JSON object a line ({\"time\",\"level\",\"label\",\"event\",\"fields\"}) for journald and log shippers.", valueName: "text|json"))
    var logFormat: LogFormat?

    @Flag(name: .long, inversion: .prefixedNo, help: "Serve /diagnostics (live page), /diagnostics.json and /diagnostics/events for operators, on the operators' listener (--operator-listen).")
    var diagnostics: Bool?

    @Option(name: .long, help: ArgumentHelp("With --diagnostics: /diagnostics/events streams open at once (1–64, default 8); a new one ends the oldest, so operators' pages never take the connections journeys need.", valueName: "N"))
    var diagnosticsStreams: Int?

    @Option(name: .long, help: ArgumentHelp("Seconds an nfc.read may take once the card is there, for pages that give no readTimeoutSeconds (5–600, default 60); past it the page gets CARD_TIMEOUT and the reader is free.", valueName: "seconds"))
    var readTimeout: Int?

    @OptionGroup var cameraOptions: CameraOptions

    /// The command line over the configuration file over the defaults.
    func effective() throws -> HostSettings {
        do {
            let loaded = try ServeSettings.load(path: config)
            var given = ServeSettings()
            (given.port, given.allowOrigin, given.trust, given.staticDirectory) = (port, allowOrigin, trustOptions.trust, `static`)
            (given.kiosk, given.headless, given.kioskProfile, given.inspect) = (kiosk, headless, kioskProfile, inspect)
            (given.libnfcDevice, given.libnfcDiscover, given.verbose) = (libnfcDevice, libnfcDiscover, verbose)
            (given.metricsListen, given.logFormat, given.diagnostics) = (metricsListen?.description, logFormat?.rawValue, diagnostics)
            given.operatorListen = operatorListen?.description
            (given.terminalCertificates, given.terminalKey) = (terminalOptions.terminalCertificates, terminalOptions.terminalKey)
            (given.diagnosticsStreams, given.readTimeout) = (diagnosticsStreams, readTimeout)
            (given.documentCamera, given.selfieCamera) = (cameraOptions.documentCamera, cameraOptions.selfieCamera)
            (given.documentResolution, given.selfieResolution) = (cameraOptions.documentResolution, cameraOptions.selfieResolution)
            return try HostSettings(commandLine: given, file: loaded?.settings, filePath: loaded?.path)
        } catch let problem as HostSettings.Problem {
            throw ValidationError(problem.description)
        } catch {
            throw ValidationError("configuration: \(error)")
        }
    }

    func validate() throws {
        _ = try effective()
    }

    @MainActor
    func run() async throws {
        CGBGBridgeCLI_line_buffer_stdout()
        let settings = try effective()
        let logger = makeLogger("gbgbridge", verbose: settings.verbose, format: settings.logFormat)
        if let file = settings.configFile { logger.info("settings from \(file)") }
        let trust = try TrustOptions(paths: settings.trust).load()
        if trust.isEmpty { logger.warning("no --trust anchors: passive authentication will report documents as untrusted") }
        HostMetrics.bootstrap(trust: trust)
        let withDiagnostics = settings.diagnostics
        try await runHost(command: "serve") {
            try HostApplication(settings: settings, trust: trust, logger: logger)
        } onRunning: { ports in
            print("GBGBridge host on http://127.0.0.1:\(ports.main)/  (script: http://127.0.0.1:\(ports.main)/gbg-bridge.js)")
            if let operators = ports.operators {
                let host = settings.operatorListen?.host ?? "127.0.0.1"
                print("Operators on http://\(host.contains(":") ? "[\(host)]" : host):\(operators)/  (/metrics\(withDiagnostics ? ", /diagnostics" : ""))")
            }
        }
    }
}

/// `gbgbridge demo`: everything with a virtual passport and the sample journey.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the host with a virtual passport and the bundled sample journey (no hardware needed).",
        discussion: """
            Serves the sample journey at http://127.0.0.1:PORT/ and answers nfc.read from an \
            in-process virtual passport (passports/NAME.json, EF.SOD signed by the test PKI, \
            trusted by the demo only). Open the printed URL in a browser.

            The journey, passports and test PKI are looked for in $GBGBRIDGE_DATA, ./Fixtures \
            (a checkout), the checkout above the executable, then /usr/share/gbgbridge (the \
            Debian package), so demo works from any directory.
            """
    )

    @Option(name: .long, help: "Port on 127.0.0.1 (0 picks a free one).")
    var port: Int = 8450

    @Option(name: .long, help: "Virtual passport: a name in passports/ (utopia-demo: PACE, Chip and Active Authentication, a drawn face; utopia-td3-jpeg, utopia-td1-idcard, utopia-td3-jpeg2000, utopia-td3-pace, utopia-id-pace-only), a field profile (field/de-passport-2023 …, see gbgbridge emulate --help) or a description file.")
    var passport = "utopia-demo"

    @Option(name: .long, help: "The journey directory to serve (default: the sample journey, journey/ in the data directory).")
    var journey: String?

    @Flag(name: .long, help: "Log debug details.")
    var verbose = false

    @Option(name: .long, help: ArgumentHelp("Log as text, or as one JSON object a line ({\"time\",\"level\",\"label\",\"event\",\"fields\"}) for journald and log shippers.", valueName: "text|json"))
    var logFormat: LogFormat = .text

    @Flag(name: .long, help: "Serve /diagnostics (live page), /diagnostics.json and /diagnostics/events for operators (on the operators' listener).")
    var diagnostics = false

    @Option(name: .long, help: ArgumentHelp("Where /metrics and /diagnostics listen (default: 127.0.0.1 and --port + 1, or a free port when that is taken).", valueName: "HOST:PORT"))
    var operatorListen: ListenAddress?

    @Flag(name: .long, help: "Extended Access Control: the virtual passport keeps fingerprints (DG3) and irises (DG4) behind Terminal Authentication, and the host authenticates as the test Inspection System of Fixtures/cvc; the journey shows them.")
    var eac = false

    @Option(name: .long, help: ArgumentHelp("A virtual phone at the reader instead of the passport: an mdoc profile (utopia-mdl, utopia-pid) or a profile file; the journey's step 6 reads it with mdoc.read.", valueName: "profile"))
    var mdoc: String?

    @Option(name: .customLong("mdoc-handover"), help: ArgumentHelp("With --mdoc: static or negotiated engagement.", valueName: "mode"))
    var mdocHandover = "static"

    @OptionGroup var cameraOptions: CameraOptions

    /// The demo draws its captures unless a camera is named.
    func cameras() throws -> (document: CameraSettings, selfie: CameraSettings) {
        do {
            return (try HostSettings.camera(cameraOptions.documentCamera ?? "stub", cameraOptions.documentResolution, base: .document, option: "document"),
                    try HostSettings.camera(cameraOptions.selfieCamera ?? "stub", cameraOptions.selfieResolution, base: .selfie, option: "selfie"))
        } catch {
            throw ValidationError(error.description)
        }
    }

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard ["static", "negotiated"].contains(mdocHandover) else { throw ValidationError("--mdoc-handover is static or negotiated") }
        _ = try cameras()
    }

    @MainActor
    func run() async throws {
        CGBGBridgeCLI_line_buffer_stdout()
        let logger = makeLogger("gbgbridge", verbose: verbose, format: logFormat)
        let demo: DemoHost
        let cameras = try cameras()
        do {
            demo = try DemoHost(passport: passport, eac: eac, journey: journey, port: port, diagnostics: diagnostics,
                                documentCamera: cameras.document, selfieCamera: cameras.selfie, operatorListen: operatorListen,
                                mdoc: mdoc, mdocHandover: MdocHolder.Handover(rawValue: mdocHandover) ?? .static)
        } catch {
            printError("gbgbridge demo: \(error.reason)")
            throw ExitCode(2)
        }
        HostMetrics.bootstrap(trust: demo.trust)
        try await runHost(command: "demo") {
            try demo.application(logger: logger)
        } onRunning: { ports in
            demo.banner(ports: ports).forEach { print($0) }
        }
    }
}

/// The capture slots' cameras, for serve and demo.
struct CameraOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The document slot's camera: auto (the first that works, else the drawn placeholder; serve's default), stub (the drawing; demo's default), /dev/videoN or /dev/v4l/by-id/….", valueName: "auto|stub|DEVICE"))
    var documentCamera: String?

    @Option(name: .long, help: ArgumentHelp("The selfie slot's camera (as --document-camera).", valueName: "auto|stub|DEVICE"))
    var selfieCamera: String?

    @Option(name: .long, help: ArgumentHelp("The largest document frame wanted (default 1920x1080).", valueName: "WxH"))
    var documentResolution: String?

    @Option(name: .long, help: ArgumentHelp("The largest selfie frame wanted (default 1280x720).", valueName: "WxH"))
    var selfieResolution: String?
}

/// `HOST:PORT` (IPv4 address or name; `[v6]:PORT` for IPv6).
extension ListenAddress: ExpressibleByArgument {}
