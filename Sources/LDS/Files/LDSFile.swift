/// An elementary file of the LDS: where it lives and what readers and dumps call it.
public enum LDSFile: Sendable, Hashable, Comparable, CustomStringConvertible {
    case com
    case sod
    case dataGroup(Int)
    case cardAccess
    case cardSecurity
    case atrInfo
    /// EF.CVCA (Extended Access Control): the CVCA references the chip trusts for Terminal Authentication.
    case cvca
    /// EF.DIR on the MF (ICAO 9303-10 §3.11.2): the applications the chip holds (LDS1 eMRTD, and
    /// LDS2 travel records, visa records, additional biometrics), as application templates.
    case directory

    package static let allDataGroups: [LDSFile] = (1...16).map { .dataGroup($0) }

    /// Files that are data objects one after the other rather than one TLV (EF.CVCA: two CARs and
    /// zero padding), read to their end rather than to a length a header gives.
    package var isConcatenatedObjects: Bool { self == .cvca || self == .directory }

    /// The file identifier.
    package var fid: UInt16 {
        switch self {
        case .com: return 0x011E
        case .sod: return 0x011D
        case .dataGroup(let n): return 0x0100 + UInt16(n)
        case .cardAccess: return 0x011C
        case .cardSecurity: return 0x011D
        case .atrInfo: return 0x2F01
        case .cvca: return 0x011C
        case .directory: return 0x2F00
        }
    }

    /// The short EF identifier.
    package var sfi: UInt8 {
        switch self {
        case .com: return 0x1E
        case .sod: return 0x1D
        case .dataGroup(let n): return UInt8(n)
        case .cardAccess: return 0x1C
        case .cardSecurity: return 0x1D
        case .atrInfo: return 0x01
        case .cvca: return 0x1C
        case .directory: return 0x1E
        }
    }

    /// Whether the file is on the master file (not in the eMRTD application).
    package var isOnMasterFile: Bool {
        switch self {
        case .cardAccess, .cardSecurity, .atrInfo, .directory: return true
        default: return false
        }
    }

    /// `EF.COM`, `EF.SOD`, `DG1` … as journeys and reports name them.
    public var name: String {
        switch self {
        case .com: return "EF.COM"
        case .sod: return "EF.SOD"
        case .dataGroup(let n): return "DG\(n)"
        case .cardAccess: return "EF.CardAccess"
        case .cardSecurity: return "EF.CardSecurity"
        case .atrInfo: return "EF.ATR/INFO"
        case .cvca: return "EF.CVCA"
        case .directory: return "EF.DIR"
        }
    }

    /// The dump file name: `EF_COM.bin`, `EF_SOD.bin`, `DG1.bin` …
    package var dumpFileName: String {
        switch self {
        case .dataGroup(let n): return "DG\(n).bin"
        case .atrInfo: return "EF_ATR_INFO.bin"
        default: return name.replacing(".", with: "_") + ".bin"
        }
    }

    public var description: String { name }

    /// The data group whose EF.COM tag is `tag` (61 = DG1, 75 = DG2 …).
    package init?(comTag tag: UInt8) {
        let tags: [UInt8] = [0x61, 0x75, 0x63, 0x76, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F, 0x70]
        guard let index = tags.firstIndex(of: tag) else { return nil }
        self = .dataGroup(index + 1)
    }

    /// Parses `DG2`, `dg11`, `EF.COM`, `COM`, `SOD` …; `nil` for anything else.
    public init?(name: String) {
        let upper = name.uppercased().replacing("EF.", with: "").replacing("EF_", with: "")
        switch upper {
        case "COM": self = .com
        case "SOD": self = .sod
        case "CARDACCESS": self = .cardAccess
        case "CARDSECURITY": self = .cardSecurity
        case "CVCA": self = .cvca
        case "DIR": self = .directory
        default:
            guard upper.hasPrefix("DG"), let n = Int(upper.dropFirst(2)), (1...16).contains(n) else { return nil }
            self = .dataGroup(n)
        }
    }

    /// The file a dump file name stands for: `EF_COM.bin`, `EF.SOD`, `DG1.bin`, `Datagroup14.bin`,
    /// `EF_DG2.bin`, `ef0101.bin`, `011E.bin`, `EF_CardAccess.bin` …; `nil` for anything else.
    package init?(dumpFileName name: String) {
        var stem = name.lowercased()
        for suffix in [".bin", ".der", ".dat"] where stem.hasSuffix(suffix) { stem.removeLast(suffix.count) }
        stem = stem.replacing(".", with: "_")
        for prefix in ["ef_", "ef"] where stem.hasPrefix(prefix) && stem.count > prefix.count {
            stem = String(stem.dropFirst(prefix.count))
            break
        }
        switch stem {
        case "com", "011e": self = .com
        case "sod", "011d": self = .sod
        case "cardaccess", "card_access", "011c": self = .cardAccess
        case "cardsecurity", "card_security": self = .cardSecurity
        case "atrinfo", "atr_info", "2f01": self = .atrInfo
        case "cvca": self = .cvca
        case "dir", "2f00": self = .directory
        default:
            for prefix in ["datagroup", "dg", "_dg"] where stem.hasPrefix(prefix) {
                if let n = Int(stem.dropFirst(prefix.count)), (1...16).contains(n) {
                    self = .dataGroup(n)
                    return
                }
            }
            if stem.count == 4, let fid = UInt16(stem, radix: 16), (0x0101...0x0110).contains(fid) {
                self = .dataGroup(Int(fid - 0x0100))
                return
            }
            return nil
        }
    }

    public var dataGroupNumber: Int? {
        if case .dataGroup(let n) = self { return n }
        return nil
    }

    private var order: Int {
        switch self {
        case .directory: return -1
        case .cardAccess: return 0
        case .atrInfo: return 1
        case .cardSecurity: return 2
        case .com: return 3
        case .sod: return 4
        case .cvca: return 5
        case .dataGroup(let n): return 10 + n
        }
    }

    public static func < (lhs: LDSFile, rhs: LDSFile) -> Bool { lhs.order < rhs.order }
}
