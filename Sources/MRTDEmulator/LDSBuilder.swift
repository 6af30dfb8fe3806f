import BoundedFiles
import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore

/// Builds the LDS1 elementary files of a virtual passport from a description: EF.COM, DG1, DG2,
/// DG7, DG11, DG12, and an EF.SOD signed by a document signer.
public enum LDSBuilder {
    /// OID of an LDS security object (id-icao-mrtd-security-ldsSecurityObject).
    public static let ldsSecurityObjectOID = "2.23.136.1.1.1"

    /// DG tag byte (EF.COM tag list) for data groups 1–16.
    public static let dataGroupTags: [Int: UInt8] = [
        1: 0x61, 2: 0x75, 3: 0x63, 4: 0x76, 5: 0x65, 6: 0x66, 7: 0x67, 8: 0x68, 9: 0x69, 10: 0x6A,
        11: 0x6B, 12: 0x6C, 13: 0x6D, 14: 0x6E, 15: 0x6F, 16: 0x70,
    ]

    /// DG1: the MRZ (tag 61 / 5F1F).
    public static func dg1(mrz: MRZ) -> [UInt8] {
        BERTLV.encode(tag: 0x61, value: BERTLV.encode(tag: 0x5F1F, value: Array(mrz.lines.joined().utf8)))
    }

