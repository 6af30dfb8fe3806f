import BoundedFiles
import Foundation
import MRTD

/// A virtual passport as a JSON file describes it: who it belongs to, what its chip holds and
/// how the chip behaves.
///
/// ```json
/// { "mrz": ["P<UTOERIKSSON<<ANNA<MARIA<<<…", "L898902C36UTO7408122F1204159ZE184226B<<<<<10"],
///   "faceImage": "../faces/face.jpg",
///   "dg11": { "fullName": "ERIKSSON<<ANNA<MARIA", "placeOfBirth": "ZENITH" },
///   "dg12": { "issuingAuthority": "UTOPIA PASSPORT OFFICE", "dateOfIssue": "20020415" },
///   "chip": { "extendedLength": true, "maxReadLength": 65536 } }
/// ```
public struct PassportDescription: Codable, Sendable, Hashable {
    /// What this document is, for people reading the fixture.
    public var description: String?
    /// The field document a field profile models (e.g. "DE passport 2023"; `FieldProfiles`).
    public var profile: String?
    /// The MRZ, as an array of lines or one string with line breaks.
    public var mrz: MRZLines
    /// The face image (JPEG or JPEG 2000), relative to the JSON file.
    public var faceImage: String?
    /// A signature or usual-mark image for DG7 (JPEG or JPEG 2000), relative to the JSON file.
    public var signatureImage: String?
    public var dg11: AdditionalPersonalDetails?
    public var dg12: AdditionalDocumentDetails?
    public var chip: ChipSettings?
    /// Access control the chip offers: `pace`, `bac` or `both` (default `bac`, or `both` when
    /// PACE parameters are given).
    public var access: String?
    /// PACE mapping: `GM` (default), `IM` (ECDH or DH, any cipher, any standard group but NIST P-224)
    /// or `CAM` (ECDH with AES; EF.CardSecurity carries the chip's static key); several joined by
    /// `+` (e.g. `GM+IM`) offer each, the first listed first in EF.CardAccess.
    public var paceMapping: String?
    /// Standardised PACE domain parameters (default 13, brainpoolP256r1).
    public var paceParameterId: Int?
    /// PACE cipher: `AES-128` (default), `AES-192`, `AES-256` or `3DES`.
    public var paceCipher: String?
    /// Publish the PACE domain parameters explicitly (a PACEDomainParameterInfo in EF.CardAccess
    /// under the proprietary id 32: explicit ECParameters, or p, g, q) instead of by their
    /// standardised id, as some chips do. Default false.
    public var paceExplicitParameters: Bool?
    /// The card access number printed on the document (enables PACE with a CAN).
    public var can: String?
    /// Chip Authentication: `ECDH-<curve>-<cipher>` or `DH-<group>-<cipher>`, e.g.
    /// `ECDH-brainpoolP256r1-AES-128`, `ECDH-P384-3DES`, `DH-MODP2048/224-AES-128` (groups
    /// `MODP1024/160`, `MODP2048/224`, `MODP2048/256`); a `-v1` suffix (3DES only) leaves out the
    /// ChipAuthenticationInfo, as early passports do. 3DES runs through MSE:Set KAT, AES through
    /// MSE:Set AT + GENERAL AUTHENTICATE. A fresh key per chip; DG14 holds its public half.
    public var chipAuthentication: String?
    /// Where the chip publishes its CA key: `DG14` (default, as passports do) or `CardSecurity`
    /// (as ID cards do: EF.CardAccess announces CA, signed EF.CardSecurity holds the key; needs
    /// PACE with GM or IM).
    public var chipAuthenticationKeyIn: String?
    /// How chip keys name their domain parameters in their SubjectPublicKeyInfo: `explicit`
    /// (id-ecPublicKey + ECParameters; X9.42 p, g, q for DH), `namedCurve` or `standardized`
    /// (TR-03110 standardizedDomainParameters + parameter id). Default: as documents do —
    /// `explicit` in DG14 (passports), `standardized` in EF.CardSecurity (ID cards, PACE-CAM).
    public var chipKeyEncoding: String?
    /// Active Authentication key: `RSA-1024`, `RSA-2048`, `RSA-3072`, or `ECDSA-<curve>[-SHA<n>]`
    /// (P256, P384, P521, brainpoolP256r1, brainpoolP384r1, brainpoolP512r1; the hash the chip
    /// signs with, default SHA-256). A fresh key per chip; DG15 holds its public half, DG14's
    /// ActiveAuthenticationInfo names the TR-03111 ecdsa-plain algorithm.
    public var activeAuthentication: String?
    /// Name the ECDSA algorithm in DG14 with its X9.62 identifier (ecdsa-with-SHA*) instead of the
    /// TR-03111 ecdsa-plain one, as some documents do (the signature is plain r ‖ s either way).
    public var activeAuthenticationX962Identifier: Bool?
    /// A "cloned chip": DG15 and DG14 hold public keys that do not match the chip's own, so Active
    /// Authentication and Chip Authentication fail (as on a copy of a genuine chip's files).
    public var clone: Bool?
    /// How the chip departs from the textbook (field behaviours, all off by default): see `ChipQuirks`.
    public var quirks: ChipQuirks?
    /// EAC-protected biometrics: DG3 (two fingerprints) and DG4 (two irises), synthesised; readable
    /// only after Terminal Authentication (`EmulatedPassport.eac`).
    public var biometrics: Bool?

