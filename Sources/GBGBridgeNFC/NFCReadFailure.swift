import GBGBridge
import MRTD
import SmartCardCore

extension NFCReadService {
    /// How a read ended when it did not succeed, as the page is told: a code from
    /// `BridgeErrorCode`, a message in words (never an access key or document data), and whether
    /// trying again may help. The one place where reader and chip errors become wire codes.
    struct Failure: Error {
        let code: BridgeErrorCode
        let message: String
        let recoverable: Bool
    }

    /// A failure of the reader layer (waiting for a card, connecting).
    nonisolated static func failure(_ error: SmartCardError) -> Failure {
        switch error.code {
        case .timeout: return Failure(code: .cardTimeout, message: "no card was presented in time", recoverable: true)
        case .stalled: return Failure(code: .cardTimeout, message: error.reason, recoverable: true)
        case .cancelled: return Failure(code: .cancelled, message: "the read was cancelled", recoverable: true)
        case .noReaders, .readerNotFound, .readerUnavailable, .serviceUnavailable, .permissionDenied:
            return Failure(code: .nfcNotAvailable, message: error.reason, recoverable: false)
        case .cardRemoved, .noCard: return Failure(code: .cardRemoved, message: "the card was removed", recoverable: true)
        default: return Failure(code: .communicationError, message: error.reason, recoverable: true)
        }
    }

    /// A failure of the read itself.
    nonisolated static func failure(_ error: MRTDError) -> Failure {
        switch error.code {
        case .accessDenied:
            return Failure(code: .accessDenied, message: "the chip refused the access key; check the MRZ or CAN", recoverable: true)
        case .cardRemoved: return Failure(code: .cardRemoved, message: error.reason, recoverable: true)
        case .cancelled: return Failure(code: .cancelled, message: "the read was cancelled", recoverable: true)
        case .timeout: return Failure(code: .cardTimeout, message: error.reason, recoverable: true)
        case .communicationFailure: return Failure(code: .communicationError, message: error.reason, recoverable: true)
        case .invalidAccessKey: return Failure(code: .invalidRequest, message: error.reason, recoverable: false)
        default: return Failure(code: .chipError, message: error.reason, recoverable: true)
        }
    }
}
