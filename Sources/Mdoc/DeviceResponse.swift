import CBORCoding
import COSE

/// IssuerSignedItem (ISO 18013-5 §8.3.2.1.2.2) with IssuerSignedItemBytes exactly as received:
/// the MSO's digest is over those bytes.
public struct IssuerSignedItem: Sendable, Hashable {
    public let bytes: EmbeddedCBOR
    public let digestID: UInt64
    public let random: [UInt8]
    public let elementIdentifier: String
    public let elementValue: CBOR

    init(_ item: CBOR, limits: CBORLimits) throws(MdocError) {
        let (bytes, decoded) = try item.embedded(as: "IssuerSignedItemBytes", limits: limits)
        let map = try decoded.requireMap("an IssuerSignedItem")
        guard let digestID = map["digestID"]?.unsignedValue else { throw .malformed("an IssuerSignedItem without an unsigned digestID") }
        self.bytes = bytes
        self.digestID = digestID
        random = try map.required("random", in: "an IssuerSignedItem").requireBytes("random")
        elementIdentifier = try map.required("elementIdentifier", in: "an IssuerSignedItem").requireText("elementIdentifier")
        elementValue = try map.required("elementValue", in: "an IssuerSignedItem")
    }

    /// An item whose bytes are given as they are (an emulated holder's malformed items).
    public init(taggedBytes bytes: EmbeddedCBOR, digestID: UInt64, elementIdentifier: String) {
        self.bytes = bytes
        self.digestID = digestID
        random = []
        self.elementIdentifier = elementIdentifier
        elementValue = .null
    }

    /// An item the holder side makes (the emulator).
    public init(digestID: UInt64, random: [UInt8], elementIdentifier: String, elementValue: CBOR) {
        let map: CBOR = .map(["digestID": .unsigned(digestID), "random": .bytes(random), "elementIdentifier": .text(elementIdentifier), "elementValue": elementValue])
        bytes = EmbeddedCBOR(encoding: map)
        self.digestID = digestID
        self.random = random
        self.elementIdentifier = elementIdentifier
        self.elementValue = elementValue
    }
}

/// How the mdoc authenticated itself (DeviceAuth).
public enum DeviceAuthentication: Sendable, Hashable {
    case signature(COSESign1)
    case mac(COSEMac0)

    public var method: String {
        switch self {
        case .signature: return "signature"
        case .mac: return "mac"
        }
    }
}

/// One returned Document (ISO 18013-5 §8.3.2.1.2.2).
public struct MdocDocument: Sendable, Hashable {
    public let docType: String
    /// Per namespace, in the order received.
    public let issuerNamespaces: [(namespace: String, items: [IssuerSignedItem])]
    public let issuerAuth: COSESign1
    /// DeviceNameSpacesBytes as received.
    public let deviceNamespacesBytes: EmbeddedCBOR
    public let deviceAuth: DeviceAuthentication
    /// Elements the holder did not return, with its error codes.
    public let errors: [(namespace: String, element: String, code: Int)]

    public static func == (lhs: MdocDocument, rhs: MdocDocument) -> Bool {
        lhs.docType == rhs.docType && lhs.issuerAuth == rhs.issuerAuth && lhs.deviceNamespacesBytes == rhs.deviceNamespacesBytes
            && lhs.deviceAuth == rhs.deviceAuth && lhs.issuerNamespaces.map(\.items) == rhs.issuerNamespaces.map(\.items)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(docType)
        hasher.combine(issuerAuth)
    }

    init(_ item: CBOR, limits: CBORLimits) throws(MdocError) {
        let map = try item.requireMap("a Document")
        docType = try map.required("docType", in: "a Document").requireText("docType")
        let issuerSigned = try map.required("issuerSigned", in: "a Document").requireMap("issuerSigned")
        var namespaces: [(String, [IssuerSignedItem])] = []
        if let namespacesItem = issuerSigned["nameSpaces"] {
            for entry in try namespacesItem.requireMap("IssuerNameSpaces").entries {
                let namespace = try entry.key.requireText("a namespace")
                var items: [IssuerSignedItem] = []
                for element in try entry.value.requireArray("namespace \(namespace)") { items.append(try IssuerSignedItem(element, limits: limits)) }
                namespaces.append((namespace, items))
            }
        }
        issuerNamespaces = namespaces
        do { issuerAuth = try COSESign1(cbor: try issuerSigned.required("issuerAuth", in: "issuerSigned")) } catch let error as COSEError {
            throw MdocError(error, in: "issuerAuth")
        } catch let error as MdocError { throw error } catch { throw .malformed("issuerAuth: \(error)") }
        let deviceSigned = try map.required("deviceSigned", in: "a Document").requireMap("deviceSigned")
        let (namespacesBytes, deviceNamespaces) = try deviceSigned.required("nameSpaces", in: "deviceSigned").embedded(as: "DeviceNameSpacesBytes", limits: limits)
        _ = try deviceNamespaces.requireMap("DeviceNameSpaces")
        deviceNamespacesBytes = namespacesBytes
        let auth = try deviceSigned.required("deviceAuth", in: "deviceSigned").requireMap("deviceAuth")
        do {
            if let signature = auth["deviceSignature"], auth["deviceMac"] == nil {
                deviceAuth = .signature(try COSESign1(cbor: signature))
            } else if let mac = auth["deviceMac"], auth["deviceSignature"] == nil {
                deviceAuth = .mac(try COSEMac0(cbor: mac))
            } else {
                throw MdocError.malformed("deviceAuth holds neither or both of deviceSignature and deviceMac")
            }
        } catch let error as COSEError {
            throw MdocError(error, in: "deviceAuth")
        } catch let error as MdocError { throw error } catch { throw .malformed("deviceAuth: \(error)") }
        var errors: [(String, String, Int)] = []
        if let errorsItem = map["errors"] {
            for entry in try errorsItem.requireMap("errors").entries {
                let namespace = try entry.key.requireText("a namespace in errors")
                for element in try entry.value.requireMap("errors of \(namespace)").entries {
                    errors.append((namespace, try element.key.requireText("an element in errors"), element.value.intValue ?? -1))
                }
            }
        }
        self.errors = errors
    }

