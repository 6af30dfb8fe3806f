import CBORCoding

/// What a reader asks an mdoc for: one document type and, per namespace, element identifiers with
/// whether the reader intends to retain each (ISO 18013-5 §8.3.2.1.2.1 ItemsRequest).
public struct MdocRequest: Sendable, Hashable {
    public struct Element: Sendable, Hashable {
        public var namespace: String
        public var identifier: String
        public var intentToRetain: Bool

        public init(namespace: String, identifier: String, intentToRetain: Bool = false) {
            self.namespace = namespace
            self.identifier = identifier
            self.intentToRetain = intentToRetain
        }
    }

    public var docType: String
    /// In request order; a (namespace, identifier) pair appears once.
    public private(set) var elements: [Element]

    /// The most elements one request may name (a bound on what the holder is asked to compute).
    public static let maximumElements = 256

    public init(docType: String, elements: [Element]) throws(MdocError) {
        guard MdocRequest.isIdentifier(docType) else { throw MdocError(.invalidRequest, "the document type \(docType.debugDescription) is not a dotted identifier") }
        guard !elements.isEmpty else { throw MdocError(.invalidRequest, "the request names no element") }
        guard elements.count <= Self.maximumElements else { throw MdocError(.invalidRequest, "\(elements.count) elements requested; at most \(Self.maximumElements)") }
        var seen = Set<String>()
        var kept: [Element] = []
        for element in elements {
            guard Self.isIdentifier(element.namespace) else { throw MdocError(.invalidRequest, "the namespace \(element.namespace.debugDescription) is not a dotted identifier") }
            guard Self.isElementIdentifier(element.identifier) else {
                throw MdocError(.invalidRequest, "the element \(element.identifier.debugDescription) is not an element identifier")
            }
            if seen.insert(element.namespace + "\u{0}" + element.identifier).inserted { kept.append(element) }
        }
        self.docType = docType
        self.elements = kept
    }

    static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128 && text.utf8.allSatisfy { $0 == 0x2E || $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) }
    }

    static func isElementIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { $0 == 0x5F || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) }
    }

    public var namespaces: [String] {
        var seen = Set<String>()
        return elements.map(\.namespace).filter { seen.insert($0).inserted }
    }

    /// Whether the request names this element.
    public func contains(namespace: String, identifier: String) -> Bool {
        elements.contains { $0.namespace == namespace && $0.identifier == identifier }
    }

    /// ItemsRequest as CBOR.
    public var itemsRequest: CBOR {
        var namespaces = CBORMap()
        for namespace in self.namespaces {
            var items = CBORMap()
            for element in elements where element.namespace == namespace { items[element.identifier] = .bool(element.intentToRetain) }
            namespaces[namespace] = .map(items)
        }
        return .map(["docType": .text(docType), "nameSpaces": .map(namespaces)])
    }

    /// ItemsRequestBytes: #6.24(bstr .cbor ItemsRequest).
    public var itemsRequestBytes: EmbeddedCBOR { EmbeddedCBOR(encoding: itemsRequest) }

    /// Parses an ItemsRequest (the holder's side and `mdoc verify`).
    public init(itemsRequest item: CBOR) throws(MdocError) {
        let map = try item.requireMap("ItemsRequest")
        let docType = try map.required("docType", in: "ItemsRequest").requireText("ItemsRequest's docType")
        var elements: [Element] = []
        for namespaceEntry in try map.required("nameSpaces", in: "ItemsRequest").requireMap("ItemsRequest's nameSpaces").entries {
            let namespace = try namespaceEntry.key.requireText("a namespace")
            for itemEntry in try namespaceEntry.value.requireMap("namespace \(namespace)").entries {
                let identifier = try itemEntry.key.requireText("an element identifier")
                guard let retain = itemEntry.value.boolValue else { throw .malformed("IntentToRetain of \(identifier) is not a boolean") }
                elements.append(Element(namespace: namespace, identifier: identifier, intentToRetain: retain))
            }
        }
        try self.init(docType: docType, elements: elements)
    }
}

/// Document types, namespaces and the presets `mdoc read --request` and `mdoc.read` offer.
public enum MdocDocType {
    public static let mDL = "org.iso.18013.5.1.mDL"
    public static let mDLNamespace = "org.iso.18013.5.1"
    public static let pid = "eu.europa.ec.eudi.pid.1"
    public static let pidNamespace = "eu.europa.ec.eudi.pid.1"

    public static let known = [mDL, pid]

    /// The namespace of a document type's own elements.
    public static func namespace(of docType: String) -> String? {
        switch docType {
        case mDL: return mDLNamespace
        case pid: return pidNamespace
        default: return nil
        }
    }

    public static let presetNames = ["age-over-18", "identity", "driving"]

    /// A preset's elements for a document type; nil when the preset does not apply to it.
    public static func preset(_ name: String, docType: String) -> [String]? {
        switch (name, docType) {
        case ("age-over-18", mDL): return ["age_over_18", "portrait"]
        case ("age-over-18", pid): return ["age_over_18"]
        case ("identity", mDL): return ["family_name", "given_name", "birth_date", "portrait", "document_number", "issuing_country", "issuing_authority", "expiry_date"]
        case ("identity", pid): return ["family_name", "given_name", "birth_date", "nationality", "issuing_country", "issuing_authority", "expiry_date", "document_number"]
        case ("driving", mDL): return ["family_name", "given_name", "birth_date", "portrait", "document_number", "issuing_country", "issue_date", "expiry_date", "driving_privileges", "un_distinguishing_sign"]
        default: return nil
        }
    }

    /// A request from `--request`: a preset name, or `NS:ELEMENT,NS:ELEMENT,…` (a bare ELEMENT
    /// takes the document type's namespace).
    public static func request(docType: String, spec: String, intentToRetain: Bool = false) throws(MdocError) -> MdocRequest {
        if let names = preset(spec, docType: docType), let namespace = namespace(of: docType) {
            return try MdocRequest(docType: docType, elements: names.map { MdocRequest.Element(namespace: namespace, identifier: $0, intentToRetain: intentToRetain) })
        }
        if presetNames.contains(spec) { throw MdocError(.invalidRequest, "the preset \(spec) does not apply to \(docType)") }
        var elements: [MdocRequest.Element] = []
        for part in spec.split(separator: ",", omittingEmptySubsequences: false) {
            let text = part.trimmingCharacters(in: " ")
            if let colon = text.lastIndex(of: ":") {
                elements.append(MdocRequest.Element(namespace: String(text[..<colon]), identifier: String(text[text.index(after: colon)...]), intentToRetain: intentToRetain))
            } else if let namespace = namespace(of: docType) {
                elements.append(MdocRequest.Element(namespace: namespace, identifier: text, intentToRetain: intentToRetain))
            } else {
                throw MdocError(.invalidRequest, "\(text.debugDescription) names no namespace, and \(docType) has no default one: write NS:ELEMENT")
            }
        }
        return try MdocRequest(docType: docType, elements: elements)
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
