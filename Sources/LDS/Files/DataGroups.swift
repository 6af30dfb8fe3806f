import TextSanitizing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto
import SmartCardCore

/// EF.COM: the LDS version and the data groups the chip says it has.
public struct EFCOM: Sendable, Hashable {
    public var ldsVersion: String?
    public var unicodeVersion: String?
    public var dataGroups: [Int]

    /// Parses EF.COM. Tolerates the tag list written as ASCII hex (as vsmartcard's ePass does),
    /// trailing padding, and unknown tags (ignored).
    public init(bytes: [UInt8]) throws(MRTDError) {
        let root = try parseLDS(bytes, expecting: 0x60, "EF.COM")
        let children = try children(of: root, "EF.COM")
        ldsVersion = children.first { $0.tag == 0x5F01 }.map { String(decoding: $0.value, as: UTF8.self) }
        unicodeVersion = children.first { $0.tag == 0x5F36 }.map { String(decoding: $0.value, as: UTF8.self) }
        guard var tags = children.first(where: { $0.tag == 0x5C })?.value else {
            throw MRTDError(.malformedData, "EF.COM has no tag list (5C)")
        }
        if !tags.isEmpty, tags.count.isMultiple(of: 2), tags.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }),
           let decoded = SmartCardCore.bytes(hex: String(decoding: tags, as: UTF8.self)), decoded.allSatisfy({ LDSFile(comTag: $0) != nil }) {
            tags = decoded
        }
        dataGroups = Array(Set(tags.compactMap { LDSFile(comTag: $0)?.dataGroupNumber })).sorted()
    }
}

/// DG1: the MRZ.
public struct DataGroup1: Sendable, Hashable {
    public var mrz: MRZ

    public init(bytes: [UInt8]) throws(MRTDError) {
        let root = try parseLDS(bytes, expecting: 0x61, "DG1")
        guard let text = try children(of: root, "DG1").first(where: { $0.tag == 0x5F1F })?.value else {
            throw MRTDError(.malformedData, "DG1 has no MRZ (5F1F)")
        }
        do {
            mrz = try MRZ(String(decoding: text, as: UTF8.self))
        } catch {
            throw MRTDError(.malformedData, "DG1's MRZ is invalid: \(error.reason)")
        }
    }
}

/// One image from DG2 (face), DG7 (signature) or DG5/DG6.
public struct LDSImage: Sendable, Hashable {
    public enum Record: String, Sendable, Hashable, Codable {
        /// ISO/IEC 19794-5:2005 facial record (5F2E).
        case iso19794_5
        /// ISO/IEC 39794-5 extensible facial record (7F2E).
        case iso39794_5
        /// A bare image (DG7's 5F43).
        case plain
    }

    public var data: [UInt8]
    public var format: ImageInfo.Format
    public var width: Int
    public var height: Int
    public var record: Record
}

/// DG2: the face image(s).
public struct DataGroup2: Sendable, Hashable {
    public var faces: [LDSImage]

    /// Parses DG2, or a bare ISO 19794-5 facial record ("FAC\0…", as some tools save it).
    public init(bytes: [UInt8]) throws(MRTDError) {
        if bytes.starts(with: [0x46, 0x41, 0x43, 0x00]) {
            faces = [try DataGroup2.iso19794Record(bytes)]
            return
        }
        let root = try parseLDS(bytes, expecting: 0x75, "DG2")
        var faces: [LDSImage] = []
        for group in try children(of: root, "DG2") where group.tag == 0x7F61 {
            for template in try children(of: group, "DG2 biometric group") where template.tag == 0x7F60 {
                for block in try children(of: template, "DG2 biometric template") {
                    switch block.tag {
                    case 0x5F2E: faces.append(try DataGroup2.iso19794Record(block.value))
                    case 0x7F2E: faces.append(try DataGroup2.iso39794Record(block))
                    default: continue
                    }
                }
            }
        }
        guard !faces.isEmpty else { throw MRTDError(.malformedData, "DG2 holds no face image") }
        self.faces = faces
    }

    /// The image inside an ISO/IEC 19794-5 facial record block.
    static func iso19794Record(_ record: [UInt8]) throws(MRTDError) -> LDSImage {
        // "FAC\0", version (4), record length (4), number of faces (2), then facial record data.
        guard record.count >= 14 + 20 + 12, record.starts(with: [0x46, 0x41, 0x43, 0x00]) else {
            throw MRTDError(.malformedData, "DG2 face record is not an ISO 19794-5 record")
        }
        let faceStart = 14
        let blockLength = Int(ImageInfo.be32(record, faceStart))
        let featurePoints = ImageInfo.be16(record, faceStart + 4)
        let imageInfoStart = faceStart + 20 + featurePoints * 8
        let imageStart = imageInfoStart + 12
        guard blockLength >= 20 + featurePoints * 8 + 12, imageStart <= record.count else {
            throw MRTDError(.malformedData, "DG2 face record header is inconsistent")
        }
        let imageEnd = min(record.count, faceStart + blockLength)
        guard imageEnd > imageStart else { throw MRTDError(.malformedData, "DG2 face record holds no image") }
        let image = Array(record[imageStart..<imageEnd])
        let declaredWidth = ImageInfo.be16(record, imageInfoStart + 2)
        let declaredHeight = ImageInfo.be16(record, imageInfoStart + 4)
        return try describe(image, record: .iso19794_5, width: declaredWidth, height: declaredHeight)
    }

