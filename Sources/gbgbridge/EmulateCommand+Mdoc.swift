import ArgumentParser
import Foundation
import GBGBridgeHost
import GBGBridgeRead
import MRTDCrypto
import MRTDEmulator
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
        guard MdocHolder.Handover(rawValue: handover) != nil else { throw ValidationError("--handover is static or negotiated") }
        guard MdocHolder.DeviceAuth(rawValue: deviceAuth) != nil else { throw ValidationError("--device-auth is signature or mac") }
        for mode in hostile where MdocHostileMode(rawValue: mode) == nil {
            throw ValidationError("--hostile \(mode) is not an mdoc mode; modes: \(MdocHostileMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if pn532PTY { throw ValidationError("--pn532-pty emulates a passport chip; an mdoc holder goes into vpcd") }
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
                                expiredSignerCertificate: certificate("ds-expired.cert.pem"), untrustedSignerCertificate: certificate("ds-other.cert.pem"))
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
        print("Waiting for vpcd on \(vpcdHost):\(vpcdPort) … (Ctrl-C to stop)")
        await HostServer.runEmulator(start: client.start, stop: client.stop, remove: {
            client.removeCard()
        }, insert: {
            client.insertCard()
            print("holder presented again")
        })
        print("stopped")
    }
}
