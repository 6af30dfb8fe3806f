import BoundedFiles
import Cameras
import Foundation
import Yams

/// `serve`'s settings from its configuration file (`/etc/gbgbridge/gbgbridge.conf` or `--config
/// FILE`), YAML: one key per `serve` option, named as the option without its dashes. Options on
/// the command line override the file; a list given on the command line replaces the file's.
///
/// ```yaml
/// port: 8450
/// allow-origin: [https://journey.example.com]
/// trust: /etc/gbgbridge/trust
/// diagnostics: true
/// log-format: json
/// ```
///
/// Strict: an unknown key, a key given twice or a value of the wrong type is an error naming the
/// key and its line, so a typo never silently falls back to a default.
package struct ServeSettings: Sendable, Equatable {
    package static let defaultPath = "/etc/gbgbridge/gbgbridge.conf"
    package static let defaultPort = 8450
    /// `read-timeout` / `--read-timeout` in seconds: nfc.read's `readTimeoutSeconds` range.
    package static let readTimeoutRange = 5...600
    /// `diagnostics-streams` / `--diagnostics-streams`: live operator streams open at once.
    package static let diagnosticsStreamsRange = 1...64

    package var port: Int?
    package var allowOrigin: [String]?
    package var trust: [String]?
    package var staticDirectory: String?
    package var kiosk: String?
    package var headless: Bool?
    package var kioskProfile: String?
    package var inspect: String?
    package var libnfcDevice: [String]?
    package var libnfcDiscover: Bool?
    package var verbose: Bool?
    package var metricsListen: String?
    /// Where `/metrics` and `/diagnostics` are served (`operator-listen: HOST:PORT`).
    package var operatorListen: String?
    package var logFormat: String?
    package var diagnostics: Bool?
    package var terminalCertificates: [String]?
    package var terminalKey: String?
    package var readTimeout: Int?
    package var diagnosticsStreams: Int?
    package var documentCamera: String?
    package var selfieCamera: String?
    package var documentResolution: String?
    package var selfieResolution: String?
    /// `trust-refresh:` (read by `gbgbridge trust refresh`, not by `serve`).
    package var trustRefresh: TrustRefresh.Settings?

    /// The keys a file may hold, as `serve`'s long options name them.
    package static let keys = ["port", "allow-origin", "trust", "static", "kiosk", "headless", "kiosk-profile", "inspect", "libnfc-device",
                       "libnfc-discover", "verbose", "metrics-listen", "operator-listen", "log-format", "diagnostics", "terminal-certificates", "terminal-key",
                       "read-timeout", "diagnostics-streams", "document-camera", "selfie-camera", "document-resolution", "selfie-resolution",
                       "trust-refresh"]

    /// What is wrong with a configuration file; `description` names the file, the key and the line.
    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    package init() {}

    /// The settings in `path`, or `nil` when `path` is the default one and does not exist.
    package static func load(path: String?) throws(Problem) -> (settings: ServeSettings, path: String)? {
        let chosen = path ?? defaultPath
        guard FileManager.default.fileExists(atPath: chosen) else {
            if path == nil { return nil }
            throw Problem(description: "\(chosen): no such file")
        }
        let data: [UInt8]
        do {
            data = try BoundedFile.read(chosen, ceiling: BoundedFile.Ceiling.configuration, what: "configuration")
        } catch {
            throw Problem(description: error.description)
        }
        guard let text = String(validating: data, as: UTF8.self) else { throw Problem(description: "\(chosen): not UTF-8 text") }
        return (try parse(text, file: chosen), chosen)
    }

    /// The settings in `text` (a YAML mapping; empty or only comments is no setting at all).
    package static func parse(_ text: String, file: String) throws(Problem) -> ServeSettings {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw Problem(description: "\(file): not valid YAML: \(String(describing: error).split(separator: "\n").first ?? "")")
        }
        var settings = ServeSettings()
        guard let root else { return settings }
        guard let mapping = root.mapping else {
            throw Problem(description: "\(file): expected 'key: value' lines (a YAML mapping) at the top level")
        }
        var seen = Set<String>()
        for (keyNode, value) in mapping {
            let line = keyNode.mark.map { " (line \($0.line))" } ?? ""
            guard let key = keyNode.scalar?.string else { throw Problem(description: "\(file)\(line): a key must be a plain name") }
            let field = Field(file: file, key: key, line: line, node: value)
            guard keys.contains(key) else {
                throw Problem(description: "\(file)\(line): unknown key '\(field.printableKey)' (known keys: \(keys.joined(separator: ", ")))")
            }
            guard seen.insert(key).inserted else { throw Problem(description: "\(file)\(line): '\(key)' is given twice") }
            switch key {
            case "port": settings.port = try field.int(in: 0...65_535)
            case "allow-origin": settings.allowOrigin = try field.strings()
            case "trust": settings.trust = try field.strings()
            case "static": settings.staticDirectory = try field.string()
            case "kiosk": settings.kiosk = try field.string()
            case "headless": settings.headless = try field.bool()
            case "kiosk-profile": settings.kioskProfile = try field.string()
            case "inspect": settings.inspect = try field.string()
            case "libnfc-device": settings.libnfcDevice = try field.strings()
            case "libnfc-discover": settings.libnfcDiscover = try field.bool()
            case "verbose": settings.verbose = try field.bool()
            case "metrics-listen": settings.metricsListen = try field.string()
            case "operator-listen": settings.operatorListen = try field.string()
            case "log-format": settings.logFormat = try field.string(oneOf: ["text", "json"])
            case "diagnostics": settings.diagnostics = try field.bool()
            case "terminal-certificates": settings.terminalCertificates = try field.strings()
            case "terminal-key": settings.terminalKey = try field.string()
            case "read-timeout": settings.readTimeout = try field.int(in: ServeSettings.readTimeoutRange)
            case "diagnostics-streams": settings.diagnosticsStreams = try field.int(in: ServeSettings.diagnosticsStreamsRange)
            case "document-camera": settings.documentCamera = try field.camera()
            case "selfie-camera": settings.selfieCamera = try field.camera()
            case "document-resolution": settings.documentResolution = try field.resolution()
            case "selfie-resolution": settings.selfieResolution = try field.resolution()
            case "trust-refresh": settings.trustRefresh = try field.trustRefresh()
            default: break
            }
        }
        return settings
    }

    /// One `key: value` of the file, read as the type its option takes.
    private struct Field {
        package let file: String
        package let key: String
        package let line: String
        package let node: Node

        /// The key as it may be shown: printable ASCII, clipped.
        package var printableKey: String {
            String(String(key.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }).prefix(60))
        }

        package func wrong(_ expected: String) -> Problem {
            Problem(description: "\(file)\(line): '\(key)' must be \(expected)")
        }

        package func string() throws(Problem) -> String {
            guard let scalar = node.scalar, !scalar.string.isEmpty else { throw wrong("a non-empty text") }
            return scalar.string
        }

        package func string(oneOf choices: [String]) throws(Problem) -> String {
            let value = try string()
            guard choices.contains(value) else { throw wrong(choices.map { "'\($0)'" }.joined(separator: " or ")) }
            return value
        }

        /// `auto`, `stub` or a device path under /dev.
        package func camera() throws(Problem) -> String {
            let value = try string()
            guard CameraSource(value) != nil else { throw wrong(CameraSource.accepted) }
            return value
        }

        /// `WIDTHxHEIGHT`.
        package func resolution() throws(Problem) -> String {
            let value = try string()
            guard Resolution(value) != nil else { throw wrong("WIDTHxHEIGHT, e.g. 1920x1080") }
            return value
        }

        package func strings() throws(Problem) -> [String] {
            if node.scalar != nil { return [try string()] }
            guard let sequence = node.sequence else { throw wrong("a text or a list of texts") }
            var values: [String] = []
            for item in sequence {
                guard let scalar = item.scalar, !scalar.string.isEmpty else { throw wrong("a list of non-empty texts") }
                values.append(scalar.string)
            }
            return values
        }

        package func int(in range: ClosedRange<Int>) throws(Problem) -> Int {
            guard node.scalar != nil, let value = node.int, range.contains(value) else {
                throw wrong("a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }

        package func bool() throws(Problem) -> Bool {
            guard node.scalar != nil, let value = node.bool else { throw wrong("true or false") }
            return value
        }

        /// ```yaml
        /// trust-refresh:
        ///   sources:
        ///     - url: https://example.org/DE_ML.ml
        ///       kind: master-list
        ///       anchor-sha256: [HEX…]
        ///     - url: http://crl.example.org/csca.crl
        ///       kind: crl
        ///   crl-distribution-points: true
        /// ```
        package func trustRefresh() throws(Problem) -> TrustRefresh.Settings {
            guard let mapping = node.mapping else { throw wrong("a mapping with 'sources' (and 'crl-distribution-points')") }
            var settings = TrustRefresh.Settings()
            for (keyNode, value) in mapping {
                let key = keyNode.scalar?.string ?? ""
                let inner = Field(file: file, key: "trust-refresh.\(key)", line: keyNode.mark.map { " (line \($0.line))" } ?? line, node: value)
                switch key {
                case "crl-distribution-points": settings.crlDistributionPoints = try inner.bool()
                case "sources":
                    guard let sequence = value.sequence else { throw inner.wrong("a list of sources (url, kind, anchor-sha256)") }
                    for item in sequence {
                        guard let entry = item.mapping else { throw inner.wrong("a list of mappings: url, kind, anchor-sha256") }
                        var url: String?, kind: TrustRefresh.Source.Kind?, anchors: [String] = []
                        for (entryKey, entryValue) in entry {
                            let name = entryKey.scalar?.string ?? ""
                            let field = Field(file: file, key: "trust-refresh.sources.\(name)",
                                              line: entryKey.mark.map { " (line \($0.line))" } ?? line, node: entryValue)
                            switch name {
                            case "url": url = try field.string()
                            case "kind":
                                kind = TrustRefresh.Source.Kind(rawValue: try field.string(oneOf: TrustRefresh.Source.Kind.allCases.map(\.rawValue)))
                            case "anchor-sha256":
                                anchors = try field.strings().map { $0.replacingOccurrences(of: ":", with: "").uppercased() }
                                guard anchors.allSatisfy({ $0.count == 64 && $0.allSatisfy(\.isHexDigit) }) else {
                                    throw field.wrong("SHA-256 fingerprints (64 hexadecimal digits)")
                                }
                            default:
                                throw Problem(description: "\(file)\(field.line): unknown key 'trust-refresh.sources.\(field.printableKey.split(separator: ".").last ?? "")' (url, kind, anchor-sha256)")
                            }
                        }
                        guard let url else { throw inner.wrong("a list of sources, each with a url") }
                        settings.sources.append(TrustRefresh.Source(url: url, kind: kind ?? TrustRefresh.Source.kind(guessedFrom: url), anchors: anchors))
                    }
                default:
                    throw Problem(description: "\(file)\(inner.line): unknown key 'trust-refresh.\(String(key.prefix(40)))' (sources, crl-distribution-points)")
                }
            }
            return settings
        }
    }
}
