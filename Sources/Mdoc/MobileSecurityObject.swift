import CBORCoding
import COSE
import MRTDCrypto

/// The MobileSecurityObject (ISO 18013-5 §9.1.2.4): the issuer-signed digests of every element, the
/// device key, the document type and the validity.
public struct MobileSecurityObject: Sendable, Hashable {
    public let version: String
    public let digestAlgorithm: DigestAlgorithm
    /// namespace → digestID → digest.
    public let valueDigests: [String: [UInt64: [UInt8]]]
    public let deviceKey: COSEKey
    public let docType: String
    public let signed: Double
    public let validFrom: Double
    public let validUntil: Double
    public let expectedUpdate: Double?

    public static let limits = CBORLimits(maximumBytes: 1 << 20, maximumDepth: 10, maximumItems: 20_000, maximumStringBytes: 64 << 10)

    /// From issuerAuth's payload: MobileSecurityObjectBytes, #6.24(bstr .cbor MSO).
    public init(payload: [UInt8]) throws(MdocError) {
        let wrapper = try CBOR.decode(payload, as: "MobileSecurityObjectBytes", limits: Self.limits)
        let (_, item) = try wrapper.embedded(as: "MobileSecurityObjectBytes", limits: Self.limits)
        let map = try item.requireMap("the MobileSecurityObject")
        version = try map.required("version", in: "the MSO").requireText("the MSO's version")
        let algorithmName = try map.required("digestAlgorithm", in: "the MSO").requireText("digestAlgorithm")
        switch algorithmName {
        case "SHA-256": digestAlgorithm = .sha256
        case "SHA-384": digestAlgorithm = .sha384
        case "SHA-512": digestAlgorithm = .sha512
        default: throw MdocError(.unsupported, "the MSO's digest algorithm \(algorithmName.debugDescription); ISO 18013-5 allows SHA-256, SHA-384, SHA-512")
        }
        var digests: [String: [UInt64: [UInt8]]] = [:]
        for entry in try map.required("valueDigests", in: "the MSO").requireMap("valueDigests").entries {
            let namespace = try entry.key.requireText("a namespace in valueDigests")
            var byID: [UInt64: [UInt8]] = [:]
            for digest in try entry.value.requireMap("the digests of \(namespace)").entries {
                guard let id = digest.key.unsignedValue else { throw .malformed("a digestID in \(namespace) is not an unsigned integer") }
                let value = try digest.value.requireBytes("digest \(id)")
                guard value.count == digestAlgorithm.outputLength else { throw .malformed("digest \(id) in \(namespace) is \(value.count) bytes, not \(digestAlgorithm.outputLength)") }
                byID[id] = value
            }
            digests[namespace] = byID
        }
        valueDigests = digests
        let keyInfo = try map.required("deviceKeyInfo", in: "the MSO").requireMap("deviceKeyInfo")
        do { deviceKey = try COSEKey(cbor: try keyInfo.required("deviceKey", in: "deviceKeyInfo")) } catch let error as COSEError {
            throw MdocError(error, in: "the MSO's deviceKey")
        } catch let error as MdocError { throw error } catch { throw .malformed("deviceKey: \(error)") }
        docType = try map.required("docType", in: "the MSO").requireText("the MSO's docType")
        let validity = try map.required("validityInfo", in: "the MSO").requireMap("validityInfo")
        signed = try MdocTime.seconds(validity["signed"], "validityInfo.signed")
        validFrom = try MdocTime.seconds(validity["validFrom"], "validityInfo.validFrom")
        validUntil = try MdocTime.seconds(validity["validUntil"], "validityInfo.validUntil")
        expectedUpdate = validity["expectedUpdate"] == nil ? nil : try MdocTime.seconds(validity["expectedUpdate"], "validityInfo.expectedUpdate")
    }

    /// MobileSecurityObjectBytes for an issuer (the emulator and tests).
    public static func payload(docType: String, digestAlgorithm: DigestAlgorithm = .sha256, valueDigests: [(String, [(UInt64, [UInt8])])],
                               deviceKey: COSEKey, signed: Double, validFrom: Double, validUntil: Double) -> [UInt8] {
        var digests = CBORMap()
        for (namespace, entries) in valueDigests {
            var byID = CBORMap()
            for (id, digest) in entries { byID[.unsigned(id)] = .bytes(digest) }
            digests[namespace] = .map(byID)
        }
        func tdate(_ seconds: Double) -> CBOR { .tagged(0, .text(MdocTime.dateTime(seconds))) }
        let name = digestAlgorithm == .sha384 ? "SHA-384" : digestAlgorithm == .sha512 ? "SHA-512" : "SHA-256"
        let mso: CBOR = .map([
            "version": .text("1.0"), "digestAlgorithm": .text(name), "valueDigests": .map(digests),
            "deviceKeyInfo": .map(["deviceKey": deviceKey.cbor()]), "docType": .text(docType),
            "validityInfo": .map(["signed": tdate(signed), "validFrom": tdate(validFrom), "validUntil": tdate(validUntil)]),
        ])
        return CBOR.embedded(EmbeddedCBOR(encoding: mso)).encoded()
    }
}