    public struct MRZLines: Codable, Sendable, Hashable {
        public var lines: [String]
        public init(lines: [String]) { self.lines = lines }
        public init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let lines = try? container.decode([String].self) {
                self.lines = lines
            } else {
                self.lines = try container.decode(String.self).split(whereSeparator: \.isNewline).map(String.init)
            }
        }
        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(lines)
        }
    }

    /// DG11 fields (ICAO 9303-10 §4.7.11); names as in the LDS.
    public struct AdditionalPersonalDetails: Codable, Sendable, Hashable {
        public var fullName: String?
        public var otherNames: [String]?
        public var personalNumber: String?
        /// YYYYMMDD.
        public var fullDateOfBirth: String?
        public var placeOfBirth: String?
        public var permanentAddress: String?
        public var telephone: String?
        public var profession: String?
        public var title: String?
        public var personalSummary: String?
        public var custodyInformation: String?

        public init() {}
    }

    /// DG12 fields (ICAO 9303-10 §4.7.12).
    public struct AdditionalDocumentDetails: Codable, Sendable, Hashable {
        public var issuingAuthority: String?
        /// YYYYMMDD.
        public var dateOfIssue: String?
        public var endorsementsAndObservations: String?
        public var taxOrExitRequirements: String?
        /// YYYYMMDDhhmmss.
        public var dateAndTimeOfPersonalization: String?
        public var personalizationSystemSerialNumber: String?
    }

    /// How the chip behaves.
    public struct ChipSettings: Codable, Sendable, Hashable {
        /// Whether the chip accepts extended-length APDUs (announced in EF.ATR/INFO). Default true.
        public var extendedLength: Bool?
        /// The most bytes one READ BINARY returns; a larger Ne gets this many (6Cxx with the
        /// `exactLengthHint` quirk, 6700 with `wrongLengthAboveLimit`). Default: 65536
        /// with extended length, 256 without.
        public var maxReadLength: Int?
        /// The digest used in EF.SOD (`SHA-256` default; `SHA-1`, `SHA-384`, `SHA-512` …).
        public var sodDigest: String?
        /// The LDS version EF.COM states: `0107` (default) or `0108`. With `0108` EF.SOD is an
        /// LDSSecurityObject version 1 carrying LDSVersionInfo (ICAO 9303-10 §4.6.2.2).
        public var ldsVersion: String?

        public init(extendedLength: Bool? = nil, maxReadLength: Int? = nil, sodDigest: String? = nil, ldsVersion: String? = nil) {
            self.extendedLength = extendedLength
            self.maxReadLength = maxReadLength
            self.sodDigest = sodDigest
            self.ldsVersion = ldsVersion
        }
    }

    public init(mrz: [String], faceImage: String? = nil) {
        self.mrz = MRZLines(lines: mrz)
        self.faceImage = faceImage
    }

    /// Loads a description from a JSON file.
    public static func load(from url: URL) throws(EmulatorError) -> PassportDescription {
        let data: [UInt8]
        do {
            data = try BoundedFile.read(url.path, ceiling: BoundedFile.Ceiling.passportDescription, what: "passport description")
        } catch {
            throw EmulatorError("cannot read the passport description: \(error.description)")
        }
        do {
            return try JSONDecoder().decode(PassportDescription.self, from: Data(data))
        } catch {
            throw EmulatorError("\(url.lastPathComponent) is not a valid passport description: \(error)")
        }
    }
}

/// A problem setting up or running the emulator (bad description, unreadable files, vpcd).
public struct EmulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
