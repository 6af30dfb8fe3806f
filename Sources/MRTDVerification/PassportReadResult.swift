#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto
import SmartCardCore

/// Everything a read produced: the raw files, what was parsed from them, and the verifications.
public struct PassportReadResult: Sendable {
    /// `BAC` or `PACE`.
    public var accessControl: String
    /// `GM`, `IM` or `CAM` for PACE.
    public var paceMapping: String?
    /// The PACE protocol, e.g. `PACE-ECDH-GM-AES-128`.
    public var paceProtocol: String?
    /// Why the chip was opened with BAC although it offers PACE, when that happened.
    public var accessControlNote: String?
    /// EF.DIR: the applications the chip names (LDS2 chips); `nil` when it has none.
    public var directory: ApplicationDirectory?
    /// Whether INTERNAL AUTHENTICATE was sent (the outcome is in `active`).
    public var activeAuthenticationPerformed = false
    /// The challenge and the chip's signature, when INTERNAL AUTHENTICATE was answered.
    public var activeAuthenticationExchange: ActiveAuthenticationRecord?
    /// Whether Chip Authentication was attempted (the outcome is in `chip`).
    public var chipAuthenticationPerformed = false
    /// Where the chip key that `chip` rests on came from: `DG14`, or `EF.CardSecurity` (PACE-CAM,
    /// or Chip Authentication on an ID card without DG14).
    package var chipKeySource: String?
    /// Every file read, as read.
    public var files: [LDSFile: [UInt8]]
    /// Files that were wanted but the chip did not give, and why.
    public var absent: [LDSFile: FileAbsence]
    /// `absent` as text, for people.
    package var skipped: [LDSFile: String] { absent.mapValues(\.description) }
    public var com: EFCOM?
    public var sod: SecurityObject?
    public var dg1: DataGroup1?
    public var dg2: DataGroup2?
    public var dg7: DataGroup7?
    public var dg11: DataGroup11?
    public var dg12: DataGroup12?
    public var dg14: SecurityInfos?
    public var dg15: DataGroup15?
    /// Files that were read but could not be parsed, with the reason.
    public var parseErrors: [LDSFile: String]
    /// Data groups read from the chip whose contents are not shown as the document's, with the
    /// reason: those EF.SOD does not cover (not part of the signed document, whatever the chip
    /// says). Their raw bytes stay in `files` (dumps, evidence); reports leave their contents out.
    public var withheld: [LDSFile: String] = [:]
    public var passive: PassiveAuthenticationResult?
    public var passiveOutcome: VerificationOutcome
    public var chip: VerificationOutcome
    public var active: VerificationOutcome
    /// Terminal Authentication (Extended Access Control, for DG3/DG4): `notChecked` without
    /// terminal credentials, `notSupported` when the chip has no EAC-protected data group asked for.
    public var terminal = VerificationOutcome(status: .notChecked, detail: "no terminal credentials were given")
    /// Whether EF.CardAccess (unsigned) offers what the signed DG14 and EF.CardSecurity list.
    public var cardAccessCheck = VerificationOutcome(status: .notChecked, detail: "not checked")
    public var statistics: ReadStatistics
    /// The steps of the read in order (access control, files, chip and active authentication,
    /// verification): how each ended, its APDUs and its time. Empty for saved files.
    public var steps: [ReadStepRecord] = []

    package init(accessControl: String, files: [LDSFile: [UInt8]], absent: [LDSFile: FileAbsence] = [:], com: EFCOM? = nil,
                 sod: SecurityObject? = nil, parseErrors: [LDSFile: String] = [:]) {
        self.accessControl = accessControl
        self.files = files
        self.absent = absent
        self.com = com
        self.sod = sod
        self.parseErrors = parseErrors
        passiveOutcome = VerificationOutcome(status: .notChecked, detail: "passive authentication was not requested")
        chip = VerificationOutcome(status: .notChecked, detail: "chip authentication was not requested")
        active = VerificationOutcome(status: .notChecked, detail: "active authentication was not requested")
        statistics = ReadStatistics(apdus: 0, bytesSent: 0, bytesReceived: 0, fileBytes: 0, cardTime: .zero,
                                    totalTime: .zero, readingTime: .zero, verificationTime: .zero, readSize: 0,
                                    extendedLength: false, reauthentications: 0)
    }

    /// Passive authentication of saved files (a dump): parses them as a read would and verifies
    /// against `trustStore`. Chip and active authentication need the chip and are `notChecked`.
    public static func offline(files: [LDSFile: [UInt8]], trustStore: TrustStore) -> PassportReadResult {
        var result = PassportReadResult(accessControl: "none", files: files)
        if let bytes = files[.com] {
            do { result.com = try EFCOM(bytes: bytes) } catch { result.parseErrors[.com] = error.reason }
        }
        if let bytes = files[.sod] {
            do { result.sod = try SecurityObject(bytes: bytes) } catch { result.parseErrors[.sod] = error.reason }
        }
        ReadVerification.parse(into: &result)
        ReadVerification.verify(&result, passive: true, chip: false, active: false, trustStore: trustStore)
        result.chip = VerificationOutcome(status: .notChecked, detail: "chip authentication needs the chip")
        result.active = VerificationOutcome(status: .notChecked, detail: "active authentication needs the chip")
        return result
    }

    /// The data groups read, sorted (`DG1`, `DG2`, …).
    public var dataGroupsRead: [String] {
        files.keys.filter { $0.dataGroupNumber != nil }.sorted().map(\.name)
    }
}

/// Why a file the read wanted is not among those read.
public enum FileAbsence: Sendable, Hashable, CustomStringConvertible {
    /// The chip has no such file (6A82).
    case notPresent
    /// The file is there but access-protected (6982/6985: needs Extended Access Control).
    case protected
    /// The file could not be read for another reason.
    case unreadable(String)
    /// The reader refused the file before reading it whole: its header claims more than the
    /// file's ceiling, an indefinite length, or the chip kept sending past the header's length.
    case refused(String)

    public var description: String {
        switch self {
        case .notPresent: return "not present on the chip"
        case .protected: return "access protected (needs Extended Access Control)"
        case .unreadable(let reason): return reason
        case .refused(let reason): return "refused: \(reason)"
        }
    }
}
