import TextSanitizing
import Biometrics
import MRTD
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ImageCodecs

/// The `nfc.read` success `data` object (design.md §4), also what `gbgbridge read --json` prints.
/// Absent values are omitted, never `null`. Contains personal data and the photo: never log it.
public struct ReadReport: Codable, Sendable, Hashable {
    public struct Document: Codable, Sendable, Hashable {
        public var documentCode: String
        public var issuingState: String
        public var documentNumber: String
        public var surname: String
        public var givenNames: String
        public var nationality: String
        /// ISO 8601 (`1974-08-12`); the raw YYMMDD when parts are unknown.
        public var dateOfBirth: String
        public var sex: String
        public var dateOfExpiry: String
        public var optionalData: String
    }

    public struct Check: Codable, Sendable, Hashable {
        public var status: VerificationStatus
        public var detail: String
    }

    public struct PassiveCheck: Codable, Sendable, Hashable {
        public var status: VerificationStatus
        public var detail: String
        public var signature: PassiveAuthenticationResult.Signature?
        public var chain: PassiveAuthenticationResult.Chain?
        public var dataGroups: [String: PassiveAuthenticationResult.HashStatus]?
        public var documentSigner: String?
        public var csca: String?
        public var digestAlgorithm: String?
        public var signatureAlgorithm: String?
    }

    /// One fingerprint or iris: where from, format, size, quality, the image as stored (base64),
    /// and — for formats browsers cannot show (WSQ, raw pixels, JPEG 2000 outside Safari) — a note saying so.
    public struct BiometricEntry: Codable, Sendable, Hashable {
        public var position: Int
        public var positionName: String
        public var format: String
        public var mimeType: String?
        public var displayable: Bool
        public var width: Int
        public var height: Int
        public var quality: Int?
        public var image: String
        /// No longer set on each entry: `biometricFormats` says once what each format means.
        public var note: String?

        init(_ image: BiometricImage) {
            position = image.position
            positionName = image.positionName
            format = image.format
            mimeType = image.mimeType
            displayable = image.displayable
            width = image.width
            height = image.height
            quality = image.quality
            self.image = Data(image.data).base64EncodedString()
        }

        /// What an image format means to a page, once per format in a report (not in each entry:
        /// a chip's thousands of records each repeating it made a 114 MB answer).
        static func note(format: String, displayable: Bool) -> String? {
            switch format {
            case "WSQ": return "WSQ (the FBI's fingerprint format): browsers cannot show it; decode it on a backend (NBIS, JMRTD's WSQ decoder)"
            case "raw": return "uncompressed 8-bit pixels, row by row (width × height of the entry): draw them on a canvas"
            case "JPEG 2000": return "JPEG 2000: only Safari shows it; transcode it on a backend for other browsers"
            default: return displayable ? nil : "\(format): browsers cannot show it"
            }
        }
    }

    public struct Verification: Codable, Sendable, Hashable {
        public var passive: PassiveCheck
        public var chip: Check
        public var active: Check
        /// Whether the unsigned EF.CardAccess offers what the signed DG14 / EF.CardSecurity list (a
        /// hidden or weakened PACE or CA option is `invalid`: a downgrade).
        public var cardAccess: Check?
        /// Terminal Authentication (EAC, for DG3/DG4): `notChecked` without terminal credentials.
        public var terminal: Check?
        /// Subject of the document signer certificate.
        public var documentSigner: String?
        /// Subject of the CSCA that issued it, when one was found.
        public var csca: String?
    }

    /// One application EF.DIR names: its identifier in hex and, for ICAO's, what it is.
    public struct Application: Codable, Sendable, Hashable {
        public var aid: String
        public var name: String?
    }

    /// Where the key that opened the chip came from, when it was not given as such (issue 50):
    /// `source` `photo` (a document capture's or a photo file's MRZ), `candidate` which of the
    /// key candidates opened it (1 = the first), `tried` how many were tried. From then on the
    /// document's MRZ is DG1's, verified by passive authentication — never the photo's.
    public struct AccessKeyFrom: Codable, Sendable, Hashable {
        public var source: String
        public var candidate: Int
        public var tried: Int
        public init(source: String, candidate: Int, tried: Int) { (self.source, self.candidate, self.tried) = (source, candidate, tried) }
    }

