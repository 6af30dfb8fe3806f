/// An ISO 7816-4 status word (SW1 SW2) with its name and meaning.
public struct StatusWord: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(sw1: UInt8, sw2: UInt8) { rawValue = UInt16(sw1) << 8 | UInt16(sw2) }

    public var sw1: UInt8 { UInt8(rawValue >> 8) }
    public var sw2: UInt8 { UInt8(rawValue & 0xFF) }

    public static let success = StatusWord(rawValue: 0x9000)
    public static let endOfFileReached = StatusWord(rawValue: 0x6282)
    public static let verificationFailed = StatusWord(rawValue: 0x6300)
    public static let memoryFailure = StatusWord(rawValue: 0x6581)
    public static let wrongLength = StatusWord(rawValue: 0x6700)
    public static let smNotSupported = StatusWord(rawValue: 0x6882)
    public static let securityStatusNotSatisfied = StatusWord(rawValue: 0x6982)
    public static let authenticationMethodBlocked = StatusWord(rawValue: 0x6983)
    public static let referenceDataNotUsable = StatusWord(rawValue: 0x6984)
    public static let conditionsOfUseNotSatisfied = StatusWord(rawValue: 0x6985)
    public static let commandNotAllowedNoEF = StatusWord(rawValue: 0x6986)
    public static let smDataObjectsMissing = StatusWord(rawValue: 0x6987)
    public static let smDataObjectsIncorrect = StatusWord(rawValue: 0x6988)
    public static let wrongData = StatusWord(rawValue: 0x6A80)
    public static let functionNotSupported = StatusWord(rawValue: 0x6A81)
    public static let fileNotFound = StatusWord(rawValue: 0x6A82)
    public static let incorrectP1P2 = StatusWord(rawValue: 0x6A86)
    public static let lcInconsistentWithP1P2 = StatusWord(rawValue: 0x6A87)
    public static let referencedDataNotFound = StatusWord(rawValue: 0x6A88)
    public static let wrongP1P2 = StatusWord(rawValue: 0x6B00)
    public static let insNotSupported = StatusWord(rawValue: 0x6D00)
    public static let claNotSupported = StatusWord(rawValue: 0x6E00)
    public static let noPreciseDiagnosis = StatusWord(rawValue: 0x6F00)

    /// `61xx`: more data available, retrieve with GET RESPONSE (xx = 00 means 256 or more).
    public static func bytesRemaining(_ count: UInt8) -> StatusWord { StatusWord(sw1: 0x61, sw2: count) }
    /// `6Cxx`: wrong Le, resend with Le = xx.
    public static func wrongLe(_ exact: UInt8) -> StatusWord { StatusWord(sw1: 0x6C, sw2: exact) }
    /// `63Cx`: verification failed, x tries left.
    public static func triesLeft(_ count: UInt8) -> StatusWord { StatusWord(sw1: 0x63, sw2: 0xC0 | (count & 0x0F)) }

    /// `9000` (or `61xx`, which also means the command succeeded).
    public var isSuccess: Bool { rawValue == 0x9000 || sw1 == 0x61 }
    /// `62xx` / `63xx`: processed with a warning.
    public var isWarning: Bool { sw1 == 0x62 || sw1 == 0x63 }

    /// The short name, e.g. `FILE_NOT_FOUND`.
    public var name: String { info.name }
    /// What the card means by it.
    public var meaning: String { info.meaning }

    private var info: (name: String, meaning: String) {
        switch sw1 {
        case 0x61: return ("BYTES_REMAINING", "\(sw2 == 0 ? "256 or more" : String(sw2)) response bytes are available (GET RESPONSE)")
        case 0x6C: return ("WRONG_LE", "wrong Le; exactly \(sw2 == 0 ? 256 : Int(sw2)) bytes are available")
        case 0x63 where sw2 & 0xF0 == 0xC0:
            return ("VERIFICATION_FAILED_TRIES_LEFT", "verification failed; \(sw2 & 0x0F) tries left")
        default: break
        }
        switch rawValue {
        case 0x9000: return ("SUCCESS", "normal processing")
        case 0x6200: return ("WARNING_NO_INFORMATION", "warning: state of non-volatile memory unchanged")
        case 0x6281: return ("DATA_CORRUPTED", "warning: part of the returned data may be corrupted")
        case 0x6282: return ("END_OF_FILE", "end of file reached before reading Ne bytes")
        case 0x6283: return ("FILE_DEACTIVATED", "selected file deactivated")
        case 0x6300: return ("VERIFICATION_FAILED", "verification or authentication failed")
        case 0x6581: return ("MEMORY_FAILURE", "memory failure")
        case 0x6700: return ("WRONG_LENGTH", "wrong length (Lc or Le)")
        case 0x6881: return ("LOGICAL_CHANNEL_NOT_SUPPORTED", "logical channel not supported")
        case 0x6882: return ("SECURE_MESSAGING_NOT_SUPPORTED", "secure messaging not supported")
        case 0x6982: return ("SECURITY_STATUS_NOT_SATISFIED", "security status not satisfied (access control required)")
        case 0x6983: return ("AUTHENTICATION_METHOD_BLOCKED", "authentication method blocked")
        case 0x6984: return ("REFERENCE_DATA_NOT_USABLE", "reference data not usable")
        case 0x6985: return ("CONDITIONS_NOT_SATISFIED", "conditions of use not satisfied")
        case 0x6986: return ("COMMAND_NOT_ALLOWED", "command not allowed (no current EF)")
        case 0x6987: return ("SM_DATA_OBJECTS_MISSING", "expected secure messaging data objects missing")
        case 0x6988: return ("SM_DATA_OBJECTS_INCORRECT", "incorrect secure messaging data objects (bad MAC or cryptogram)")
        case 0x6A80: return ("WRONG_DATA", "incorrect parameters in the command data field")
        case 0x6A81: return ("FUNCTION_NOT_SUPPORTED", "function not supported")
        case 0x6A82: return ("FILE_NOT_FOUND", "file or application not found")
        case 0x6A86: return ("INCORRECT_P1_P2", "incorrect parameters P1-P2")
        case 0x6A87: return ("LC_INCONSISTENT", "Nc inconsistent with P1-P2")
        case 0x6A88: return ("REFERENCED_DATA_NOT_FOUND", "referenced data or reference data not found")
        case 0x6B00: return ("WRONG_P1_P2", "wrong parameters P1-P2 (offset outside the EF)")
        case 0x6D00: return ("INS_NOT_SUPPORTED", "instruction code not supported or invalid")
        case 0x6E00: return ("CLA_NOT_SUPPORTED", "class not supported")
        case 0x6F00: return ("NO_PRECISE_DIAGNOSIS", "no precise diagnosis")
        default: return ("SW_\(hex([sw1, sw2]))", "status \(hex([sw1, sw2]))")
        }
    }

    public var description: String { "\(hex([sw1, sw2])) \(name)" }
}
