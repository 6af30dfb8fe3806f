import BoundedFiles
import CBORCoding
import COSE
import Foundation
import GBGBridge
import MRTDCrypto
import Mdoc

/// A document an emulated holder presents: its elements as IssuerSignedItems, the MSO over their
/// digests signed by a document signer, and the device key that authenticates each session.
public struct MdocCredential: Sendable {
    public let docType: String
    public let description: String
    /// Per namespace, in profile order.
    public let items: [(namespace: String, items: [IssuerSignedItem])]
    public let issuerAuth: COSESign1
    public let deviceKey: PrivateKey
    /// The document signer (and its key) that signed `issuerAuth`.
    let signerCertificate: [UInt8]
    let signerKey: PrivateKey
    let digestAlgorithm: DigestAlgorithm
    let validFrom: Double
    let validUntil: Double

    /// A profile's elements, typed (see Fixtures/mdoc/README.md).
    public struct Profile: Sendable {
        public var docType: String
        public var description: String
        public var namespaces: [(String, [(String, CBOR)])]
        public var validFrom: Double
        public var validUntil: Double
        public var signerCertificate: [UInt8]
        public var signerKey: PrivateKey
        public var deviceKey: PrivateKey
    }

    /// The largest profile file read.
    static let maximumProfileBytes = 256 << 10
    /// The largest file a profile's `{"file": …}` value may name (a portrait).
    static let maximumValueFileBytes = 4 << 20

    /// Loads a profile file (JSON) and issues the credential.
    public static func load(profileAt url: URL, signerCertificate: URL? = nil) throws -> MdocCredential {
        try MdocCredential(profile: try loadProfile(url, signerCertificate: signerCertificate))
    }

    static func loadProfile(_ url: URL, signerCertificate override: URL?) throws -> Profile {
        let data = try BoundedFile.read(url.path, ceiling: maximumProfileBytes, what: "the mdoc profile")
        let name = url.lastPathComponent
        guard case .object(let json) = try JSONDecoder().decode(JSONValue.self, from: Data(data)) else {
            throw MdocError(.malformed, "\(name): a profile is a JSON object")
        }
        let base = url.deletingLastPathComponent()
        func string(_ key: String) throws -> String {
            guard case .string(let value)? = json[key] else { throw MdocError(.malformed, "\(name): no string \"\(key)\"") }
            return value
        }
        func file(_ relative: String) throws -> [UInt8] {
            try BoundedFile.read(base.appendingPathComponent(relative).path, ceiling: maximumValueFileBytes, what: relative)
        }
        guard case .object(let signer)? = json["documentSigner"], case .string(let certificate)? = signer["certificate"],
              case .string(let key)? = signer["key"] else {
            throw MdocError(.malformed, "\(name): documentSigner needs certificate and key")
        }
        guard case .object(let namespaces)? = json["namespaces"] else { throw MdocError(.malformed, "\(name): no namespaces") }
        var typed: [(String, [(String, CBOR)])] = []
        for namespace in namespaces.keys.sorted() {
            guard case .object(let elements)? = namespaces[namespace] else { throw MdocError(.malformed, "\(name): namespace \(namespace) is not an object") }
            var values: [(String, CBOR)] = []
            for element in elements.keys.sorted() {
                guard let value = elements[element] else { continue }
                values.append((element, try Self.value(value, file: file)))
            }
            typed.append((namespace, values))
        }
        guard let from = MdocTime.seconds(dateTime: try string("validFrom")), let until = MdocTime.seconds(dateTime: try string("validUntil")) else {
            throw MdocError(.malformed, "\(name): validFrom and validUntil are RFC 3339 date-times")
        }
        let signerCertificateBytes = try override.map { try BoundedFile.read($0.path, ceiling: 64 << 10, what: "the document signer certificate") } ?? file(certificate)
        var description = ""
        if case .string(let text)? = json["description"] { description = text }
        return Profile(docType: try string("docType"), description: description, namespaces: typed,
                       validFrom: from, validUntil: until, signerCertificate: try Certificate(bytes: signerCertificateBytes).derBytes,
                       signerKey: try PrivateKey(bytes: try file(key)), deviceKey: try PrivateKey(bytes: try file(try string("deviceKey"))))
    }