    public var accessControl: String
    public var paceMapping: String?
    /// The PACE protocol run, e.g. `PACE-ECDH-GM-AES-128`.
    public var paceProtocol: String?
    /// Why BAC was used although the chip offers PACE, when that happened (never silent).
    public var accessControlNote: String?
    /// Which key read from a photo opened the chip (absent when the key was given).
    public var accessKeyFrom: AccessKeyFrom?
    public var mrz: String?
    public var document: Document?
    public var photo: String?
    public var photoMimeType: String?
    public var photoWidth: Int?
    public var photoHeight: Int?
    public var additionalPersonalDetails: [String: StringOrList]?
    public var additionalDocumentDetails: [String: StringOrList]?
    public var dataGroupsRead: [String]
    /// The applications EF.DIR names (LDS2 chips: travel records, visa records, additional
    /// biometrics beside the eMRTD); absent when the chip has no EF.DIR. EF.DIR is not signed:
    /// informative only.
    public var applications: [Application]?
    /// Files read but not understood, and files the reader refused (a header claiming more than
    /// the file's ceiling, an indefinite length, a file that does not end), with the reason, by
    /// name (`{"DG11": "…"}`); absent when there are none. A broken DG1 or DG2 shows here, and
    /// `document`/`mrz` or `photo` are then absent.
    public var parseErrors: [String: String]?
    /// Data groups read but not shown, with the reason: those EF.SOD does not cover are not part of
    /// the signed document, so `document`, `photo`, `additionalPersonalDetails` … never carry
    /// them (`{"DG11": "DG11 is not covered by EF.SOD: …"}`); absent when there are none.
    public var withheldDataGroups: [String: String]?
    /// DG3's fingerprints and DG4's irises (read after Terminal Authentication), each with its image.
    public var fingerprints: [BiometricEntry]?
    public var irises: [BiometricEntry]?
    /// What each biometric image format in `fingerprints` and `irises` means to a page, said once.
    public var biometricFormats: [String: String]?
    public var verification: Verification
    /// How often the document left the reader's field during the read and the read went on
    /// after it came back (0 for an undisturbed read; absent in reports of saved dumps).
    public var reconnections: Int?

