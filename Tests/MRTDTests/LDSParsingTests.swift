import ChipRead
import Foundation
import GBGBridgeNFC
import ImageCodecs
import SmartCard
import TestSupport
import TestTraits
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

@Suite("LDS parsing")
struct LDSParsingTests {
    func shared(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: TestFixtures.sharedURL(path))) }

    @Test(.needsSharedFixtures) func iso19794FaceRecord() throws {
        let dg2 = try DataGroup2(bytes: try shared("dg2/iso19794_face_record.bin"))
        let face = try #require(dg2.faces.first)
        #expect(face.record == .iso19794_5 && face.format == .jpeg)
        #expect(face.data == (try shared("dg2/iso19794_face_record.expected.jpg")))
        #expect(face.width > 0 && face.height > 0)
    }

    @Test(.needsSharedFixtures) func brokenFaceImageIsATypedError() throws {
        #expect(throws: MRTDError.self) { _ = try DataGroup2(bytes: try shared("dg2/iso19794_face_record_invalid_image.bin")) }
    }

    @Test("ISO/IEC 39794-5 records carry the JPEG 2000 image byte for byte", .needsSharedFixtures,
          arguments: ["dg2/icao_39794_5_dg2_all_fields.bin", "dg2/dg2_iso39794_all_fields.bin"])
    func iso39794(path: String) throws {
        let dg2 = try DataGroup2(bytes: try shared(path))
        let face = try #require(dg2.faces.first)
        #expect(face.record == .iso39794_5 && face.format == .jpeg2000)
        #expect(face.data == (try shared("dg2/silver.jp2")))
    }

    @Test(.needsSharedFixtures) func jpeg2000FacesTranscodeToJPEG() throws {
        for path in ["lds/bsi2008/Datagroup2.bin", "lds/loes2006/ef0102.bin", "dg2/icao_39794_5_dg2_all_fields.bin"] {
            let face = try #require(try DataGroup2(bytes: try shared(path)).faces.first)
            #expect(face.format == .jpeg2000, "\(path)")
            let output = try ImageTranscoder.browserJPEG(face.data)
            #expect(output.sourceFormat == .jpeg2000)
            #expect(output.jpeg.starts(with: [0xFF, 0xD8, 0xFF]))
            let decoded = try ImageCodecs.decodeJPEG(output.jpeg)
            #expect(decoded.width == output.width && decoded.height == output.height)
            #expect(output.width == face.width && output.height == face.height, "\(path)")
            // Not a flat image: the decoded pixels vary.
            #expect(Set(decoded.pixels.prefix(3000)).count > 10)
        }
    }

    @Test(.needsSharedFixtures) func damagedJPEG2000IsATypedError() throws {
        var jp2 = try shared("dg2/silver.jp2")
        jp2.removeLast(jp2.count - 400)
        #expect(throws: MRTDError.self) { _ = try ImageTranscoder.browserJPEG(jp2) }
        #expect(throws: MRTDError.self) { _ = try ImageTranscoder.browserJPEG([0xFF, 0xD8, 0x00]) }
    }

    @Test(.needsSharedFixtures) func comAndDG1OfTheTestPassports() throws {
        let com = try EFCOM(bytes: try shared("lds/bsi2008/EF_COM.bin"))
        #expect(com.dataGroups == [1, 2, 3, 14])
        let dg1 = try DataGroup1(bytes: try shared("lds/bsi2008/Datagroup1.bin"))
        #expect(dg1.mrz.format == .td3)
        let loes = try DataGroup1(bytes: try shared("lds/loes2006/ef0101.bin"))
        #expect(loes.mrz.issuingState == "NLD")
        #expect(try EFCOM(bytes: try shared("lds/loes2006/ef011E.bin")).dataGroups == [1, 2, 15])
    }

    @Test func asciiTagListInEFCOM() throws {
        // vsmartcard writes the tag list as ASCII hex: "6175" for DG1, DG2.
        let com = BERTLV.encode(tag: 0x60, value: BERTLV.encode(tag: 0x5F01, value: Array("0107".utf8))
            + BERTLV.encode(tag: 0x5F36, value: Array("040000".utf8)) + BERTLV.encode(tag: 0x5C, value: Array("61756B".utf8)))
        #expect(try EFCOM(bytes: com + [0, 0, 0]).dataGroups == [1, 2, 11])
    }

    @Test func dg11AndDG12OfAnEmulatedPassport() throws {
        let passport = try TestFixtures.passport("utopia-td3-jpeg")
        let dg11 = try DataGroup11(bytes: passport.applicationFiles[0x010B]!)
        #expect(dg11.fullName == "ERIKSSON, ANNA MARIA")
        #expect(dg11.fullDateOfBirth == "19740812")
        #expect(dg11.placeOfBirth == "ZENITH UTOPIA")
        let dg12 = try DataGroup12(bytes: passport.applicationFiles[0x010C]!)
        #expect(dg12.issuingAuthority == "UTOPIA PASSPORT OFFICE")
        #expect(dg12.dateOfIssue == "20020415")
    }

    @Test(.needsSharedFixtures) func dg14AndDG15() throws {
        let dg14 = try SecurityInfos(bytes: try shared("lds/bsi2008/Datagroup14.bin"))
        #expect(!dg14.entries.isEmpty)
        #expect(dg14.entries.contains { $0.oid.hasPrefix("0.4.0.127.0.7.2.2") })
        let dg15 = try DataGroup15(bytes: try shared("lds/loes2006/ef010F.bin"))
        #expect(dg15.publicKey.keyType == .rsa)
        #expect(dg15.publicKey.bits >= 1024)
    }
}
