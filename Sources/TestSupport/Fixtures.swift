import Foundation
import MRTD
import MRTDEmulator

/// Locations of the project's and the shared fixtures, for tests.
public enum TestFixtures {
    /// The package root, found from this file's location.
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    public static let directory = packageRoot.appendingPathComponent("Fixtures")
    /// `../shared/fixtures` next to the project (CI has it at the same place).
    public static let shared = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures")

    public static func url(_ relative: String) -> URL { directory.appendingPathComponent(relative) }
    public static func sharedURL(_ relative: String) -> URL { shared.appendingPathComponent(relative) }
    /// Whether `../shared/fixtures` is there (a fresh clone on its own has none).
    public static var sharedFixturesAvailable: Bool {
        FileManager.default.fileExists(atPath: shared.appendingPathComponent("README.md").path)
    }

    /// Chips that open with BAC (MRZ).
    public static let passportNames = ["utopia-td3-jpeg", "utopia-td1-idcard", "utopia-td3-jpeg2000"]
    /// Chips that offer PACE (one of them PACE only).
    public static let pacePassportNames = ["utopia-td3-pace", "utopia-id-pace-only"]

    /// The test document signer of `Fixtures/pki`.
    public static func documentSigner() throws -> DocumentSigner {
        try DocumentSigner.load(certificate: url("pki/ds.cert.pem"), key: url("pki/ds.key.pem"))
    }

    /// A fixture passport's chip content, built and signed.
    public static func passport(_ name: String) throws -> EmulatedPassport {
        try EmulatedPassport.load(descriptionAt: url("passports/\(name).json"), signer: try documentSigner())
    }

    /// The specimen PACE passport (`utopia-td3-pace`) with another PACE configuration and Chip
    /// Authentication, without Active Authentication; `adjust` changes anything else.
    public static func pacePassport(mapping: String, parameterId: Int, cipher: String, chipAuthentication: String,
                                    adjust: (inout PassportDescription) -> Void = { _ in }) throws -> (EmulatedPassport, PassportDescription) {
        var description = try self.description("utopia-td3-pace")
        description.activeAuthentication = nil
        description.paceMapping = mapping
        description.paceParameterId = parameterId
        description.paceCipher = cipher
        description.chipAuthentication = chipAuthentication
        adjust(&description)
        let passport = try EmulatedPassport(description: description, baseDirectory: url("passports"), signer: try documentSigner())
        return (passport, description)
    }

    /// A trust store holding the test CSCA of `Fixtures/pki`, which signs every fixture passport.
    public static let testTrustStore: TrustStore = {
        var store = TrustStore()
        // Fixtures/pki is part of this repository: a failure here is a broken checkout, and every
        // passive authentication then reports "untrusted" with this message beside it.
        do {
            try store.add(path: url("pki/csca.cert.pem"))
        } catch {
            print("TestFixtures: cannot load Fixtures/pki/csca.cert.pem: \(error)")
        }
        return store
    }()

    /// The key that opens a fixture chip: its CAN for the PACE fixtures, else its MRZ.
    public static func accessKey(_ name: String) throws -> AccessKey {
        let description = try description(name)
        if let can = description.can, pacePassportNames.contains(name) { return .can(can) }
        return try AccessKey.mrz(description.mrz.lines.joined(separator: "\n"))
    }

    public static func description(_ name: String) throws -> PassportDescription {
        try PassportDescription.load(from: url("passports/\(name).json"))
    }
}
