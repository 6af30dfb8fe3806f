import MRTDCrypto

/// The secret a reader proves knowledge of to open a chip: the MRZ key fields or a CAN.
/// `description` never shows the secret.
///
/// The validating constructors (`fields`, `mrz`, `cardAccessNumber`) check every character as an
/// ASCII scalar and name the field that is wrong, never its value.
public enum AccessKey: Sendable, Hashable, CustomStringConvertible {
    case mrz(documentNumber: String, dateOfBirth: String, dateOfExpiry: String)
    case can(String)

    /// The key from separate fields, validated: document number 1–22 of A–Z 0–9 `<` (ASCII
    /// letters in either case, spaces ignored), dates YYMMDD.
    public static func fields(documentNumber: String, dateOfBirth: String, dateOfExpiry: String) throws(MRTDError) -> AccessKey {
        let withoutSpaces = String(String.UnicodeScalarView(documentNumber.unicodeScalars.filter { $0 != " " }))
        guard let number = ASCII.mrzBytes(withoutSpaces), (1...22).contains(number.count) else {
            throw MRTDError(.invalidAccessKey, "documentNumber must be 1 to 22 characters A–Z, 0–9 or '<'")
        }
        guard ASCII.isDate(dateOfBirth) else {
            throw MRTDError(.invalidAccessKey, "dateOfBirth must be YYMMDD")
        }
        guard ASCII.isDate(dateOfExpiry, allowUnknown: false) else {
            throw MRTDError(.invalidAccessKey, "dateOfExpiry must be YYMMDD")
        }
        return .mrz(documentNumber: MRZ.trimFillers(number), dateOfBirth: dateOfBirth, dateOfExpiry: dateOfExpiry)
    }

    /// The key from a full MRZ text.
    public static func mrz(_ text: String) throws(MRTDError) -> AccessKey {
        let mrz = try MRZ(text)
        return .mrz(documentNumber: mrz.documentNumber, dateOfBirth: mrz.dateOfBirth, dateOfExpiry: mrz.dateOfExpiry)
    }

    /// A card access number: 6 digits (some cards print 8–10), ASCII digits only.
    public static func cardAccessNumber(_ can: String) throws(MRTDError) -> AccessKey {
        guard let digits = ASCII.digitBytes(can), (6...10).contains(digits.count) else {
            throw MRTDError(.invalidAccessKey, "can must be 6 to 10 digits")
        }
        return .can(ASCII.string(digits))
    }

    // MARK: What the key opens — decided here once

    /// The PACE password reference of MSE:Set AT (tag 83): 01 for the MRZ, 02 for the CAN (ICAO
    /// 9303-11 §9.2.2; TR-03110-3 Table D.1).
    package var pacePasswordReference: UInt8 {
        switch self {
        case .mrz: return 0x01
        case .can: return 0x02
        }
    }

    /// Whether BAC can open a chip with this key: only the MRZ can; a CAN needs PACE.
    package var opensWithBAC: Bool {
        if case .mrz = self { return true }
        return false
    }

    /// The BAC key seed (ICAO 9303-11 §9.7.2): the first 16 bytes of SHA-1 over the MRZ
    /// information; `nil` for a CAN.
    package var bacKeySeed: [UInt8]? {
        mrzInformation.map { KeyDerivation.bacKeySeed(mrzInformation: $0) }
    }

    /// The MRZ key information string (document number, dates and check digits), for `.mrz`.
    package var mrzInformation: String? {
        guard case .mrz(let number, let birth, let expiry) = self else { return nil }
        return MRZ.keyInformation(documentNumber: number, dateOfBirth: birth, dateOfExpiry: expiry)
    }

    /// The PACE password bytes: SHA-1 of the MRZ information, or the CAN digits (ICAO 9303-11 §4.4.3.1).
    package var pacePassword: [UInt8] {
        switch self {
        case .mrz(let number, let birth, let expiry):
            let information = MRZ.keyInformation(documentNumber: number, dateOfBirth: birth, dateOfExpiry: expiry)
            return DigestAlgorithm.sha1.hash(Array(information.utf8))
        case .can(let can): return Array(can.utf8)
        }
    }

    public var description: String {
        switch self {
        case .mrz: return "AccessKey.mrz(<redacted>)"
        case .can: return "AccessKey.can(<redacted>)"
        }
    }
}
