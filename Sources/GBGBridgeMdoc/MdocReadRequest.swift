import GBGBridge
import Mdoc
import MdocNFC

/// A validated `mdoc.read` request (Docs/mdoc.md): `docType`, `elements` ({namespace: [names]})
/// or `preset`, `intentToRetain`, `timeoutSeconds`, `readTimeoutSeconds`, `reader`, `handover`,
/// `transport` (auto, nfc or ble: the carrier after the NFC engagement), `qrCode` (the holder's
/// QR engagement as the page read it, `mdoc:…`, or `{"fromCamera": true}`: the kiosk's document
/// camera looks for it; no NFC either way, the session over BLE).
struct MdocReadRequest: Sendable {
    var request: MdocRequest
    var timeout: Duration = .seconds(30)
    var readTimeout: Duration = .seconds(30)
    var reader: String?
    var handover: MdocReadOptionsHandover = .automatic
    var transport: MdocReadOptions.Transport = .auto
    /// The holder's QR engagement, when the page gave one.
    var qrEngagement: DeviceEngagement?
    /// `qrCode: {"fromCamera": true}`: the kiosk's document camera reads the holder's QR code.
    var qrFromCamera = false

    /// Whether the holder engages by a QR code (no NFC reader involved).
    var engagesByQR: Bool { qrEngagement != nil || qrFromCamera }

    enum MdocReadOptionsHandover: String { case automatic = "auto", `static`, negotiated }

    struct Invalid: Error {
        let message: String
    }

    init(_ data: [String: JSONValue]?) throws(Invalid) {
        let fields = data ?? [:]
        var docType = MdocDocType.mDL
        if let value = fields["docType"], !value.isNull {
            guard let text = value.stringValue else { throw Invalid(message: "docType must be a string such as \"org.iso.18013.5.1.mDL\"") }
            docType = text
        }
        var retain = false
        if let value = fields["intentToRetain"], !value.isNull {
            guard let flag = value.boolValue else { throw Invalid(message: "intentToRetain must be true or false") }
            retain = flag
        }
        do {
            if let elements = fields["elements"], !elements.isNull {
                guard case .object(let namespaces) = elements, !namespaces.isEmpty else {
                    throw Invalid(message: "elements must be an object {namespace: [element names]}")
                }
                var list: [MdocRequest.Element] = []
                for namespace in namespaces.keys.sorted() {
                    guard let names = namespaces[namespace]?.arrayValue else { throw Invalid(message: "elements.\(namespace) must be an array of element names") }
                    for name in names {
                        guard let identifier = name.stringValue else { throw Invalid(message: "elements.\(namespace) must hold strings") }
                        list.append(MdocRequest.Element(namespace: namespace, identifier: identifier, intentToRetain: retain))
                    }
                }
                request = try MdocRequest(docType: docType, elements: list)
            } else {
                var preset = "identity"
                if let value = fields["preset"], !value.isNull {
                    guard let text = value.stringValue else { throw Invalid(message: "preset must be one of \(MdocDocType.presetNames.joined(separator: ", "))") }
                    preset = text
                }
                guard MdocDocType.presetNames.contains(preset) else { throw Invalid(message: "preset must be one of \(MdocDocType.presetNames.joined(separator: ", "))") }
                request = try MdocDocType.request(docType: docType, spec: preset, intentToRetain: retain)
            }
        } catch let error as Invalid {
            throw error
        } catch let error as MdocError {
            throw Invalid(message: error.reason)
        } catch {
            throw Invalid(message: "\(error)")
        }
        if let value = fields["timeoutSeconds"], !value.isNull {
            guard let seconds = value.doubleValue, seconds > 0, seconds <= 600 else { throw Invalid(message: "timeoutSeconds must be a number between 0 and 600") }
            timeout = .milliseconds(Int(seconds * 1000))
        }
        if let value = fields["readTimeoutSeconds"], !value.isNull {
            guard let seconds = value.doubleValue, seconds >= 5, seconds <= 600 else { throw Invalid(message: "readTimeoutSeconds must be a number from 5 to 600") }
            readTimeout = .milliseconds(Int(seconds * 1000))
        }
        if let value = fields["reader"], !value.isNull {
            guard let text = value.stringValue, !text.isEmpty, text.count <= 200 else { throw Invalid(message: "reader must be a non-empty string") }
            reader = text
        }
        if let value = fields["handover"], !value.isNull {
            guard let text = value.stringValue, let mode = MdocReadOptionsHandover(rawValue: text) else {
                throw Invalid(message: "handover must be auto, static or negotiated")
            }
            handover = mode
        }
        if let value = fields["transport"], !value.isNull {
            guard let text = value.stringValue, let carrier = MdocReadOptions.Transport(rawValue: text) else {
                throw Invalid(message: "transport must be auto, nfc or ble")
            }
            transport = carrier
        }
        if let value = fields["qrCode"], !value.isNull {
            if case .object(let object) = value {
                guard object.count == 1, object["fromCamera"]?.boolValue == true else {
                    throw Invalid(message: "qrCode must be the text of the holder's QR code (mdoc:…) or {\"fromCamera\": true}")
                }
                qrFromCamera = true
            } else {
                guard let text = value.stringValue, !text.isEmpty else {
                    throw Invalid(message: "qrCode must be the text of the holder's QR code (mdoc:…) or {\"fromCamera\": true}")
                }
                do {
                    qrEngagement = try DeviceEngagement(qrCode: Array(text.utf8))
                } catch {
                    throw Invalid(message: "qrCode: \(error.reason)")
                }
            }
            if reader != nil || handover != .automatic { throw Invalid(message: "reader and handover are the NFC engagement's; a qrCode engagement has neither") }
            if transport == .nfc { throw Invalid(message: "a qrCode engagement retrieves over BLE: transport auto or ble") }
        }
        let known: Set<String> = ["docType", "elements", "preset", "intentToRetain", "timeoutSeconds", "readTimeoutSeconds", "reader", "handover", "transport", "qrCode"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw Invalid(message: "\(unknown.count > 40 ? String(unknown.prefix(40)) + "…" : unknown) is not a field of mdoc.read")
        }
    }
}
