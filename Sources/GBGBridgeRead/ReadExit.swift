import MRTD
import SmartCard

/// Exit statuses of `gbgbridge read` and `verify` (scripts depend on them).
package enum ReadExit {
    package static let ok: Int32 = 0
    package static let badArguments: Int32 = 2
    package static let accessDenied: Int32 = 3
    package static let noCard: Int32 = 4
    package static let communication: Int32 = 5
    package static let verificationFailed: Int32 = 6
    /// `--mrz-from-camera`: no MRZ read in time, or no camera.
    package static let noMRZ: Int32 = 7

    package static func status(for error: SmartCardError) -> Int32 {
        switch error.code {
        case .timeout, .stalled, .noCard, .noReaders, .readerNotFound, .readerUnavailable: return ReadExit.noCard
        case .cancelled: return ReadExit.noCard
        default: return ReadExit.communication
        }
    }

    package static func status(for error: MRTDError) -> Int32 {
        switch error.code {
        case .accessDenied: return ReadExit.accessDenied
        case .invalidAccessKey: return ReadExit.badArguments
        case .timeout: return ReadExit.noCard
        case .notSupported where error.reason.contains("PACE"): return ReadExit.accessDenied
        default: return ReadExit.communication
        }
    }
}