    /// A text field or a list of them (DG11 other names, DG12 other persons).
    public enum StringOrList: Codable, Sendable, Hashable {
        case string(String)
        case list([String])
        public init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let list = try? container.decode([String].self) { self = .list(list) } else { self = .string(try container.decode(String.self)) }
        }
        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .list(let value): try container.encode(value)
            }
        }
    }

    /// Builds the report; the photo is the first face, transcoded to JPEG when needed, here and
    /// now (blocking: a command-line tool's way; a server uses `make(_:now:)`).
    public init(_ result: PassportReadResult, now: Date = Date()) {
        var problem: String?
        var face: ImageTranscoder.Output?
        if let image = result.shownFace {
            do { face = try ImageTranscoder.browserJPEG(image) } catch { problem = error.reason }
        }
        self.init(result, now: now, face: face, faceProblem: problem, biometrics: Self.vetBiometrics(result))
    }

    /// Builds the report with the face transcoded on `queue` (at most its width at once, off the
    /// caller's executor): what a server answering many pages does.
    public static func make(_ result: PassportReadResult, now: Date = Date(), queue: DecodeQueue = .shared) async -> ReadReport {
        var face: ImageTranscoder.Output?
        var problem: String?
        if let image = result.shownFace {
            do { face = try await ImageTranscoder.browserJPEG(image, on: queue) } catch { problem = error.reason }
        }
        return ReadReport(result, now: now, face: face, faceProblem: problem, biometrics: await Self.vetBiometrics(result))
    }

    /// Builds the report with `face` as the photo (`nil`: no photo, e.g. when only the checks
    /// matter); `faceProblem`, why the face could not be decoded, goes to `parseErrors.DG2` (its
    /// stable code first: `IMAGE_INVALID: …`, `IMAGE_TOO_COSTLY: …`).
    /// `biometrics`: DG3/DG4 images the confined decoder decoded; without it, every image a browser
    /// would decode is withheld (nothing undecoded reaches a page).
    public init(_ result: PassportReadResult, now: Date = Date(), face: ImageTranscoder.Output?, faceProblem: String? = nil,
                biometrics vetting: BiometricVetting? = nil) {
        accessControl = result.accessControl
        paceMapping = result.paceMapping
        paceProtocol = result.paceProtocol
        accessControlNote = result.accessControlNote
        // A data group EF.SOD does not cover is never shown as the document's (design.md §4).
        func shown<T>(_ value: T?, _ number: Int) -> T? { result.withheld[.dataGroup(number)] == nil ? value : nil }
        if let mrz = shown(result.dg1, 1)?.mrz {
            self.mrz = mrz.text
            document = Document(
                documentCode: mrz.documentCode, issuingState: mrz.issuingState, documentNumber: mrz.documentNumber,
                surname: mrz.primaryIdentifier, givenNames: mrz.secondaryIdentifier, nationality: mrz.nationality,
                dateOfBirth: ReadReport.isoDate(mrz.dateOfBirth, birth: true, now: now), sex: mrz.sex == "<" ? "X" : mrz.sex,
                dateOfExpiry: ReadReport.isoDate(mrz.dateOfExpiry, birth: false, now: now),
                optionalData: [mrz.optionalData, mrz.optionalData2].filter { !$0.isEmpty }.joined(separator: " "))
        }
        if let jpeg = face, shown(result.dg2, 2) != nil {
            photo = Data(jpeg.jpeg).base64EncodedString()
            photoMimeType = "image/jpeg"
            photoWidth = jpeg.width
            photoHeight = jpeg.height
        }
        if let dg11 = shown(result.dg11, 11) {
            var details: [String: StringOrList] = [:]
            func put(_ key: String, _ value: String?) { if let value, !value.isEmpty { details[key] = .string(value) } }
            put("fullName", dg11.fullName)
            if !dg11.otherNames.isEmpty { details["otherNames"] = .list(dg11.otherNames) }
            put("personalNumber", dg11.personalNumber)
            put("fullDateOfBirth", dg11.fullDateOfBirth.map(ReadReport.isoFullDate))
            put("placeOfBirth", dg11.placeOfBirth)
            put("permanentAddress", dg11.permanentAddress)
            put("telephone", dg11.telephone)
            put("profession", dg11.profession)
            put("title", dg11.title)
            put("personalSummary", dg11.personalSummary)
            put("otherValidTravelDocumentNumbers", dg11.otherValidTravelDocumentNumbers)
            put("custodyInformation", dg11.custodyInformation)
            additionalPersonalDetails = details
        }
        if let dg12 = shown(result.dg12, 12) {
            var details: [String: StringOrList] = [:]
            func put(_ key: String, _ value: String?) { if let value, !value.isEmpty { details[key] = .string(value) } }
            put("issuingAuthority", dg12.issuingAuthority)
            put("dateOfIssue", dg12.dateOfIssue.map(ReadReport.isoFullDate))
            if !dg12.otherPersons.isEmpty { details["otherPersons"] = .list(dg12.otherPersons) }
            put("endorsementsAndObservations", dg12.endorsementsAndObservations)
            put("taxOrExitRequirements", dg12.taxOrExitRequirements)
            put("dateAndTimeOfPersonalization", dg12.dateAndTimeOfPersonalization.map(ReadReport.isoFullDate))
            put("personalizationSystemSerialNumber", dg12.personalizationSystemSerialNumber)
            additionalDocumentDetails = details
        }
        dataGroupsRead = result.dataGroupsRead
        applications = result.directory.map { $0.identifiers.map(ApplicationDirectory.describe).map { Application(aid: $0.hex, name: $0.name) } }
        var problems = Dictionary(uniqueKeysWithValues: result.parseErrors.map { ($0.key.name, $0.value) })
        if let faceProblem, problems["DG2"] == nil { problems["DG2"] = faceProblem }
        for (file, absence) in result.absent {
            if case .refused(let reason) = absence { problems[file.name] = "refused: \(reason)" }
        }
        // DG3/DG4 within their bounds (BiometricDataGroup.maxTemplates, .maxImages); what was left
        // unread or not understood is named once in parseErrors.
        var formats: [String: String] = [:]
        func biometrics(_ number: Int) -> [BiometricEntry]? {
            guard let bytes = shown(result.files[.dataGroup(number)], number) else { return nil }
            let group: BiometricDataGroup
            do {
                group = try BiometricDataGroup(bytes: bytes)
            } catch {
                if problems["DG\(number)"] == nil { problems["DG\(number)"] = error.description }
                return nil
            }
            if !group.unparsed.isEmpty, problems["DG\(number)"] == nil { problems["DG\(number)"] = group.unparsed.joined(separator: "; ") }
            for image in group.images { formats[image.format] = BiometricEntry.note(format: image.format, displayable: image.displayable) }
            var withheld: [String] = []
            let entries = group.images.enumerated().map { index, image -> BiometricEntry in
                var entry = BiometricEntry(image)
                guard image.mimeType.map(Self.vettedTypes.contains) == true else { return entry }
                let refusal = vetting.map { $0.refused["DG\(number)#\(index)"] } ?? "not decoded by the confined decoder"
                if let refusal {
                    entry.image = ""
                    entry.displayable = false
                    withheld.append("image \(index + 1) withheld (\(refusal))")
                }
                return entry
            }
            if !withheld.isEmpty {
                let shownAtMost = withheld.prefix(5).joined(separator: "; ") + (withheld.count > 5 ? "; and \(withheld.count - 5) more" : "")
                problems["DG\(number)"] = [problems["DG\(number)"], shownAtMost].compactMap { $0 }.joined(separator: "; ")
            }
            return entries
        }
        fingerprints = biometrics(3)
        irises = biometrics(4)
        biometricFormats = formats.isEmpty ? nil : formats
        parseErrors = problems.isEmpty ? nil : problems
        withheldDataGroups = result.withheld.isEmpty ? nil : Dictionary(uniqueKeysWithValues: result.withheld.map { ($0.key.name, $0.value) })
        reconnections = result.accessControl == "none" ? nil : result.statistics.reconnections
        let passive = result.passive
        verification = Verification(
            passive: PassiveCheck(status: result.passiveOutcome.status, detail: result.passiveOutcome.detail,
                                  signature: passive?.signature, chain: passive?.chain, dataGroups: passive?.dataGroups,
                                  documentSigner: passive?.documentSigner, csca: passive?.csca,
                                  digestAlgorithm: passive?.digestAlgorithm, signatureAlgorithm: passive?.signatureAlgorithm),
            chip: Check(status: result.chip.status, detail: result.chip.detail),
            active: Check(status: result.active.status, detail: result.active.detail),
            cardAccess: Check(status: result.cardAccessCheck.status, detail: result.cardAccessCheck.detail),
            terminal: Check(status: result.terminal.status, detail: result.terminal.detail),
            documentSigner: passive?.documentSigner, csca: passive?.csca)
    }

    /// YYMMDD → YYYY-MM-DD. Birth dates are never in the future; expiry dates lie within
    /// 50 years either side of today. Unknown parts (`<`) leave the raw value.
    public static func isoDate(_ yymmdd: String, birth: Bool, now: Date = Date()) -> String {
        guard let digits = ASCII.digitBytes(yymmdd), digits.count == 6, let yy = ASCII.number(digits[0..<2]) else { return yymmdd }
        let currentYear = Calendar(identifier: .gregorian).component(.year, from: now)
        let century = currentYear / 100 * 100
        var year = century + yy
        if birth {
            if year > currentYear { year -= 100 }
        } else if year > currentYear + 50 {
            year -= 100
        } else if year < currentYear - 50 {
            year += 100
        }
        return Formatting.decimal(year, width: 4) + "-" + ASCII.string(digits[2..<4]) + "-" + ASCII.string(digits[4..<6])
    }

    /// YYYYMMDD → YYYY-MM-DD, YYYYMMDDhhmmss → YYYY-MM-DDThh:mm:ss; anything else unchanged.
    public static func isoFullDate(_ text: String) -> String {
        guard let digits = ASCII.digitBytes(text) else { return text }
        func part(_ range: Range<Int>) -> String { ASCII.string(digits[range]) }
        if digits.count == 8 {
            return "\(part(0..<4))-\(part(4..<6))-\(part(6..<8))"
        }
        if digits.count == 14 {
            return "\(part(0..<4))-\(part(4..<6))-\(part(6..<8))T\(part(8..<10)):\(part(10..<12)):\(part(12..<14))"
        }
        return text
    }

    /// Compact JSON with sorted keys.
    public func jsonData(pretty: Bool = false) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

extension PassportReadResult {
    /// The first face of DG2, unless DG2 is withheld (not covered by EF.SOD): only that is ever
    /// decoded and shown.
    var shownFace: [UInt8]? { withheld[.dataGroup(2)] == nil ? dg2?.faces.first?.data : nil }
}