    public init(docType: String, issuerNamespaces: [(namespace: String, items: [IssuerSignedItem])], issuerAuth: COSESign1,
                deviceNamespacesBytes: EmbeddedCBOR, deviceAuth: DeviceAuthentication, errors: [(namespace: String, element: String, code: Int)] = []) {
        self.docType = docType
        self.issuerNamespaces = issuerNamespaces
        self.issuerAuth = issuerAuth
        self.deviceNamespacesBytes = deviceNamespacesBytes
        self.deviceAuth = deviceAuth
        self.errors = errors
    }

    public var cbor: CBOR {
        var issuerSigned: CBORMap = [:]
        if !issuerNamespaces.isEmpty {
            var namespaces = CBORMap()
            for (namespace, items) in issuerNamespaces { namespaces[namespace] = .array(items.map { .embedded($0.bytes) }) }
            issuerSigned["nameSpaces"] = .map(namespaces)
        }
        issuerSigned["issuerAuth"] = issuerAuth.cbor
        let auth: CBORMap
        switch deviceAuth {
        case .signature(let signature): auth = ["deviceSignature": signature.cbor]
        case .mac(let mac): auth = ["deviceMac": mac.cbor]
        }
        var map: CBORMap = ["docType": .text(docType), "issuerSigned": .map(issuerSigned),
                            "deviceSigned": .map(["nameSpaces": .embedded(deviceNamespacesBytes), "deviceAuth": .map(auth)])]
        if !errors.isEmpty {
            var namespaces = CBORMap()
            for error in errors {
                var elements = namespaces[error.namespace]?.mapValue ?? CBORMap()
                elements[error.element] = CBOR(error.code)
                namespaces[error.namespace] = .map(elements)
            }
            map["errors"] = .map(namespaces)
        }
        return .map(map)
    }
}

/// DeviceResponse (ISO 18013-5 §8.3.2.1.2.2).
public struct DeviceResponse: Sendable {
    public let version: String
    public let documents: [MdocDocument]
    /// Document types the holder did not return, with its error codes.
    public let documentErrors: [(docType: String, code: Int)]
    /// 0 OK, 10 general error, 11 CBOR decoding error, 12 CBOR validation error.
    public let status: Int

    /// A DeviceResponse with a portrait and a few hundred elements fits; a 20 MB element does not.
    public static let limits = CBORLimits(maximumBytes: 4 << 20, maximumDepth: 16, maximumItems: 50_000, maximumStringBytes: 2 << 20)

    public init(bytes: [UInt8], limits: CBORLimits = DeviceResponse.limits) throws(MdocError) {
        let map = try CBOR.decode(bytes, as: "the DeviceResponse", limits: limits).requireMap("the DeviceResponse")
        version = try map.required("version", in: "the DeviceResponse").requireText("the DeviceResponse's version")
        guard version.hasPrefix("1.") else { throw MdocError(.unsupported, "DeviceResponse version \(version)") }
        guard let status = map["status"]?.intValue else { throw .malformed("the DeviceResponse has no integer status") }
        self.status = status
        var documents: [MdocDocument] = []
        for item in try map["documents"]?.requireArray("documents") ?? [] { documents.append(try MdocDocument(item, limits: limits)) }
        self.documents = documents
        var errors: [(String, Int)] = []
        for item in try map["documentErrors"]?.requireArray("documentErrors") ?? [] {
            for entry in try item.requireMap("a DocumentError").entries {
                errors.append((try entry.key.requireText("a docType in documentErrors"), entry.value.intValue ?? -1))
            }
        }
        documentErrors = errors
    }

    public init(documents: [MdocDocument], documentErrors: [(docType: String, code: Int)] = [], status: Int = 0) {
        version = "1.0"
        self.documents = documents
        self.documentErrors = documentErrors
        self.status = status
    }

    public var encoded: [UInt8] {
        var map: CBORMap = ["version": .text(version)]
        if !documents.isEmpty { map["documents"] = .array(documents.map(\.cbor)) }
        if !documentErrors.isEmpty { map["documentErrors"] = .array(documentErrors.map { .map([CBOR.text($0.docType): CBOR($0.code)]) }) }
        map["status"] = CBOR(status)
        return CBOR.map(map).encoded()
    }
}
