import SmartCardCore

/// What a chip's status word means to the reader, decided once for every command (ISO/IEC 7816-4
/// §5.6, ICAO 9303-11). The reader's steps act on these cases, never on raw status words; the
/// table is in Docs/reading-and-verification.md.
package enum CardStatus: Sendable, Hashable {
    /// 9000.
    case ok
    /// 6282: fewer bytes than Ne, the end of the file was reached (data may come with it).
    case endOfFile
    /// 6982 security status not satisfied, 6985 conditions of use not satisfied: the file or
    /// the operation needs access rights this session does not have (Extended Access Control).
    case protected
    /// 6A82: no such file or application.
    case notFound
    /// 6700 (no hint) or 6Cxx (exactly xx bytes; 6C00 = 256).
    case wrongLength(exact: Int?)
    /// 6B00: P1-P2 out of range — for READ BINARY, an offset past the end of the file.
    case beyondEnd
    /// 6A86: incorrect P1-P2 — for READ BINARY by short EF identifier, no SFI support.
    case incorrectParameters
    /// 6986: no current EF — for READ BINARY by short EF identifier, no SFI support.
    case noCurrentFile
    /// 6D00, 6E00, 6A81: instruction, class or function not supported.
    case unsupported
    /// 6A80, 6A87, 6A88: the command's data (an MSE template, a key reference) refused.
    case dataRefused
    /// 63xx: verification or authentication failed.
    case verificationFailed
    /// 6987, 6988, 6882: the chip's secure-messaging errors; the chip has ended the session.
    case secureMessagingRejected
    /// 61xx reaching a caller (the session fetches the rest itself; it never does).
    case moreData
    /// Anything else.
    case other(StatusWord)

    package init(_ word: StatusWord) {
        switch word.sw1 {
        case 0x61: self = .moreData
        case 0x63: self = .verificationFailed
        case 0x6C: self = .wrongLength(exact: word.sw2 == 0 ? 256 : Int(word.sw2))
        default:
            switch word {
            case .success: self = .ok
            case .endOfFileReached: self = .endOfFile
            case .securityStatusNotSatisfied, .conditionsOfUseNotSatisfied: self = .protected
            case .fileNotFound: self = .notFound
            case .wrongLength: self = .wrongLength(exact: nil)
            case .wrongP1P2: self = .beyondEnd
            case .incorrectP1P2: self = .incorrectParameters
            case .commandNotAllowedNoEF: self = .noCurrentFile
            case .insNotSupported, .claNotSupported, .functionNotSupported: self = .unsupported
            case .wrongData, .lcInconsistentWithP1P2, .referencedDataNotFound: self = .dataRefused
            case .smDataObjectsMissing, .smDataObjectsIncorrect, .smNotSupported: self = .secureMessagingRejected
            default: self = .other(word)
            }
        }
    }

    /// Whether the command did what it was asked (9000, or 6282 with what there was).
    package var isSuccess: Bool { self == .ok || self == .endOfFile }

    /// A READ BINARY by short EF identifier answered this way says the chip reads no short EF
    /// identifiers (6A82 can mean that too, but also "no such file": SELECT tells which).
    package var meansNoShortFileIdentifiers: Bool {
        switch self {
        case .noCurrentFile, .incorrectParameters, .unsupported, .beyondEnd: return true
        default: return false
        }
    }
}

/// A chip's answer: the data (after secure messaging), the status word and what it means.
package struct CardAnswer: Sendable, Hashable {
    package var data: [UInt8]
    package var statusWord: StatusWord
    /// Whether the answer came protected by secure messaging.
    package var protected: Bool

    package init(data: [UInt8], statusWord: StatusWord, protected: Bool) {
        self.data = data
        self.statusWord = statusWord
        self.protected = protected
    }

    package var status: CardStatus { CardStatus(statusWord) }
}
