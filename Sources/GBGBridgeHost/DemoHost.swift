import Cameras
import CVCertificates
import Foundation
import Logging
import MRTD
import MRTDEmulator
import MRTDCrypto
import MdocEmulator
import MdocRead

/// `gbgbridge demo`: the host with an in-process virtual passport (signed by the kit's test PKI
/// and trusted by the demo alone), the sample journey at `/`, and a stand-in backend that issues
/// Active Authentication challenges and verifies chip evidence (`/demo/challenge`,
/// `/demo/verify-evidence`). With `eac`, the passport keeps DG3/DG4 behind Terminal Authentication
/// and the host authenticates as the kit's test Inspection System.
package struct DemoHost {
    package static let readerName = "GBGBridge Demo Reader (virtual passport)"
    package static let phoneReaderName = "GBGBridge Demo Reader (virtual phone)"

    package let settings: HostSettings
    package let trust: TrustStore
    package let chip: VirtualPassportChip
    /// With `demo --mdoc`: the phone at the demo reader instead of the passport.
    package let holder: MdocHolder?
    /// The IACAs the demo's mdoc.read trusts (the kit's test IACA).
    package let mdocTrust: MdocTrust
    package let terminal: TerminalCredentials?
    /// The virtual passport's MRZ (test data), to tell the person trying the demo.
    package let mrz: MRZ?

    /// The capture slots draw their placeholders unless a camera is named (`demo --document-camera`).
    package init(passport: String, eac: Bool, journey: String?, port: Int, diagnostics: Bool,
                 documentCamera: CameraSettings = CameraSettings(source: .stub, request: .document),
                 selfieCamera: CameraSettings = CameraSettings(source: .stub, request: .selfie),
                 operatorListen: ListenAddress? = nil, mdoc: String? = nil, mdocHandover: MdocHolder.Handover = .static) throws(EmulatorError) {
        guard let journeyDirectory = journey.map({ URL(fileURLWithPath: $0) }) ?? KitData.url("journey"),
              let csca = KitData.url("pki/csca.cert.pem") else {
            throw EmulatorError("cannot find the sample journey and test PKI (journey/, pki/) in \(KitData.searchedText); set GBGBRIDGE_DATA or pass --journey")
        }
        var recipe = EmulatorRecipe(source: .passport(passport))
        var terminal: TerminalCredentials?
        if eac { (recipe.eac, terminal) = try EmulatorRecipe.testInspectionSystem() }
        chip = VirtualPassportChip(passport: try recipe.build().passport)
        mrz = try? MRZ(PassportDescription.load(from: recipe.descriptionURL()).mrz.lines.joined(separator: "\n"))
        self.terminal = terminal
        var issuers = MdocTrust()
        if let iaca = KitData.url("mdoc/iaca.cert.pem"), let bytes = try? Data(contentsOf: iaca) {
            try? issuers.add(bytes: Array(bytes), name: iaca.path)
        }
        mdocTrust = issuers
        if let mdoc {
            guard let profile = KitData.url("mdoc/\(mdoc).json") ?? (FileManager.default.fileExists(atPath: mdoc) ? URL(fileURLWithPath: mdoc) : nil) else {
                throw EmulatorError("no mdoc profile \(mdoc) (mdoc/NAME.json in \(KitData.searchedText), or a file)")
            }
            do {
                holder = MdocHolder(credential: try MdocCredential.load(profileAt: profile), handover: mdocHandover)
            } catch {
                throw EmulatorError("the mdoc profile \(profile.lastPathComponent): \(error)")
            }
        } else {
            holder = nil
        }
        var trust = TrustStore()
        do {
            try trust.add(path: csca)
        } catch {
            throw EmulatorError("the test CSCA \(csca.path): \(error.reason)")
        }
        self.trust = trust
        var settings = HostSettings()
        settings.port = port
        settings.staticDirectory = journeyDirectory.path
        settings.diagnostics = diagnostics
        settings.operatorListen = operatorListen
        settings.trust = [csca.path]
        settings.documentCamera = documentCamera
        settings.selfieCamera = selfieCamera
        self.settings = settings
    }

    /// The host application on the virtual reader, with the demo backend's endpoints.
    @MainActor
    package func application(logger: Logger) throws(HostServer.Failure) -> HostApplication {
        let reader = EmulatedReaderBackend(chip: holder ?? chip, readerName: holder == nil ? Self.readerName : Self.phoneReaderName)
        let application = try HostApplication(settings: settings, trust: trust, backend: reader, terminal: terminal, mdocTrust: mdocTrust,
                                              monitorsReaders: false, logger: logger)
        let backend = DemoBackend(trustStore: trust)
        application.configuration.jsonEndpoints["/demo/challenge"] = { backend.challenge($0) }
        application.configuration.jsonEndpoints["/demo/verify-evidence"] = { backend.verify($0) }
        return application
    }

    /// What the person starting the demo is told once it listens on `port`.
    package func banner(ports: HostPorts) -> [String] {
        var lines = ["GBGBridge demo running. Open in a browser:  http://127.0.0.1:\(ports.main)/"]
        if settings.diagnostics, let operators = ports.operators {
            lines.append("Diagnostics for operators: http://127.0.0.1:\(operators)/diagnostics (metrics: /metrics there)")
        }
        if let holder {
            lines.append("A virtual phone is at the reader: \(holder.credential.docType) (\(holder.handover.rawValue) handover). In the page, 'Read the phone' (step 6); the test IACA in mdoc/ is trusted by the demo only.")
        } else if let mrz {
            lines.append("The virtual passport opens with document number \(mrz.documentNumber), date of birth \(mrz.dateOfBirth), expiry \(mrz.dateOfExpiry) (test data).")
        }
        if terminal != nil {
            lines.append("Extended Access Control: the passport trusts the test CVCA UTCVCA00001; the host authenticates as the test Inspection System UTIS0000001 (cvc/ of the kit data) and reads DG3 and DG4.")
        }
        lines.append("Press Ctrl-C to stop.")
        return lines
    }
}
