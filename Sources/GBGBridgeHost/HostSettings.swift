import Cameras
import Foundation
import GBGBridge
import GBGBridgeServer

/// What the host runs with, once the command line has been laid over the configuration file
/// (`ServeSettings`) and the defaults. `validate()` checks what no single value can: ranges, the
/// options that go together, the kiosk URL, the static directory.
package struct HostSettings: Sendable {
    package var port = ServeSettings.defaultPort
    package var allowOrigin: [String] = []
    package var trust: [String] = []
    package var staticDirectory: String?
    package var kiosk: String?
    package var headless = false
    package var kioskProfile: String?
    /// Chrome DevTools may attach to the kiosk's page here (`--inspect`); off unless given.
    package var inspect: KioskInspectAddress?
    package var libnfcDevice: [String] = []
    package var libnfcDiscover = false
    package var verbose = false
    package var metricsListen: ListenAddress?
    /// The operators' listener (`/metrics`, `/diagnostics`): loopback, the journey's port + 1 unless given.
    package var operatorListen: ListenAddress?
    package var logFormat = LogFormat.text
    package var diagnostics = false
    package var terminalCertificates: [String] = []
    package var terminalKey: String?
    package var readTimeout = 60
    package var diagnosticsStreams = 8
    /// The capture slots' cameras: `auto` (the first camera that works, else the drawing) unless set.
    package var documentCamera = CameraSettings.document
    package var selfieCamera = CameraSettings.selfie
    /// The configuration file the settings came from, if any.
    package var configFile: String?

    package init() {}

    /// The command line (what was given on it, as a `ServeSettings`) over the configuration file
    /// over the defaults; a list given on the command line replaces the file's, it does not add to it.
    package init(commandLine given: ServeSettings, file: ServeSettings?, filePath: String?) throws(Problem) {
        let file = file ?? ServeSettings()
        func pick<T>(_ key: KeyPath<ServeSettings, T?>) -> T? { given[keyPath: key] ?? file[keyPath: key] }
        func list(_ key: KeyPath<ServeSettings, [String]?>) -> [String] {
            let commandLine = given[keyPath: key] ?? []
            return commandLine.isEmpty ? file[keyPath: key] ?? [] : commandLine
        }
        configFile = filePath
        port = pick(\.port) ?? port
        allowOrigin = list(\.allowOrigin)
        trust = list(\.trust)
        staticDirectory = pick(\.staticDirectory)
        kiosk = pick(\.kiosk)
        headless = pick(\.headless) ?? headless
        kioskProfile = pick(\.kioskProfile)
        if let text = pick(\.inspect) {
            guard let address = KioskInspectAddress(argument: text) else {
                throw Problem("\(given.inspect == nil ? "configuration: \(filePath ?? ""): 'inspect'" : "--inspect") must be PORT or HOST:PORT (port 1-65535), e.g. 9222 or 127.0.0.1:9222, got '\(LogText.clip(text))'")
            }
            inspect = address
        }
        libnfcDevice = list(\.libnfcDevice)
        libnfcDiscover = pick(\.libnfcDiscover) ?? libnfcDiscover
        verbose = pick(\.verbose) ?? verbose
        if let text = pick(\.metricsListen) {
            guard let address = ListenAddress(argument: text) else {
                throw Problem("\(given.metricsListen == nil ? "configuration: \(filePath ?? ""): 'metrics-listen'" : "--metrics-listen") must be HOST:PORT, e.g. 0.0.0.0:9450")
            }
            metricsListen = address
        }
        if let text = pick(\.operatorListen) {
            guard let address = ListenAddress(argument: text) else {
                throw Problem("\(given.operatorListen == nil ? "configuration: \(filePath ?? ""): 'operator-listen'" : "--operator-listen") must be HOST:PORT, e.g. 127.0.0.1:8451")
            }
            operatorListen = address
        }
        if let text = pick(\.logFormat) {
            guard let format = LogFormat(rawValue: text) else { throw Problem("log-format must be text or json, got '\(LogText.clip(text))'") }
            logFormat = format
        }
        diagnostics = pick(\.diagnostics) ?? diagnostics
        terminalCertificates = list(\.terminalCertificates)
        terminalKey = pick(\.terminalKey)
        diagnosticsStreams = pick(\.diagnosticsStreams) ?? diagnosticsStreams
        readTimeout = pick(\.readTimeout) ?? readTimeout
        documentCamera = try Self.camera(pick(\.documentCamera), pick(\.documentResolution), base: .document, option: "document")
        selfieCamera = try Self.camera(pick(\.selfieCamera), pick(\.selfieResolution), base: .selfie, option: "selfie")
        try validate()
    }

    /// A slot's camera from `--document-camera`/`--document-resolution` (or the selfie's).
    package static func camera(_ source: String?, _ resolution: String?, base: CameraSettings, option: String) throws(Problem) -> CameraSettings {
        var settings = base
        if let source {
            guard let parsed = CameraSource(source) else { throw Problem("--\(option)-camera must be \(CameraSource.accepted), got '\(LogText.clip(source))'") }
            settings.source = parsed
        }
        if let resolution {
            guard let parsed = Resolution(resolution) else {
                throw Problem("--\(option)-resolution must be WIDTHxHEIGHT (\(Resolution.allowedWidths.lowerBound)…\(Resolution.allowedWidths.upperBound) × \(Resolution.allowedHeights.lowerBound)…\(Resolution.allowedHeights.upperBound)), got '\(LogText.clip(resolution))'")
            }
            settings.request.target = parsed
        }
        return settings
    }

    /// A combination that cannot be served, in words for the operator.
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
        package init(_ description: String) { self.description = description }
    }

    package func validate() throws(Problem) {
        guard ServeSettings.diagnosticsStreamsRange.contains(diagnosticsStreams) else {
            throw Problem("--diagnostics-streams must be from \(ServeSettings.diagnosticsStreamsRange.lowerBound) to \(ServeSettings.diagnosticsStreamsRange.upperBound)")
        }
        guard ServeSettings.readTimeoutRange.contains(readTimeout) else {
            throw Problem("--read-timeout must be from \(ServeSettings.readTimeoutRange.lowerBound) to \(ServeSettings.readTimeoutRange.upperBound) seconds")
        }
        if terminalCertificates.isEmpty != (terminalKey == nil) {
            throw Problem("terminal-certificates and terminal-key go together (options or configuration)")
        }
        guard (0...65_535).contains(port) else { throw Problem("--port must be between 0 and 65535") }
        if let kiosk {
            guard let url = URL(string: kiosk), ["http", "https", "file"].contains(url.scheme ?? "") else {
                throw Problem("--kiosk needs an http(s) URL, got '\(LogText.clip(kiosk))'")
            }
        }
        if headless && kiosk == nil { throw Problem("--headless goes with --kiosk URL") }
        if inspect != nil && kiosk == nil { throw Problem("--inspect goes with --kiosk URL (a journey in a browser tab is inspected with that browser's own DevTools)") }
        if let staticDirectory {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: staticDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw Problem("--static \(staticDirectory) is not a directory")
            }
        }
    }
}