    /// An ISO/IEC 19794-5:2005 facial record wrapping one image.
    public static func faceRecord(image: [UInt8], info: ImageInfo) -> [UInt8] {
        func be16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        func be32(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        let imageInformation: [UInt8] = [0x01, info.format == .jpeg2000 ? 0x01 : 0x00] + be16(info.width)
            + be16(info.height) + [0x01, 0x02] + be16(0) + be16(0)  // full frontal, JPEG/JP2, size, sRGB, digital still, quality
        let facialInformation: [UInt8] = be32(20 + imageInformation.count + image.count) + be16(0)  // block length, 0 feature points
            + [0x00, 0x00, 0x00] + [0x00, 0x00, 0x00] + be16(0) + [0, 0, 0] + [0, 0, 0]  // gender…pose
        let body = facialInformation + imageInformation + image
        return Array("FAC\0".utf8) + Array("010\0".utf8) + be32(14 + body.count) + be16(1) + body
    }

    /// DG2 (or, with `outerTag` 0x67 and `recordTag` 0x5F43, DG7): a biometric information group
    /// template holding one face record.
    public static func dg2(faceImage: [UInt8]) throws(EmulatorError) -> [UInt8] {
        guard let info = ImageInfo.inspect(faceImage), info.format == .jpeg || info.format == .jpeg2000 else {
            throw EmulatorError("the face image is neither JPEG nor JPEG 2000 (or its header is damaged)")
        }
        let header = BERTLV.encode(tag: 0xA1, value:
            BERTLV.encode(tag: 0x80, value: [0x01, 0x01])        // ICAO header version
            + BERTLV.encode(tag: 0x81, value: [0x02])            // biometric type: facial features
            + BERTLV.encode(tag: 0x87, value: [0x01, 0x01])      // format owner: ISO/IEC JTC 1/SC 37
            + BERTLV.encode(tag: 0x88, value: [0x00, 0x08]))     // format type: face image
        let template = BERTLV.encode(tag: 0x7F60, value: header
            + BERTLV.encode(tag: 0x5F2E, value: faceRecord(image: faceImage, info: info)))
        return BERTLV.encode(tag: 0x75, value: BERTLV.encode(tag: 0x7F61, value: BERTLV.encode(tag: 0x02, value: [0x01]) + template))
    }

    /// DG7: one displayed signature or usual mark image.
    public static func dg7(image: [UInt8]) -> [UInt8] {
        BERTLV.encode(tag: 0x67, value: BERTLV.encode(tag: 0x02, value: [0x01]) + BERTLV.encode(tag: 0x5F43, value: image))
    }

    /// Text data objects in order, skipping absent or empty values.
    static func textObjects(_ fields: [(UInt32, String?)]) -> [(UInt32, [UInt8])] {
        fields.compactMap { tag, text in
            guard let text, !text.isEmpty else { return nil }
            return (tag, BERTLV.encode(tag: tag, value: Array(text.utf8)))
        }
    }

    static func withTagList(_ outer: UInt32, _ objects: [(UInt32, [UInt8])]) -> [UInt8] {
        let tags = objects.flatMap { BERTLV.encodeTag($0.0) }
        return BERTLV.encode(tag: outer, value: BERTLV.encode(tag: 0x5C, value: tags) + objects.flatMap { $0.1 })
    }

    /// DG11: additional personal details.
    public static func dg11(_ details: PassportDescription.AdditionalPersonalDetails) -> [UInt8] {
        var objects = textObjects([(0x5F0E, details.fullName)])
        if let names = details.otherNames, !names.isEmpty {
            let content = BERTLV.encode(tag: 0x02, value: [UInt8(names.count)]) + names.flatMap { BERTLV.encode(tag: 0x0F, value: Array($0.utf8)) }
            objects.append((0xA0, BERTLV.encode(tag: 0xA0, value: content)))
        }
        objects += textObjects([
            (0x5F10, details.personalNumber), (0x5F2B, details.fullDateOfBirth), (0x5F11, details.placeOfBirth),
            (0x5F42, details.permanentAddress), (0x5F12, details.telephone), (0x5F13, details.profession),
            (0x5F14, details.title), (0x5F15, details.personalSummary), (0x5F18, details.custodyInformation),
        ])
        return withTagList(0x6B, objects)
    }

    /// DG12: additional document details.
    public static func dg12(_ details: PassportDescription.AdditionalDocumentDetails) -> [UInt8] {
        withTagList(0x6C, textObjects([
            (0x5F19, details.issuingAuthority), (0x5F26, details.dateOfIssue), (0x5F1B, details.endorsementsAndObservations),
            (0x5F1C, details.taxOrExitRequirements), (0x5F55, details.dateAndTimeOfPersonalization),
            (0x5F56, details.personalizationSystemSerialNumber),
        ]))
    }

    /// EF.COM for LDS `ldsVersion` (0107 or 0108) / Unicode 4.0.0 listing `dataGroups`.
    public static func com(dataGroups: [Int], ldsVersion: String = "0107") -> [UInt8] {
        let tags = dataGroups.sorted().compactMap { dataGroupTags[$0] }
        return BERTLV.encode(tag: 0x60, value: BERTLV.encode(tag: 0x5F01, value: Array(ldsVersion.utf8))
            + BERTLV.encode(tag: 0x5F36, value: Array("040000".utf8)) + BERTLV.encode(tag: 0x5C, value: tags))
    }

    /// The DER LDSSecurityObject with the hashes of `dataGroups`: version 0 for LDS 1.7, version 1
    /// with LDSVersionInfo { ldsVersion, unicodeVersion } (PrintableStrings) for LDS 1.8.
    public static func ldsSecurityObject(dataGroups: [Int: [UInt8]], digest: DigestAlgorithm, ldsVersion: String = "0107") -> [UInt8] {
        let hashes = dataGroups.sorted { $0.key < $1.key }.map { number, content in
            DER.sequence(DER.integer(number), DER.octetString(digest.hash(content)))
        }
        guard ldsVersion != "0107" else {
            return DER.sequence(DER.integer(0), DER.sequence(DER.oid(digest.oid)), DER.sequence(hashes))
        }
        let versionInfo = DER.sequence(BERTLV.encode(tag: 0x13, value: Array(ldsVersion.utf8)), BERTLV.encode(tag: 0x13, value: Array("040000".utf8)))
        return DER.sequence(DER.integer(1), DER.sequence(DER.oid(digest.oid)), DER.sequence(hashes), versionInfo)
    }

    /// EF.SOD: tag 77 around CMS SignedData over the LDS security object.
    public static func sod(dataGroups: [Int: [UInt8]], digest: DigestAlgorithm, signer: DocumentSigner,
                           ldsVersion: String = "0107") throws(EmulatorError) -> [UInt8] {
        let content = ldsSecurityObject(dataGroups: dataGroups, digest: digest, ldsVersion: ldsVersion)
        do {
            let cms = try CMSSigner.sign(content: content, contentType: ldsSecurityObjectOID,
                                         certificate: signer.certificate, key: signer.key, digest: digest)
            return BERTLV.encode(tag: 0x77, value: cms)
        } catch {
            throw EmulatorError("signing EF.SOD failed: \(error.reason)")
        }
    }
}

/// A document signer: its certificate and private key.
public struct DocumentSigner: Sendable {
    public let certificate: Certificate
    public let key: PrivateKey

    public init(certificate: Certificate, key: PrivateKey) {
        self.certificate = certificate
        self.key = key
    }

    /// Loads a PEM or DER certificate and key.
    public static func load(certificate: URL, key: URL) throws(EmulatorError) -> DocumentSigner {
        do {
            return DocumentSigner(certificate: try Certificate(bytes: try BoundedFile.read(certificate.path, ceiling: BoundedFile.Ceiling.key,
                                                                                           what: "document signer certificate")),
                                  key: try PrivateKey(bytes: try BoundedFile.read(key.path, ceiling: BoundedFile.Ceiling.key, what: "document signer key")))
        } catch {
            throw EmulatorError("cannot load the document signer (\(certificate.lastPathComponent), \(key.lastPathComponent)): \(error)")
        }
    }
}
