/// Every error code a host answers a page with (`BridgeErrorPayload.code`): the codes of the
/// GBGBridge design and the iOS reference, and this host's own (the camera codes). One enum, so
/// that a code is spelled once; `Docs/nfc-read.schema.json` lists the same set and the tests
/// validate every response against it.
public enum BridgeErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
    /// The request cannot be served as sent: a malformed envelope, a bad or missing field. Not
    /// recoverable: sending it again does the same.
    case invalidRequest = "INVALID_REQUEST"
    /// The message's protocol version is not "1.0".
    case unsupportedVersion = "UNSUPPORTED_VERSION"
    /// No capability of this host answers the action, or its slot has no camera or handler
    /// (status `unsupported`).
    case unsupported = "UNSUPPORTED"
    /// The page has as many requests (or bytes of them) open as a host holds for one page; answer
    /// or wait for them first. Recoverable.
    case tooManyRequests = "TOO_MANY_REQUESTS"
    /// Another request of the kind is in progress (a capture slot, or the one nfc.read at a time).
    case busy = "BUSY"
    /// The request was cancelled (its page went away, or the host stopped it).
    case cancelled = "CANCELLED"
    /// nfc.read: no reader (status `unsupported`), none matching `reader`, or pcscd away or refusing.
    case nfcNotAvailable = "NFC_NOT_AVAILABLE"
    /// nfc.read: no card in time, or the chip stopped answering (`readTimeoutSeconds`).
    case cardTimeout = "CARD_TIMEOUT"
    /// nfc.read: the chip refused the access key (a wrong MRZ or CAN).
    case accessDenied = "ACCESS_DENIED"
    /// nfc.read: the card left the reader and did not come back in time.
    case cardRemoved = "CARD_REMOVED"
    /// nfc.read: the chip answered what a chip must not (unexpected status, bad MAC, broken data,
    /// a ladder without end, another chip after tag loss).
    case chipError = "CHIP_ERROR"
    /// nfc.read: the reader or its transport failed.
    case communicationError = "COMMUNICATION_ERROR"
    /// mdoc.read: the holder declined, or holds no document of the type asked for (Linux addition).
    case documentUnavailable = "DOCUMENT_UNAVAILABLE"
    /// A camera slot: another process streams from the camera.
    case cameraBusy = "CAMERA_BUSY"
    /// A camera slot: this user may not open the camera (not in group `video`).
    case cameraDenied = "CAMERA_DENIED"
    /// A camera slot: the camera failed (unplugged, no frame in time, a corrupt frame).
    case cameraError = "CAMERA_ERROR"
}

extension BridgeErrorPayload {
    /// An error payload with one of the host's codes.
    public init(_ code: BridgeErrorCode, message: String, recoverable: Bool) {
        self.init(code: code.rawValue, message: message, recoverable: recoverable)
    }
}