    /// The image inside an ISO/IEC 39794-5 face record: the first primitive value in the BER
    /// tree that is a JPEG or JPEG 2000 image.
    static func iso39794Record(_ record: TLV) throws(MRTDError) -> LDSImage {
        func search(_ object: TLV, depth: Int) -> [UInt8]? {
            guard depth < 16 else { return nil }
            if !object.isConstructed {
                return ImageInfo.inspect(object.value) != nil ? object.value : nil
            }
            guard let children = try? object.children() else { return nil }
            for child in children {
                if let found = search(child, depth: depth + 1) { return found }
            }
            return nil
        }
        guard let image = search(record, depth: 0) else {
            throw MRTDError(.malformedData, "DG2's ISO 39794-5 record holds no JPEG or JPEG 2000 image")
        }
        return try describe(image, record: .iso39794_5, width: 0, height: 0)
    }

    static func describe(_ image: [UInt8], record: LDSImage.Record, width: Int, height: Int) throws(MRTDError) -> LDSImage {
        guard let info = ImageInfo.inspect(image) else {
            throw MRTDError(.malformedData, "the face image is neither JPEG nor JPEG 2000 (or its header is damaged)")
        }
        return LDSImage(data: image, format: info.format, width: info.width > 0 ? info.width : width,
                        height: info.height > 0 ? info.height : height, record: record)
    }
}

/// DG7: displayed signature or usual-mark images.
public struct DataGroup7: Sendable, Hashable {
    public var images: [LDSImage]

    public init(bytes: [UInt8]) throws(MRTDError) {
        let root = try parseLDS(bytes, expecting: 0x67, "DG7")
        images = try children(of: root, "DG7").filter { $0.tag == 0x5F43 }.compactMap { object -> LDSImage? in
            guard let info = ImageInfo.inspect(object.value) else { return nil }
            return LDSImage(data: object.value, format: info.format, width: info.width, height: info.height, record: .plain)
        }
    }
}

/// DG11: additional personal details (text fields by LDS tag).
public struct DataGroup11: Sendable, Hashable {
    public var fullName: String?
    public var otherNames: [String]
    public var personalNumber: String?
    /// YYYYMMDD as stored.
    public var fullDateOfBirth: String?
    public var placeOfBirth: String?
    public var permanentAddress: String?
    public var telephone: String?
    public var profession: String?
    public var title: String?
    public var personalSummary: String?
    public var otherValidTravelDocumentNumbers: String?
    public var custodyInformation: String?
    /// Proof of citizenship image (5F16), when present.
    public var proofOfCitizenship: [UInt8]?

    public init(bytes: [UInt8]) throws(MRTDError) {
        let root = try parseLDS(bytes, expecting: 0x6B, "DG11")
        var fields: [UInt32: String] = [:]
        var others: [String] = []
        var proof: [UInt8]?
        for object in try children(of: root, "DG11") {
            switch object.tag {
            case 0x5C: continue
            case 0xA0:
                // Other names: count (02) then 0F entries.
                for child in (try? object.children()) ?? [] where child.tag == 0x0F {
                    others.append(ldsText(child.value))
                }
            case 0x5F16: proof = object.value
            default: fields[object.tag] = ldsText(object.value)
            }
        }
        fullName = fields[0x5F0E]
        otherNames = others
        personalNumber = fields[0x5F10]
        fullDateOfBirth = fields[0x5F2B]
        placeOfBirth = fields[0x5F11]
        permanentAddress = fields[0x5F42]
        telephone = fields[0x5F12]
        profession = fields[0x5F13]
        title = fields[0x5F14]
        personalSummary = fields[0x5F15]
        otherValidTravelDocumentNumbers = fields[0x5F17]
        custodyInformation = fields[0x5F18]
        proofOfCitizenship = proof
    }
}

/// DG12: additional document details.
public struct DataGroup12: Sendable, Hashable {
    public var issuingAuthority: String?
    /// YYYYMMDD as stored.
    public var dateOfIssue: String?
    public var otherPersons: [String]
    public var endorsementsAndObservations: String?
    public var taxOrExitRequirements: String?
    /// YYYYMMDDhhmmss as stored.
    public var dateAndTimeOfPersonalization: String?
    public var personalizationSystemSerialNumber: String?
    public var imageOfFront: [UInt8]?
    public var imageOfRear: [UInt8]?

