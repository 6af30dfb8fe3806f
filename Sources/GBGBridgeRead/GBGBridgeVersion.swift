/// The version `--version`, `/diagnostics.json` and the metrics' build info report.
package enum GBGBridgeVersion {
    package static let current = "0.1.0"
}
