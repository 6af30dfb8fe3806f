import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridgeRead

/// `gbgbridge doctor`: what stands between this machine and a reading kiosk.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check this machine for reading passports: pcscd, readers, card, kernel drivers, libnfc, trust store, Chromium, cameras (one frame each), port.",
        discussion: """
            Each check prints ok, warning or error, one line of what was found and, when \
            something is wrong, the fix. Nothing secret is printed (no MRZ, CAN or document \
            data; a card on the reader is described by its ATR). libnfc is looked at only \
            with --libnfc-device. Exit status: 0 when no check is an error, 1 otherwise, \
            2 bad arguments. --json prints {"version", "checks": [{"name", "status", \
            "finding", "fix", "details"}]}.
            """
    )

    @Option(name: .long, help: ArgumentHelp("serve's settings file to check and take the port, trust store and libnfc devices from. Default: \(ServeSettings.defaultPath) when it exists.", valueName: "FILE"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Trust anchors to check (CSCA certificates, master lists, CRLs; files or directories); repeatable. Default: the configuration's, else /etc/gbgbridge/trust when it exists.", valueName: "path"))
    var trust: [String] = []

    @Option(name: .long, help: ArgumentHelp("A libnfc device to check, e.g. pn532_uart:/dev/ttyUSB0; repeatable.", valueName: "CONNSTRING"))
    var libnfcDevice: [String] = []

    @Option(name: .long, help: "The address serve will listen on.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "The port serve will listen on (default: the configuration's, else \(ServeSettings.defaultPort)).")
    var port: Int?

    @Flag(name: .long, help: "Print the checks as JSON.")
    var json = false

    func validate() throws {
        if let port { guard (1...65_535).contains(port) else { throw ValidationError("--port must be 1…65535") } }
    }

    func run() async throws {
        let (configCheck, settings) = DoctorChecks.configuration(path: config)
        var trustPaths = trust.isEmpty ? settings?.trust ?? [] : trust
        if trustPaths.isEmpty, FileManager.default.fileExists(atPath: "/etc/gbgbridge/trust") {
            trustPaths = ["/etc/gbgbridge/trust"]
        }
        let libnfcDevice = self.libnfcDevice.isEmpty ? settings?.libnfcDevice ?? [] : self.libnfcDevice
        let port = self.port ?? settings?.port.flatMap { $0 == 0 ? nil : $0 } ?? ServeSettings.defaultPort
        var checks = [configCheck]
        checks += await DoctorChecks.pcsc()
        checks.append(DoctorChecks.kernelModules())
        checks.append(await DoctorChecks.libnfc(devices: libnfcDevice))
        checks.append(DoctorChecks.trustStore(paths: trustPaths))
        checks.append(DoctorChecks.mdocIssuers(paths: trustPaths))
        checks.append(await DoctorChecks.bluetooth())
        checks.append(await DoctorChecks.terminalAuthentication(certificates: settings?.terminalCertificates ?? [], key: settings?.terminalKey))
        checks.append(await DoctorChecks.imageDecoder())
        checks.append(DoctorChecks.chromium())
        checks += await DoctorChecks.cameras(settings: settings)
        checks.append(DoctorChecks.port(host: host, port: port))
        if json {
            printJSON(["version": GBGBridgeVersion.current, "checks": checks.map(\.json)])
        } else {
            for check in checks {
                print("\(check.status.rawValue.uppercased().padding(toLength: 7, withPad: " ", startingAt: 0)) \(check.name): \(check.finding)")
                if !check.fix.isEmpty { print("        fix: \(check.fix)") }
            }
        }
        if checks.contains(where: { $0.status == .error }) { throw ExitCode(1) }
    }
}
