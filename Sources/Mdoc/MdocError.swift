import CBORCoding
import COSE

/// An mdoc exchange or structure refused, with a stable code (Docs/mdoc.md lists them).
public struct MdocError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A structure of ISO 18013-5 that is not what the standard defines.
        public static let malformed = Code("MDOC_MALFORMED")
        /// Something the holder offers that this reader does not do (cipher suite, curve, carrier).
        public static let unsupported = Code("MDOC_UNSUPPORTED")
        /// Session encryption failed: a tag that does not verify, a counter replayed or skipped.
        public static let sessionEncryption = Code("MDOC_SESSION_ENCRYPTION")
        /// The holder ended the session or answered with an error status.
        public static let sessionTerminated = Code("MDOC_SESSION_TERMINATED")
        /// The holder returned no document (declined, or has none of the type asked for).
        public static let noDocument = Code("MDOC_NO_DOCUMENT")
        /// A size, count or time limit of this reader was reached.
        public static let limitExceeded = Code("MDOC_LIMIT_EXCEEDED")
        /// The engagement failed: NFC (NDEF, handover), or a QR code that is not an mdoc engagement.
        public static let engagement = Code("MDOC_ENGAGEMENT")
        /// The APDU transport failed (status words, chaining, GET RESPONSE).
        public static let transport = Code("MDOC_TRANSPORT")
        /// A request this reader was asked to make is not valid.
        public static let invalidRequest = Code("MDOC_INVALID_REQUEST")
        /// The read's deadline passed.
        public static let timeout = Code("MDOC_TIMEOUT")
        /// A signed list (a VICAL) no anchor vouches for.
        public static let untrustedList = Code("MDOC_UNTRUSTED_LIST")
        /// The BLE transport failed: no adapter, the holder not found, a GATT operation refused, the
        /// peer's Ident or framing wrong, the link lost.
        public static let bleTransport = Code("MDOC_BLE")
        /// A key for reader authentication could not be used.
        public static let readerKey = Code("MDOC_READER_KEY")
        /// The camera that was to read the holder's QR code is missing or failed.
        public static let cameraUnavailable = Code("MDOC_CAMERA")
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }

    static func malformed(_ reason: String) -> MdocError { MdocError(.malformed, reason) }

    init(_ error: CBORError, in what: String) {
        let code: Code = [.tooLong, .tooDeep, .tooManyItems, .indefiniteLength].contains(error.code) ? .limitExceeded : .malformed
        self.init(code, "\(what): \(error)")
    }

    init(_ error: COSEError, in what: String) {
        self.init(error.code == .unsupportedAlgorithm ? .unsupported : .malformed, "\(what): \(error.reason)")
    }
}

extension CBOR {
    /// Decodes `bytes` as `what`, turning a refusal into an `MdocError` that names it.
    static func decode(_ bytes: [UInt8], as what: String, limits: CBORLimits = .default) throws(MdocError) -> CBOR {
        do { return try CBOR.decode(bytes, limits: limits) } catch { throw MdocError(error, in: what) }
    }

    /// The embedded item of a tag-24 field, decoded.
    func embedded(as what: String, limits: CBORLimits = .default) throws(MdocError) -> (EmbeddedCBOR, CBOR) {
        guard let embedded = embeddedValue else { throw .malformed("\(what) is a \(kindName), not embedded CBOR (tag 24)") }
        return (embedded, try CBOR.decode(embedded.content, as: what, limits: limits))
    }

    func requireMap(_ what: String) throws(MdocError) -> CBORMap {
        guard let map = mapValue else { throw .malformed("\(what) is a \(kindName), not a map") }
        return map
    }

    func requireArray(_ what: String) throws(MdocError) -> [CBOR] {
        guard let array = arrayValue else { throw .malformed("\(what) is a \(kindName), not an array") }
        return array
    }

    func requireText(_ what: String) throws(MdocError) -> String {
        guard let text = textValue else { throw .malformed("\(what) is a \(kindName), not a text string") }
        return text
    }

    func requireBytes(_ what: String) throws(MdocError) -> [UInt8] {
        guard let bytes = bytesValue else { throw .malformed("\(what) is a \(kindName), not a byte string") }
        return bytes
    }
}

extension CBORMap {
    func required(_ key: String, in what: String) throws(MdocError) -> CBOR {
        guard let value = self[key] else { throw .malformed("\(what) has no \"\(key)\"") }
        return value
    }

    func required(_ key: Int, in what: String) throws(MdocError) -> CBOR {
        guard let value = self[key] else { throw .malformed("\(what) has no key \(key)") }
        return value
    }
}