    public init(bytes: [UInt8]) throws(MRTDError) {
        let root = try parseLDS(bytes, expecting: 0x6C, "DG12")
        var fields: [UInt32: [UInt8]] = [:]
        var persons: [String] = []
        for object in try children(of: root, "DG12") {
            switch object.tag {
            case 0x5C: continue
            case 0xA0:
                for child in (try? object.children()) ?? [] where child.tag == 0x5F1A { persons.append(ldsText(child.value)) }
            default: fields[object.tag] = object.value
            }
        }
        issuingAuthority = fields[0x5F19].map(ldsText)
        dateOfIssue = fields[0x5F26].map(DataGroup12.dateText)
        otherPersons = persons
        endorsementsAndObservations = fields[0x5F1B].map(ldsText)
        taxOrExitRequirements = fields[0x5F1C].map(ldsText)
        dateAndTimeOfPersonalization = fields[0x5F55].map(DataGroup12.dateText)
        personalizationSystemSerialNumber = fields[0x5F56].map(ldsText)
        imageOfFront = fields[0x5F1D]
        imageOfRear = fields[0x5F1E]
    }

    /// Dates are ASCII digits, but some issuers store them BCD-coded (4 bytes for YYYYMMDD).
    static func dateText(_ value: [UInt8]) -> String {
        if value.allSatisfy({ (0x30...0x39).contains($0) }) { return String(decoding: value, as: UTF8.self) }
        if value.allSatisfy({ $0 >> 4 <= 9 && $0 & 0x0F <= 9 }) { return hex(value) }
        return ldsText(value)
    }
}

/// DG14 (security infos for CA/PACE/AA) and DG15 (AA public key): kept raw, with what can be
/// said about them now.
public struct SecurityInfos: Sendable, Hashable {
    /// Each SecurityInfo's protocol OID with its DER encoding.
    public var entries: [(oid: String, der: [UInt8])]

    public init(bytes: [UInt8]) throws(MRTDError) {
        // DG14: 6E { SET OF SecurityInfo }; EF.CardAccess: the SET directly.
        var set = bytes
        if bytes.first == 0x6E { set = try parseLDS(bytes, expecting: 0x6E, "DG14").value }
        let object: TLV
        do { object = try BERTLV.parseSingle(set) } catch { throw MRTDError(.malformedData, "SecurityInfos: \(error.reason)") }
        guard object.tag == 0x31 else { throw MRTDError(.malformedData, "SecurityInfos is not a SET") }
        entries = []
        for info in try children(of: object, "SecurityInfos") where info.tag == 0x30 {
            guard let first = try children(of: info, "SecurityInfo").first, first.tag == 0x06,
                  let oid = DER.oidString(first.value) else { continue }
            entries.append((oid, info.encoded()))
        }
    }

    public static func == (lhs: SecurityInfos, rhs: SecurityInfos) -> Bool {
        lhs.entries.map(\.oid) == rhs.entries.map(\.oid) && lhs.entries.map(\.der) == rhs.entries.map(\.der)
    }

    public func hash(into hasher: inout Hasher) { entries.forEach { hasher.combine($0.der) } }
}

/// DG15: the Active Authentication public key.
public struct DataGroup15: Sendable {
    public var subjectPublicKeyInfo: [UInt8]
    public var publicKey: PublicKey

    public init(bytes: [UInt8]) throws(MRTDError) {
        let root = try parseLDS(bytes, expecting: 0x6F, "DG15")
        subjectPublicKeyInfo = root.value
        do {
            publicKey = try PublicKey(subjectPublicKeyInfo: root.value)
        } catch {
            throw MRTDError(.malformedData, "DG15 does not hold a usable public key: \(error.reason)")
        }
    }
}

// MARK: - Helpers

/// Parses an LDS file: one object with the expected tag (trailing padding allowed).
package func parseLDS(_ bytes: [UInt8], expecting tag: UInt32, _ name: String) throws(MRTDError) -> TLV {
    let object: TLV
    do {
        object = try BERTLV.parseSingle(bytes)
    } catch {
        throw MRTDError(.malformedData, "\(name) is malformed: \(error.reason)")
    }
    guard object.tag == tag else {
        throw MRTDError(.malformedData, "\(name) starts with tag \(BERTLV.tagString(object.tag)), expected \(BERTLV.tagString(tag))")
    }
    return object
}

package func children(of object: TLV, _ name: String) throws(MRTDError) -> [TLV] {
    do {
        return try object.children()
    } catch {
        throw MRTDError(.malformedData, "\(name) is malformed: \(error.reason)")
    }
}

/// LDS text: UTF-8 (ICAO allows it in DG11/DG12), fillers `<` shown as spaces where they
/// separate name parts.
func ldsText(_ value: [UInt8]) -> String {
    String(decoding: value, as: UTF8.self).replacing("<<", with: ", ").replacing("<", with: " ").trimmingWhitespace()
}
