import ChipRead
import Foundation
import GBGBridgeNFC
import ImageCodecs
import MRTDCrypto
import SmartCard
import TestSupport
import TestTraits
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

/// Seeded mutation fuzzing of every parser that sees chip or file data: bounded and repeatable,
/// so it runs in CI. Each parser must return or throw a typed error — never crash or hang.
@Suite("Fuzz: LDS, SOD and master-list parsers")
struct ParserFuzzTests {
    typealias Generator = SeededGenerator

    /// A mutation of `seed`: flipped bits, replaced, inserted or deleted bytes, truncation, or a
    /// length byte turned into a long-form length claiming far more than is there.
    static func mutate(_ seed: [UInt8], _ rng: inout Generator) -> [UInt8] {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !bytes.isEmpty else { return [UInt8.random(in: 0...255, using: &rng)] }
            let position = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 1: bytes[position] = UInt8.random(in: 0...255, using: &rng)
            case 2: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position)
            case 3: bytes.remove(at: position)
            case 4: bytes.removeLast(bytes.count - position)
            case 5: bytes[position] = [0x80, 0x81, 0x82, 0x83, 0x84, 0xFF].randomElement(using: &rng)!
            default:
                let end = min(bytes.count, position + Int.random(in: 1...16, using: &rng))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            }
        }
        return bytes
    }

    /// A shared fixture's bytes; empty when it cannot be read (the tests that use it need
    /// `.needsSharedFixtures`, so this never silently fuzzes nothing where the fixtures exist).
    static func shared(_ path: String) -> [UInt8] {
        guard let data = try? Data(contentsOf: TestFixtures.sharedURL(path)) else {
            Issue.record("cannot read ../shared/fixtures/\(path)")
            return []
        }
        return Array(data)
    }

    func fuzz(_ seeds: [[UInt8]], iterations: Int, seed: UInt64, _ parse: ([UInt8]) -> Void) {
        var rng = Generator(seed: seed)
        for seedBytes in seeds {
            // Every truncation of the first 300 bytes, then random mutations.
            for length in stride(from: 0, to: min(seedBytes.count, 300), by: 1) { parse(Array(seedBytes.prefix(length))) }
            for _ in 0..<iterations { parse(Self.mutate(seedBytes, &rng)) }
        }
    }

    @Test(.needsSharedFixtures) func tlvParser() {
        let seeds = [Self.shared("lds/bsi2008/EF_COM.bin"), Self.shared("lds/bsi2008/Datagroup14.bin"),
                     Self.shared("lds/loes2006/ef0101.bin")]
        fuzz(seeds, iterations: 5_000, seed: 1) { bytes in
            _ = try? BERTLV.parseAll(bytes)
            _ = try? BERTLV.parseSingle(bytes).children()
            _ = try? BERTLV.header(bytes)
        }
    }

    @Test(.needsSharedFixtures) func dataGroupParsers() throws {
        let passport = try TestFixtures.passport("utopia-td3-jpeg")
        fuzz([Self.shared("lds/bsi2008/Datagroup1.bin"), Self.shared("lds/loes2006/ef0101.bin")], iterations: 2_000, seed: 2) {
            _ = try? DataGroup1(bytes: $0)
        }
        fuzz([passport.applicationFiles[0x010B]!], iterations: 2_000, seed: 3) { _ = try? DataGroup11(bytes: $0) }
        fuzz([passport.applicationFiles[0x010C]!], iterations: 2_000, seed: 4) { _ = try? DataGroup12(bytes: $0) }
        fuzz([Self.shared("lds/bsi2008/EF_COM.bin")], iterations: 2_000, seed: 5) { _ = try? EFCOM(bytes: $0) }
        fuzz([Self.shared("lds/bsi2008/Datagroup14.bin")], iterations: 1_000, seed: 6) { _ = try? SecurityInfos(bytes: $0) }
        fuzz([Self.shared("lds/loes2006/ef010F.bin")], iterations: 1_000, seed: 7) { _ = try? DataGroup15(bytes: $0) }
        fuzz([Self.shared("dg2/iso19794_face_record.bin"), Self.shared("dg2/icao_39794_5_dg2_all_fields.bin"),
              passport.applicationFiles[0x0102]!], iterations: 500, seed: 8) { bytes in
            guard let dg2 = try? DataGroup2(bytes: bytes), let face = dg2.faces.first else { return }
            _ = ImageInfo.inspect(face.data)
        }
    }

    @Test(.needsSharedFixtures) func imageDecodersSurviveDamagedImages() {
        var rng = Generator(seed: 9)
        let jp2 = Self.shared("dg2/silver.jp2")
        let jpeg = Self.shared("dg2/iso19794_face_record.expected.jpg")
        for _ in 0..<60 {
            _ = try? ImageTranscoder.browserJPEG(Self.mutate(jp2, &rng))
            _ = try? ImageCodecs.decodeJPEG(Self.mutate(jpeg, &rng))
        }
    }

    @Test(.needsSharedFixtures) func securityObjectParser() {
        let seeds = ["AT", "FR", "UK"].map { Self.shared("real-sod/\($0).EF_SOD.bin") } + [Self.shared("lds/bsi2008/EF_SOD.bin")]
        fuzz(seeds, iterations: 300, seed: 10) { bytes in
            guard let sod = try? SecurityObject(bytes: bytes) else { return }
            _ = PassiveAuthentication.verify(sod: sod, dataGroups: [1: [0x61, 0x00]], trustStore: TrustStore())
        }
    }

    @Test(.needsSharedFixtures) func masterListParser() throws {
        // The master list itself is large; mutate a small one built from its first certificates,
        // and the certificate-set parser directly.
        var store = TrustStore()
        try store.add(path: TestFixtures.sharedURL("trust/NL_ML_2026-07-22.ml"))
        let few = store.certificates.prefix(3).map(\.derBytes)
        let list = DER.sequence(DER.integer(0), DER.set(few))
        fuzz([list], iterations: 400, seed: 11) { _ = try? MasterList.certificates($0) }
        var rng = Generator(seed: 12)
        let whole = Self.shared("trust/NL_ML_2026-07-22.ml")
        for _ in 0..<8 {
            var mutated = TrustStore()
            _ = try? mutated.add(bytes: Self.mutate(whole, &rng))
        }
    }

    @Test(.needsSharedFixtures) func securityInfoInterpreters() throws {
        // EF.CardAccess with explicit domain parameters (EC and DH), DG14s with EC (explicit
        // parameters, BSI 2008) and DH chip keys: PACEInfo/domain resolution and the CA offer.
        let ecdh = PACE.ProtocolID(keyAgreement: .ecdh, mapping: .genericMapping, keyType: .aes128)
        let dh = PACE.ProtocolID(keyAgreement: .dh, mapping: .integratedMapping, keyType: .aes256)
        let cardAccess = DER.set([PACEInfo(protocolID: ecdh, parameterId: 32).der,
                                  PACEInfo.domainParameterInfo(protocolID: ecdh, domain: .ec(.brainpoolP256r1), parameterId: 32),
                                  PACEInfo(protocolID: dh, parameterId: 33).der,
                                  PACEInfo.domainParameterInfo(protocolID: dh, domain: .dh(DiffieHellmanGroup.rfc5114(parameterId: 0)!), parameterId: 33)])
        fuzz([cardAccess], iterations: 400, seed: 13) { bytes in
            guard let infos = try? SecurityInfos(bytes: bytes) else { return }
            _ = PACEInfo.all(in: infos).map(\.domain)
        }
        let group = DiffieHellmanGroup.rfc5114(parameterId: 0)!
        let dhDG14 = BERTLV.encode(tag: 0x6E, value: DER.set(ChipAuthentication.securityInfos(
            protocolID: ChipAuthentication.ProtocolID(keyAgreement: .dh, keyType: .tripleDES),
            publicKeyInfo: ChipAuthentication.dhSubjectPublicKeyInfo(group: group, publicValue: try group.generateKeyPair().publicKey),
            keyOnly: true)))
        fuzz([Self.shared("lds/bsi2008/Datagroup14.bin"), dhDG14], iterations: 400, seed: 14) { bytes in
            guard let infos = try? SecurityInfos(bytes: bytes) else { return }
            _ = ChipAuthentication.offer(in: infos)
        }
    }
}