    /// A profile value as CBOR.
    static func value(_ json: JSONValue, file: (String) throws -> [UInt8]) throws -> CBOR {
        switch json {
        case .string(let text): return .text(text)
        case .bool(let flag): return .bool(flag)
        case .number(let number):
            guard number == number.rounded(), abs(number) < 9e15 else { return .float(number) }
            return CBOR(Int(number))
        case .array(let array): return .array(try array.map { try value($0, file: file) })
        case .object(let object):
            if object.count == 1, case .string(let text)? = object.values.first {
                switch object.keys.first {
                case "full-date": return .tagged(1004, .text(text))
                case "tdate": return .tagged(0, .text(text))
                case "file": return .bytes(try file(text))
                case "hex":
                    guard let bytes = hexBytes(text) else { throw MdocError(.malformed, "\(text.prefix(16))… is not hex") }
                    return .bytes(bytes)
                default: break
                }
            }
            var map = CBORMap()
            for key in object.keys.sorted() {
                if let member = object[key] { map[key] = try value(member, file: file) }
            }
            return .map(map)
        case .null:
            return .null
        }
    }

    /// Issues the credential: random salts, digest IDs in order, the MSO signed by the profile's signer.
    public init(profile: Profile, digestAlgorithm: DigestAlgorithm = .sha256) throws {
        var items: [(String, [IssuerSignedItem])] = []
        var digests: [(String, [(UInt64, [UInt8])])] = []
        var nextID: UInt64 = 0
        for (namespace, values) in profile.namespaces {
            var namespaceItems: [IssuerSignedItem] = []
            var namespaceDigests: [(UInt64, [UInt8])] = []
            for (name, value) in values {
                let item = IssuerSignedItem(digestID: nextID, random: secureRandomBytes(16), elementIdentifier: name, elementValue: value)
                namespaceItems.append(item)
                namespaceDigests.append((nextID, digestAlgorithm.hash(item.bytes.taggedBytes)))
                nextID += 1
            }
            items.append((namespace, namespaceItems))
            digests.append((namespace, namespaceDigests))
        }
        // Issued now: ISO 18013-5 wants validFrom no earlier than signed, and signed inside the signer's validity.
        let issued = (Date().timeIntervalSince1970).rounded(.down)
        guard let device = profile.deviceKey.ecKey, let curve = COSEKey.Curve(device.curve) else {
            throw MdocError(.unsupported, "the device key is not an EC key on a COSE curve")
        }
        let payload = MobileSecurityObject.payload(docType: profile.docType, digestAlgorithm: digestAlgorithm, valueDigests: digests,
                                                   deviceKey: COSEKey(curve: curve, publicKey: device.point),
                                                   signed: issued, validFrom: max(issued, profile.validFrom), validUntil: profile.validUntil)
        self.docType = profile.docType
        self.description = profile.description
        self.items = items
        self.issuerAuth = try Self.sign(payload, certificate: profile.signerCertificate, key: profile.signerKey)
        self.deviceKey = profile.deviceKey
        self.signerCertificate = profile.signerCertificate
        self.signerKey = profile.signerKey
        self.digestAlgorithm = digestAlgorithm
        self.validFrom = profile.validFrom
        self.validUntil = profile.validUntil
    }

    static func sign(_ payload: [UInt8], certificate: [UInt8], key: PrivateKey) throws -> COSESign1 {
        let algorithm: COSEAlgorithm = (key.ecKey?.curve.fieldSize ?? 32) > 48 ? .es512 : (key.ecKey?.curve.fieldSize ?? 32) > 32 ? .es384 : .es256
        return try COSESign1.sign(payload: payload, key: key, algorithm: algorithm, unprotected: [CBOR(33): .bytes(certificate)])
    }

    /// The same document with issuerAuth's x5chain naming another certificate (hostile modes).
    func withSignerCertificate(_ certificate: [UInt8]) throws -> COSESign1 {
        guard let payload = issuerAuth.payload else { return issuerAuth }
        return try Self.sign(payload, certificate: certificate, key: signerKey)
    }
}

func hexBytes(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count.isMultiple(of: 2) else { return nil }
    var bytes: [UInt8] = []
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[index...(index + 1)], as: UTF8.self), radix: 16) else { return nil }
        bytes.append(byte)
    }
    return bytes
}
