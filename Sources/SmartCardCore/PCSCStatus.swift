/// A PC/SC status code (`SCARD_S_SUCCESS`, `SCARD_E_…`, `SCARD_W_…`, `SCARD_F_…`) with its name.
public struct PCSCStatus: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let success = PCSCStatus(rawValue: 0x0000_0000)
    public static let internalError = PCSCStatus(rawValue: 0x8010_0001)
    public static let cancelled = PCSCStatus(rawValue: 0x8010_0002)
    public static let invalidHandle = PCSCStatus(rawValue: 0x8010_0003)
    public static let invalidParameter = PCSCStatus(rawValue: 0x8010_0004)
    public static let noMemory = PCSCStatus(rawValue: 0x8010_0006)
    public static let insufficientBuffer = PCSCStatus(rawValue: 0x8010_0008)
    public static let unknownReader = PCSCStatus(rawValue: 0x8010_0009)
    public static let timeout = PCSCStatus(rawValue: 0x8010_000A)
    public static let sharingViolation = PCSCStatus(rawValue: 0x8010_000B)
    public static let noSmartcard = PCSCStatus(rawValue: 0x8010_000C)
    public static let protoMismatch = PCSCStatus(rawValue: 0x8010_000F)
    public static let notReady = PCSCStatus(rawValue: 0x8010_0010)
    public static let invalidValue = PCSCStatus(rawValue: 0x8010_0011)
    public static let systemCancelled = PCSCStatus(rawValue: 0x8010_0012)
    public static let commError = PCSCStatus(rawValue: 0x8010_0013)
    public static let unknownError = PCSCStatus(rawValue: 0x8010_0014)
    public static let notTransacted = PCSCStatus(rawValue: 0x8010_0016)
    public static let readerUnavailable = PCSCStatus(rawValue: 0x8010_0017)
    public static let noService = PCSCStatus(rawValue: 0x8010_001D)
    public static let serviceStopped = PCSCStatus(rawValue: 0x8010_001E)
    public static let unsupportedFeature = PCSCStatus(rawValue: 0x8010_001F)
    public static let noAccess = PCSCStatus(rawValue: 0x8010_0027)
    public static let noReadersAvailable = PCSCStatus(rawValue: 0x8010_002E)
    public static let commDataLost = PCSCStatus(rawValue: 0x8010_002F)
    public static let serverTooBusy = PCSCStatus(rawValue: 0x8010_0031)
    public static let unsupportedCard = PCSCStatus(rawValue: 0x8010_0065)
    public static let unresponsiveCard = PCSCStatus(rawValue: 0x8010_0066)
    public static let unpoweredCard = PCSCStatus(rawValue: 0x8010_0067)
    public static let resetCard = PCSCStatus(rawValue: 0x8010_0068)
    public static let removedCard = PCSCStatus(rawValue: 0x8010_0069)
    public static let securityViolation = PCSCStatus(rawValue: 0x8010_006A)

    private static let names: [UInt32: String] = [
        0x0000_0000: "SCARD_S_SUCCESS", 0x8010_0001: "SCARD_F_INTERNAL_ERROR", 0x8010_0002: "SCARD_E_CANCELLED",
        0x8010_0003: "SCARD_E_INVALID_HANDLE", 0x8010_0004: "SCARD_E_INVALID_PARAMETER",
        0x8010_0005: "SCARD_E_INVALID_TARGET", 0x8010_0006: "SCARD_E_NO_MEMORY",
        0x8010_0007: "SCARD_F_WAITED_TOO_LONG", 0x8010_0008: "SCARD_E_INSUFFICIENT_BUFFER",
        0x8010_0009: "SCARD_E_UNKNOWN_READER", 0x8010_000A: "SCARD_E_TIMEOUT",
        0x8010_000B: "SCARD_E_SHARING_VIOLATION", 0x8010_000C: "SCARD_E_NO_SMARTCARD",
        0x8010_000D: "SCARD_E_UNKNOWN_CARD", 0x8010_000E: "SCARD_E_CANT_DISPOSE",
        0x8010_000F: "SCARD_E_PROTO_MISMATCH", 0x8010_0010: "SCARD_E_NOT_READY",
        0x8010_0011: "SCARD_E_INVALID_VALUE", 0x8010_0012: "SCARD_E_SYSTEM_CANCELLED",
        0x8010_0013: "SCARD_F_COMM_ERROR", 0x8010_0014: "SCARD_F_UNKNOWN_ERROR",
        0x8010_0015: "SCARD_E_INVALID_ATR", 0x8010_0016: "SCARD_E_NOT_TRANSACTED",
        0x8010_0017: "SCARD_E_READER_UNAVAILABLE", 0x8010_0019: "SCARD_E_PCI_TOO_SMALL",
        0x8010_001A: "SCARD_E_READER_UNSUPPORTED", 0x8010_001B: "SCARD_E_DUPLICATE_READER",
        0x8010_001C: "SCARD_E_CARD_UNSUPPORTED", 0x8010_001D: "SCARD_E_NO_SERVICE",
        0x8010_001E: "SCARD_E_SERVICE_STOPPED", 0x8010_001F: "SCARD_E_UNSUPPORTED_FEATURE",
        0x8010_0027: "SCARD_E_NO_ACCESS", 0x8010_002E: "SCARD_E_NO_READERS_AVAILABLE",
        0x8010_002F: "SCARD_E_COMM_DATA_LOST", 0x8010_0031: "SCARD_E_SERVER_TOO_BUSY",
        0x8010_0065: "SCARD_W_UNSUPPORTED_CARD", 0x8010_0066: "SCARD_W_UNRESPONSIVE_CARD",
        0x8010_0067: "SCARD_W_UNPOWERED_CARD", 0x8010_0068: "SCARD_W_RESET_CARD",
        0x8010_0069: "SCARD_W_REMOVED_CARD", 0x8010_006A: "SCARD_W_SECURITY_VIOLATION",
    ]

    /// The C macro name, e.g. `SCARD_E_NO_SERVICE`.
    public var name: String { Self.names[rawValue] ?? "PC/SC status 0x\(String(rawValue, radix: 16, uppercase: true))" }
    public var description: String { name }

    /// The typed error for a failed call, with a reason a kiosk operator can act on.
    public func error(_ operation: String, file: String = #fileID, line: UInt = #line) -> SmartCardError {
        let (code, reason): (SmartCardError.Code, String) = switch self {
        case .noService, .serviceStopped:
            (.serviceUnavailable, "pcscd is not running (start it with 'systemctl start pcscd' or 'pcscd -f')")
        case .noAccess, .securityViolation:
            (.permissionDenied, "pcscd refused access to this process (check polkit rules for pcscd)")
        case .noReadersAvailable: (.noReaders, "no smart-card reader is connected")
        case .unknownReader: (.readerNotFound, "the reader is not known to pcscd (was it unplugged?)")
        case .readerUnavailable: (.readerUnavailable, "the reader is not available")
        case .noSmartcard: (.noCard, "no card is in the reader")
        case .removedCard, .resetCard: (.cardRemoved, "the card was removed from the reader")
        case .unresponsiveCard, .unpoweredCard, .unsupportedCard: (.cardUnresponsive, "the card does not respond")
        case .timeout: (.timeout, "the operation timed out")
        case .cancelled, .systemCancelled: (.cancelled, "the operation was cancelled")
        case .sharingViolation: (.sharingViolation, "another application is using the card")
        case .protoMismatch: (.protocolMismatch, "the card and the reader share no protocol")
        case .commError, .commDataLost, .notReady, .notTransacted:
            (.communicationFailure, "communication with the card failed")
        default: (.internalError, "PC/SC call failed")
        }
        return SmartCardError(code, "\(operation): \(reason)", pcscStatus: self, file: file, line: line)
    }
}
