import GBGBridge
import MRTD

/// A validated `nfc.read` request (design.md §4).
struct NFCReadRequest: Sendable {
    /// The key to open the chip with; nil when it comes from this page's last document capture
    /// (`accessKey: {"fromDocumentCapture": true}`), which the service looks up.
    var accessKey: AccessKey?
    /// Keys read from the page's last document capture, tried in turn (the first is `accessKey`).
    var keyCandidates: [AccessKey] = []
    var dataGroups: [Int]?
    var verifyPassive = true
    var verifyChip = true
    var verifyActive = true
    /// How long to wait for a card (`timeoutSeconds`).
    var timeout: Duration = .seconds(30)
    /// How long the read may take once the card is there (`readTimeoutSeconds`, 5–600); `nil`:
    /// the service's default (60 s unless `serve --read-timeout` says otherwise).
    var readTimeout: Duration?
    var reader: String?
    /// Whether the response carries `evidence` (the raw files and the AA exchange for a backend).
    var evidence = false
    /// The backend's 8-byte Active Authentication challenge.
    var activeAuthenticationChallenge: [UInt8]?

    static let maxTimeoutSeconds = 600.0
    /// `readTimeoutSeconds` bounds: a read needs a few seconds on a slow chip, and no read needs
    /// ten minutes.
    static let readTimeoutRange = 5.0...600.0

    /// Why a request is invalid; `message` names the field and never repeats its value.
    struct Invalid: Error {
        let message: String
    }

    init(_ data: [String: JSONValue]?) throws(Invalid) {
        guard let fields = data else { throw Invalid(message: "the request has no data; accessKey is required") }
        guard let key = fields["accessKey"], !key.isNull else { throw Invalid(message: "accessKey is required") }
        if case .object(let object) = key, object["fromDocumentCapture"] != nil {
            guard object.count == 1, object["fromDocumentCapture"]?.boolValue == true else {
                throw Invalid(message: "accessKey.fromDocumentCapture must be true, and alone in accessKey")
            }
            accessKey = nil
        } else {
            accessKey = try Self.accessKey(key)
        }

        if let groups = fields["dataGroups"], !groups.isNull {
            guard let list = groups.arrayValue else { throw Invalid(message: "dataGroups must be an array such as [\"DG1\",\"DG2\"]") }
            var numbers: [Int] = []
            for entry in list {
                guard let name = entry.stringValue, let number = LDSFile(name: name)?.dataGroupNumber else {
                    throw Invalid(message: "dataGroups entries must be DG1 … DG16")
                }
                numbers.append(number)
            }
            dataGroups = numbers
        }
        if let verify = fields["verify"], !verify.isNull {
            guard case .object(let flags) = verify else { throw Invalid(message: "verify must be an object {passive, chip, active}") }
            for (name, value) in flags {
                guard let flag = value.boolValue else { throw Invalid(message: "verify.\(name) must be true or false") }
                switch name {
                case "passive": verifyPassive = flag
                case "chip": verifyChip = flag
                case "active": verifyActive = flag
                default: throw Invalid(message: "verify.\(name) is not a verification (passive, chip, active)")
                }
            }
        }
        if let seconds = fields["timeoutSeconds"], !seconds.isNull {
            guard let value = seconds.doubleValue, value > 0, value <= Self.maxTimeoutSeconds else {
                throw Invalid(message: "timeoutSeconds must be a number between 0 and \(Int(Self.maxTimeoutSeconds))")
            }
            timeout = .milliseconds(Int(value * 1000))
        }
        if let seconds = fields["readTimeoutSeconds"], !seconds.isNull {
            guard let value = seconds.doubleValue, Self.readTimeoutRange.contains(value) else {
                throw Invalid(message: "readTimeoutSeconds must be a number from \(Int(Self.readTimeoutRange.lowerBound)) to \(Int(Self.readTimeoutRange.upperBound))")
            }
            readTimeout = .milliseconds(Int(value * 1000))
        }
        if let evidence = fields["evidence"], !evidence.isNull {
            guard let flag = evidence.boolValue else { throw Invalid(message: "evidence must be true or false") }
            self.evidence = flag
        }
        if let challenge = fields["activeAuthenticationChallenge"], !challenge.isNull {
            guard let bytes = challenge.stringValue.flatMap(ActiveAuthentication.challenge(base64:)) else {
                throw Invalid(message: "activeAuthenticationChallenge must be base64 of exactly 8 bytes (12 characters, e.g. \"AAECAwQFBgc=\")")
            }
            activeAuthenticationChallenge = bytes
        }
        if let reader = fields["reader"], !reader.isNull {
            guard let text = reader.stringValue, !text.isEmpty else { throw Invalid(message: "reader must be a non-empty string") }
            self.reader = text
        }
    }

    static func accessKey(_ value: JSONValue) throws(Invalid) -> AccessKey {
        guard case .object(let key) = value else {
            throw Invalid(message: "accessKey must be an object: {documentNumber, dateOfBirth, dateOfExpiry}, {mrz}, {can} or {fromDocumentCapture: true}")
        }
        do {
            if let mrz = key["mrz"] {
                guard let text = mrz.stringValue else { throw Invalid(message: "accessKey.mrz must be a string") }
                do {
                    return try AccessKey.mrz(text)
                } catch {
                    throw Invalid(message: "accessKey.mrz is invalid: \(error.reason)")
                }
            }
            if let can = key["can"] {
                guard let text = can.stringValue ?? can.intValue.map(String.init) else {
                    throw Invalid(message: "accessKey.can must be a string of digits")
                }
                return try AccessKey.cardAccessNumber(text)
            }
            var fields: [String] = []
            for field in ["documentNumber", "dateOfBirth", "dateOfExpiry"] {
                guard let entry = key[field] else {
                    throw Invalid(message: "accessKey.\(field) is missing (or give accessKey.mrz or accessKey.can)")
                }
                guard let text = entry.stringValue else { throw Invalid(message: "accessKey.\(field) must be a string") }
                fields.append(text)
            }
            return try AccessKey.fields(documentNumber: fields[0], dateOfBirth: fields[1], dateOfExpiry: fields[2])
        } catch let error as Invalid {
            throw error
        } catch let error as MRTDError {
            // The reason names the field (documentNumber, dateOfBirth, dateOfExpiry, can).
            throw Invalid(message: "accessKey.\(error.reason)")
        } catch {
            throw Invalid(message: "accessKey is invalid")
        }
    }

    /// The request with the access key replaced, for logs.
    static func redacted(_ message: BridgeMessage) -> BridgeMessage {
        guard message.payload.action == NFCReadService.action, var data = message.payload.data,
              data["accessKey"] != nil else { return message }
        data["accessKey"] = "[redacted]"
        var copy = message
        copy.payload.data = data
        return copy
    }
}
