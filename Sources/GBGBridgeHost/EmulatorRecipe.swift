import BoundedFiles
import CVCertificates
import Foundation
import GBGBridge
import MRTD
import MRTDEmulator

/// What a virtual passport is made of — a description, a field profile or a directory of EF dumps,
/// signed by a document signer, with field behaviours, a hostile mode and EAC trust points — and
/// how it is assembled (`gbgbridge emulate`, `gbgbridge demo`, test rigs). Every failure is one
/// line naming the file and what to do (`EmulatorError`).
package struct EmulatorRecipe {
    package enum Source: Sendable {
        /// A description file, or a name in `passports/` of the kit data (`utopia-demo`, `field/de-passport-2023`).
        case passport(String)
        /// A field profile (`passports/field/NAME.json`).
        case profile(String)
        /// A directory of EF dumps served as they are; `mrz` opens a dump without DG1.
        case dump(directory: String, mrz: String?)
    }

    package var source: Source
    /// The document signer for EF.SOD (default: the kit's test signer, `pki/ds.*.pem`).
    package var signerCertificate: String?
    package var signerKey: String?
    /// Field behaviours laid over the description's own `quirks`.
    package var quirks: @Sendable (ChipQuirks?) -> ChipQuirks = { $0 ?? ChipQuirks() }
    package var hostile = HostileCard()
    /// Trust points for Terminal Authentication; the chip then keeps DG3/DG4 behind EAC.
    package var eac: EACConfiguration?
    /// Refuse extended-length APDUs (and drop EF.ATR/INFO), whatever the description says.
    package var shortAPDUsOnly = false
    package var maxReadLength: Int?

    package init(source: Source) { self.source = source }

    /// The chip's content, and notes worth printing about it (EAC without a way in …).
    package func build() throws(EmulatorError) -> (passport: EmulatedPassport, notes: [String]) {
        var chip: EmulatedPassport
        switch source {
        case .dump(let directory, let mrz):
            chip = try EmulatedPassport(dumpDirectory: URL(fileURLWithPath: directory), mrz: mrz)
            chip.quirks = quirks(nil)
        case .passport, .profile:
            let url = try descriptionURL()
            var description = try PassportDescription.load(from: url)
            description.quirks = quirks(description.quirks)
            if eac != nil { description.biometrics = true }
            chip = try EmulatedPassport(description: description, baseDirectory: url.deletingLastPathComponent(), signer: try signer())
        }
        if !hostile.isEmpty { try chip.makeHostile(hostile, signer: try signer()) }
        if shortAPDUsOnly {
            chip.extendedLength = false
            chip.masterFiles.removeValue(forKey: EmulatedPassport.efATRInfo)
            chip.maxReadLength = min(chip.maxReadLength, 256)
        }
        if let maxReadLength { chip.maxReadLength = maxReadLength }
        chip.eac = eac
        var notes: [String] = []
        if let eac {
            let noWayIn = chip.chipAuthenticationKey == nil && chip.chipAuthenticationMappingKey == nil
            notes.append("EAC: trust points \(eac.trustPoints.map(\.holderReference).joined(separator: ", ")), chip date \(eac.date)"
                         + (noWayIn ? " (warning: the passport has neither Chip Authentication nor PACE-CAM, so no terminal can authenticate)" : ""))
        } else if chip.biometricsBehindEAC {
            notes.append("DG3/DG4 are behind Extended Access Control and no trust point was given (--eac-cvca FILE): no terminal can open them")
        }
        return (chip, notes)
    }

    /// The description file: a path that exists, else a name looked up in the kit data.
    package func descriptionURL() throws(EmulatorError) -> URL {
        switch source {
        case .passport(let passport):
            if FileManager.default.fileExists(atPath: passport) { return URL(fileURLWithPath: passport) }
            let name = passport.hasSuffix(".json") ? String(passport.dropLast(5)) : passport
            if !passport.hasPrefix("/"), !passport.hasPrefix("."), let url = KitData.url("passports/\(name).json") { return url }
            throw EmulatorError("no passport file or name '\(LogText.clip(passport))' (names are looked for in passports/ of \(KitData.searchedText))")
        case .profile(let profile):
            guard FieldProfiles.names.contains(profile) else {
                throw EmulatorError("no field profile '\(LogText.clip(profile))'; profiles: \(FieldProfiles.names.joined(separator: ", "))")
            }
            guard let url = KitData.url("\(FieldProfiles.directory)/\(profile).json") else {
                throw EmulatorError("cannot find \(FieldProfiles.directory)/\(profile).json in \(KitData.searchedText); set GBGBRIDGE_DATA or use --passport FILE")
            }
            return url
        case .dump(let directory, _):
            return URL(fileURLWithPath: directory)
        }
    }

    /// The document signer asked for, else the kit's test signer.
    package func signer() throws(EmulatorError) -> DocumentSigner {
        let cert = signerCertificate.map { URL(fileURLWithPath: $0) } ?? KitData.url("pki/ds.cert.pem")
        let key = signerKey.map { URL(fileURLWithPath: $0) } ?? KitData.url("pki/ds.key.pem")
        guard let cert, let key else {
            throw EmulatorError("cannot find the test document signer (pki/ds.cert.pem, pki/ds.key.pem) in \(KitData.searchedText); set GBGBRIDGE_DATA or pass --signer-cert/--signer-key")
        }
        return try DocumentSigner.load(certificate: cert, key: key)
    }

    /// The chip's EAC settings from CVCA certificate files and its date (YYMMDD; default today).
    package static func eacConfiguration(cvcaFiles: [String], date: String?) throws(EmulatorError) -> EACConfiguration? {
        guard !cvcaFiles.isEmpty else { return nil }
        var trustPoints: [CVCertificate] = []
        for file in cvcaFiles {
            let data: [UInt8]
            do {
                data = try BoundedFile.read(file, ceiling: BoundedFile.Ceiling.cvCertificate, what: "CV certificate")
            } catch {
                throw EmulatorError("--eac-cvca: \(error.description)")
            }
            let certificate: CVCertificate
            do {
                certificate = try CVCertificate(bytes: data)
            } catch {
                throw EmulatorError("--eac-cvca \(file): not a CV certificate: \(error.field): \(error.reason)")
            }
            guard certificate.authorization.role == .cvca else {
                throw EmulatorError("--eac-cvca \(file): \(certificate.holderReference) is a \(certificate.authorization.role.rawValue) certificate, not a CVCA's")
            }
            trustPoints.append(certificate)
        }
        guard let day = date.map(CVDate.init) ?? CVDate(Date()) else { throw EmulatorError("--eac-date must be a calendar date as YYMMDD") }
        return EACConfiguration(trustPoints: trustPoints, date: day)
    }

    /// The test Inspection System of the kit's `cvc/` (made with OpenPACE's cvc-create; test only):
    /// the chip's trust point and the host's credentials.
    package static func testInspectionSystem() throws(EmulatorError) -> (EACConfiguration, TerminalCredentials) {
        guard let directory = KitData.url("cvc") else {
            throw EmulatorError("cannot find the test CV certificates (cvc/) in \(KitData.searchedText); set GBGBRIDGE_DATA")
        }
        do {
            func certificate(_ name: String) throws -> CVCertificate {
                let path = directory.appendingPathComponent("\(name).cvcert").path
                return try CVCertificate(bytes: try BoundedFile.read(path, ceiling: BoundedFile.Ceiling.cvCertificate, what: "CV certificate"))
            }
            let eac = EACConfiguration(trustPoints: [try certificate("UTCVCA00001")], date: CVDate(Date()))
            let credentials = try TerminalCredentials(certificates: [try certificate("UTDVIS00001"), try certificate("UTIS0000001")],
                                                      signer: try PrivateKeySigner(contentsOf: directory.appendingPathComponent("UTIS0000001.pkcs8")))
            return (eac, credentials)
        } catch {
            throw EmulatorError("the test Inspection System in \(directory.path): \(error)")
        }
    }
}
