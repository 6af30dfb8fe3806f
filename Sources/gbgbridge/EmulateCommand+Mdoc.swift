import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridgeRead
import MRTD
import MRTDCrypto
import MRTDEmulator
import BlueZ
import MdocBLE
import MdocEmulator

/// The mdoc profiles in the kit's mdoc/ directory.
enum MdocProfiles {
    static let names = ["utopia-mdl", "utopia-pid"]
}

extension EmulateCommand {
    var isMdoc: Bool { mdoc != nil || mdocProfile != nil }

    func validateMdoc() throws {
        if let mdocProfile, !MdocProfiles.names.contains(mdocProfile) {
            throw ValidationError("no mdoc profile '\(mdocProfile)'; profiles: \(MdocProfiles.names.joined(separator: ", "))")
        }
        guard MdocHolder.Handover(rawValue: handover) != nil else { throw ValidationError("--handover is static, negotiated or qr") }
        if handover == "qr", transport != "ble" { throw ValidationError("--handover qr goes with --transport ble: after a QR engagement the session runs over BLE") }
        if qrFile != nil, handover != "qr" { throw ValidationError("--qr-file goes with --handover qr") }
        guard MdocHolder.DeviceAuth(rawValue: deviceAuth) != nil else { throw ValidationError("--device-auth is signature or mac") }
        for mode in hostile where MdocHostileMode(rawValue: mode) == nil {
            throw ValidationError("--hostile \(mode) is not an mdoc mode; modes: \(MdocHostileMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if pn532PTY { throw ValidationError("--pn532-pty emulates a passport chip; an mdoc holder goes into vpcd") }
        guard ["nfc", "ble"].contains(transport) else { throw ValidationError("--transport is nfc or ble") }
        if bluetoothAdapter != nil, transport != "ble" { throw ValidationError("--bluetooth-adapter goes with --transport ble") }
        if l2cap, transport != "ble" { throw ValidationError("--l2cap goes with --transport ble") }
    }

    /// The adapters the BLE holder advertises on: the one named, or every powered one.
    func bleAdapters() async throws -> [String] {
        let adapters: [BlueZAdapter]
        do { adapters = try await BlueZ.adaptersOffPool() } catch {
            printError("gbgbridge emulate: --transport ble needs BlueZ: \(error.reason)\(error.fix.isEmpty ? "" : " — \(error.fix)")")
            throw ExitCode(2)
        }
        if let name = bluetoothAdapter {
            guard let adapter = adapters.first(where: { $0.name == name || $0.path == name }) else {
                printError("gbgbridge emulate: no Bluetooth adapter \(name); BlueZ lists \(adapters.map(\.name).joined(separator: ", "))")
                throw ExitCode(2)
            }
            guard adapter.powered else {
                printError("gbgbridge emulate: adapter \(adapter.name) is not powered (bluetoothctl power on)")
                throw ExitCode(2)
            }
            return [adapter.path]
        }
        let powered = adapters.filter(\.powered).map(\.path)
        guard !powered.isEmpty else {
            printError("gbgbridge emulate: --transport ble needs a powered Bluetooth adapter (gbgbridge doctor says why there is none)")
            throw ExitCode(2)
        }
        return powered
    }

    func runMdoc() async throws {
        let profileURL: URL
        if let mdoc {
            profileURL = URL(fileURLWithPath: mdoc)
        } else if let name = mdocProfile, let found = KitData.url("mdoc/\(name).json") {
            profileURL = found
        } else {
            printError("gbgbridge emulate: mdoc/\(mdocProfile ?? "") not found in \(KitData.searchedText)")
            throw ExitCode(2)
        }
        // A fresh random service UUID (RFC 4122 version 4), as a phone makes one per engagement.
        var uuid = secureRandomBytes(16)
        uuid[6] = uuid[6] & 0x0F | 0x40
        uuid[8] = uuid[8] & 0x3F | 0x80
        let bleAdapters = transport == "ble" ? try await bleAdapters() : []
        let holder: MdocHolder
        do {
            let credential = try MdocCredential.load(profileAt: profileURL,
                                                     signerCertificate: signerCert.map { URL(fileURLWithPath: $0) })
            func certificate(_ name: String) -> [UInt8]? {
                (KitData.url("mdoc/\(name)")).flatMap { try? Certificate(bytes: Array(try Data(contentsOf: $0))).derBytes }
            }
            holder = MdocHolder(credential: credential, handover: MdocHolder.Handover(rawValue: handover) ?? .static,
                                deviceAuth: MdocHolder.DeviceAuth(rawValue: deviceAuth) ?? .signature,
                                hostile: Set(hostile.compactMap(MdocHostileMode.init(rawValue:))),
                                expiredSignerCertificate: certificate("ds-expired.cert.pem"), untrustedSignerCertificate: certificate("ds-other.cert.pem"),
                                bleServiceUUID: transport == "ble" ? uuid : nil)
        } catch {
            printError("gbgbridge emulate: \(profileURL.lastPathComponent): \(error)")
            throw ExitCode(2)
        }
        let verbose = self.verbose
        let port = vpcdPort
        let client = VPCDClient(chip: holder, host: vpcdHost, port: vpcdPort) { event in
            if let line = event.line(port: port, verbose: verbose) { print(line) }
        }
        print("mdoc holder: \(holder.credential.docType), \(holder.credential.description)")
        print("Engagement: \(holder.handover.rawValue) handover; device authentication by \(holder.deviceAuth.rawValue)")
        for mode in holder.hostile.sorted(by: { $0.rawValue < $1.rawValue }) { print("Hostile: \(mode.rawValue) — \(mode.summary)") }
        var bleTask: Task<Void, Never>?
        if let service = BLEUUID(bytes: uuid), transport == "ble" {
            print("Transport: BLE, mdoc peripheral server mode, service \(service), on \(bleAdapters.map { $0.split(separator: "/").last.map(String.init) ?? $0 }.joined(separator: ", "))")
            if holder.handover == .qr {
                // No NFC: the code's text shown (and written), a new engagement after each session.
                try showQRCode(holder)
                let qrFile = self.qrFile
                await MdocBLEHolder.serve(serviceUUID: service, adapters: bleAdapters, l2cap: l2cap, engagement: { holder.currentEngagement },
                                          respond: { holder.respondOverBLE($0) }, log: { print($0) },
                                          afterSession: { try? Self.showQRCode(holder, file: qrFile) })
                return
            }
            let l2cap = self.l2cap
            bleTask = Task {
                await MdocBLEHolder.serve(serviceUUID: service, adapters: bleAdapters, l2cap: l2cap, engagement: { holder.currentEngagement },
                                          respond: { holder.respondOverBLE($0) }, log: { print($0) })
            }
        }
        defer { bleTask?.cancel() }
        print("Waiting for vpcd on \(vpcdHost):\(vpcdPort) … (Ctrl-C to stop)")
        await HostServer.runEmulator(start: client.start, stop: client.stop, remove: {
            client.removeCard()
        }, insert: {
            client.insertCard()
            print("holder presented again")
        })
        print("stopped")
    }

    func showQRCode(_ holder: MdocHolder) throws {
        do {
            try Self.showQRCode(holder, file: qrFile)
        } catch {
            printError("gbgbridge emulate: --qr-file \(qrFile ?? ""): \(error)")
            throw ExitCode(2)
        }
    }

    /// A fresh QR engagement: its text printed, and written to `file` (whole, by a rename).
    static func showQRCode(_ holder: MdocHolder, file: String?) throws {
        guard let code = holder.engageByQR() else { return }
        // Not a secret (an ephemeral public key), but written as the project writes files: a new
        // file renamed into place, never through a symlink.
        if let file { try PrivateFile.write(Array(code.utf8), to: file, mode: 0o644) }
        print("QR engagement: \(code)")
    }
}
