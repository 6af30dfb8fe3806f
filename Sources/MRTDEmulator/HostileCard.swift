import CHostileImages
import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore

/// One way a hostile card misbehaves. The card completes access control and secure messaging
/// correctly — an attacker knows the MRZ it presents, and a phone with host card emulation
/// answers anything — and then lies, to hold the kiosk or to pass forged data as valid. Each mode
/// is one class of attack a reader must bound (Docs/hostile-input.md, "Hostile cards").
public enum HostileMode: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    // Lying lengths (DG11; added when the document has none).
    case lyingLength = "lying-length"
    case indefiniteLength = "indefinite-length"
    case hugeFile = "huge-file"
    case overlongAnswer = "overlong-answer"
    // Ladders without a floor (every READ BINARY past offset 0).
    case wrongLengthLadder = "wrong-length-ladder"
    case exactLengthChase = "exact-length-chase"
    case endlessGetResponse = "endless-get-response"
    // A chip that stops answering.
    case stallAfterAccess = "stall-after-access"
    // Expensive keys.
    case hugeDHKey = "huge-dh-key"
    case manyDHKeys = "many-dh-keys"
    case hugeECField = "huge-ec-field"
    case hugeRSAKey = "huge-rsa-key"
    case hugePACEDomain = "huge-pace-domain"
    // Forged data passed as valid.
    case uncoveredDG11 = "uncovered-dg11"
    case uncoveredDG14 = "uncovered-dg14"
    case uncoveredDG15 = "uncovered-dg15"
    // Reads running past the end of a file mishandled.
    case bareEndOfFile = "bare-6282"
    case unauthenticatedEndOfFile = "unauthenticated-6282"
    case wrongLengthPastEnd = "6700-past-end"
    // Broken data groups (signed: the issuer's own mistake, or the attacker's).
    case brokenDG11 = "broken-dg11"
    case brokenDG1 = "broken-dg1"
    case brokenDG2 = "broken-dg2"
    // Signed files altered, and records that multiply.
    case alteredDG11 = "altered-dg11"
    case alteredDG12 = "altered-dg12"
    case irisFlood = "iris-flood"
    case fingerFlood = "finger-flood"
    // Images made to cost a decoder.
    case scanBombFace = "scan-bomb-face"
    case scanBombFinger = "scan-bomb-finger"

    public var description: String { rawValue }

    /// What the card does, in a line (`gbgbridge emulate --help`, Docs).
    public var summary: String {
        switch self {
        case .lyingLength: return "DG11's header claims 0x7FFFFFFF bytes and the chip answers every offset"
        case .indefiniteLength: return "DG11's header has an indefinite length (80) and the chip answers every offset"
        case .hugeFile: return "DG11 is a real 16 MiB file"
        case .overlongAnswer: return "DG11 is 40,000 bytes and every READ BINARY of it answers 32 bytes more than asked, past the header's length"
        case .wrongLengthLadder: return "every READ BINARY past offset 0 is answered 6700 (short APDUs only, so that files take several reads)"
        case .exactLengthChase: return "every READ BINARY past offset 0 is answered 6Cxx with a different Le each time (short APDUs only)"
        case .endlessGetResponse: return "after access control every answer is 61xx, and GET RESPONSE answers 61xx forever"
        case .stallAfterAccess: return "the chip stops answering at the first command after BAC or PACE"
        case .hugeDHKey: return "DG14 offers Chip Authentication on a DH key over a 65,536-bit prime (EF.SOD signs it)"
        case .manyDHKeys: return "DG14 offers 40 DH chip keys of 16,384 bits (EF.SOD signs them)"
        case .hugeECField: return "DG14's EC chip key has explicit parameters over a 3,072-bit field (EF.SOD signs it)"
        case .hugeRSAKey: return "DG15's Active Authentication key has a 65,536-bit RSA modulus (EF.SOD signs it)"
        case .hugePACEDomain: return "EF.CardAccess offers PACE-DH over explicit 32,768-bit domain parameters (within its file ceiling)"
        case .uncoveredDG11: return "EF.SOD (validly signed) hashes every group but DG11, which holds the attacker's name"
        case .uncoveredDG14: return "EF.SOD (validly signed) leaves DG14 out"
        case .uncoveredDG15: return "EF.SOD (validly signed) leaves DG15 out"
        case .bareEndOfFile: return "a READ BINARY running past the end of a file is answered with a bare 6282: no data, no secure messaging"
        case .unauthenticatedEndOfFile: return "a READ BINARY running past the end of a file is answered with DO'87' and 6282 but no MAC (as vsmartcard's ePass)"
        case .wrongLengthPastEnd: return "a READ BINARY running past the end of a file is answered 6700"
        case .brokenDG11: return "DG11 (signed by EF.SOD) holds an element with a 5-byte BER length"
        case .brokenDG1: return "DG1 (signed by EF.SOD) holds a 50-character MRZ"
        case .brokenDG2: return "DG2 (signed by EF.SOD) holds no biometric template"
        case .alteredDG11: return "EF.SOD is the genuine one, signed over the real DG11; DG11 was then altered to the attacker's name"
        case .alteredDG12: return "EF.SOD is the genuine one, signed over the real DG12; DG12 was then altered to the attacker's issuing authority"
        case .irisFlood: return "DG4 (signed by EF.SOD, readable without Terminal Authentication) is 3.6 MB: one ISO 19794-6 record of 327,675 empty iris images"
        case .fingerFlood: return "DG3 (signed by EF.SOD, readable without Terminal Authentication) holds 51,000 biometric templates, each a finger record with an empty view"
        case .scanBombFace: return "DG2's face (signed by EF.SOD) is a valid progressive JPEG of 2,080 scans (1600 × 1200), a decoder with no scan limit spends seconds on"
        case .scanBombFinger: return "DG3 (signed by EF.SOD, readable without Terminal Authentication) holds two JPEG fingerprints: a progressive JPEG of 2,080 scans, and a plain one"
        }
    }

    /// Modes that rewrite files (and re-sign EF.SOD) when the passport is built; the others act
    /// as the chip answers.
    var rewritesFiles: Bool {
        switch self {
        case .hugeDHKey, .manyDHKeys, .hugeECField, .hugeRSAKey, .hugePACEDomain, .uncoveredDG11, .uncoveredDG14, .uncoveredDG15,
             .brokenDG11, .brokenDG1, .brokenDG2, .alteredDG11, .alteredDG12, .irisFlood, .fingerFlood, .scanBombFace, .scanBombFinger, .lyingLength, .indefiniteLength, .hugeFile, .overlongAnswer, .wrongLengthLadder,
             .exactLengthChase:
            return true
        default:
            return false
        }
    }
}

/// The hostile behaviour of a virtual chip: any number of `HostileMode`s, and a stall at a chosen
/// APDU. Empty by default. `gbgbridge emulate --hostile MODE` (repeatable) sets it.
public struct HostileCard: Sendable, Hashable, Codable {
    public var modes: Set<HostileMode> = []
    /// The chip stops answering at this APDU (counted from power-on, 1 = the first).
    public var stallAtAPDU: Int?

    public init(modes: Set<HostileMode> = [], stallAtAPDU: Int? = nil) {
        self.modes = modes
        self.stallAtAPDU = stallAtAPDU
    }

    public var isEmpty: Bool { modes.isEmpty && stallAtAPDU == nil }

    /// Adds a mode by name, or `stall-at-apdu=N`; throws naming what was wrong.
    public mutating func add(_ text: String) throws(EmulatorError) {
        if text.hasPrefix("stall-at-apdu=") {
            guard let value = Int(text.dropFirst("stall-at-apdu=".count)), value > 0 else {
                throw EmulatorError("stall-at-apdu=N needs a positive APDU number, not '\(text)'")
            }
            stallAtAPDU = value
            return
        }
        guard let mode = HostileMode(rawValue: text) else {
            throw EmulatorError("'\(text)' is not a hostile mode (\(HostileMode.allCases.map(\.rawValue).joined(separator: ", ")), stall-at-apdu=N)")
        }
        modes.insert(mode)
    }

    public func contains(_ mode: HostileMode) -> Bool { modes.contains(mode) }

    /// The modes as they were named (for logs).
    public var summary: [String] {
        modes.map(\.rawValue).sorted() + (stallAtAPDU.map { ["stall-at-apdu=\($0)"] } ?? [])
    }

    /// The data group the length modes lie about.
    static let lyingFile = EmulatedPassport.dataGroupFID(11)
    /// The size of `hugeFile`'s DG11 value.
    static let hugeFileValueLength = 16 * 1_048_576
}

// MARK: Rewriting the files

extension EmulatedPassport {
    /// Makes this passport the hostile card `hostile` describes: rewrites the files its modes name
    /// and signs EF.SOD again with `signer` (so that only the attack is wrong). The chip's runtime
    /// behaviour follows `hostile` as it answers.
    public mutating func makeHostile(_ hostile: HostileCard, signer: DocumentSigner) throws(EmulatorError) {
        self.hostile = hostile
        let modes = hostile.modes.filter(\.rewritesFiles)
        guard !modes.isEmpty else { return }
        var groups: [Int: [UInt8]] = [:]
        for (fid, content) in applicationFiles where (0x0101...0x0110).contains(fid) { groups[Int(fid - 0x0100)] = content }
        var forged = PassportDescription.AdditionalPersonalDetails()
        forged.fullName = "MALLORY<<FORGED<NAME"
        forged.permanentAddress = "NOT THE ISSUER'S DATA"
        let attackerDG11 = LDSBuilder.dg11(forged)
        var uncovered: Set<Int> = []
        // Groups replaced after EF.SOD is signed over the genuine ones.
        var alteredAfterSigning: [Int: [UInt8]] = [:]
        for mode in modes {
            switch mode {
            case .lyingLength, .indefiniteLength, .hugeFile:
                // Served by the chip as it answers; a short placeholder here, listed in EF.COM.
                if groups[11] == nil { groups[11] = attackerDG11 }
            case .overlongAnswer:
                // Long enough that its reads end with a short one the extra bytes fit in.
                var long = PassportDescription.AdditionalPersonalDetails()
                long.personalSummary = String(repeating: "PADDING ", count: 4_990)
                groups[11] = LDSBuilder.dg11(long)
            case .wrongLengthLadder, .exactLengthChase:
                // Short APDUs, so that every file takes reads past offset 0.
                extendedLength = false
                maxReadLength = min(maxReadLength, 256)
                masterFiles.removeValue(forKey: Self.efATRInfo)
            case .uncoveredDG11:
                groups[11] = attackerDG11
                uncovered.insert(11)
            case .uncoveredDG14:
                if groups[14] == nil { groups[14] = BERTLV.encode(tag: 0x6E, value: DER.set([Self.dhKeyInfo(bits: 2_048)])) }
                uncovered.insert(14)
            case .uncoveredDG15:
                guard groups[15] != nil else { throw EmulatorError("uncovered-dg15 needs a passport with Active Authentication (DG15)") }
                uncovered.insert(15)
            case .hugeDHKey:
                groups[14] = Self.hostileDG14(groups[14], keys: [Self.dhKeyInfo(bits: 65_536)], protocol: "0.4.0.127.0.7.2.2.3.1.1")
            case .manyDHKeys:
                groups[14] = Self.hostileDG14(groups[14], keys: (1...40).map { Self.dhKeyInfo(bits: 16_384, keyId: $0) },
                                              protocol: "0.4.0.127.0.7.2.2.3.1.1")
            case .hugeECField:
                groups[14] = Self.hostileDG14(groups[14], keys: [Self.ecKeyInfo(fieldBits: 3_072)], protocol: "0.4.0.127.0.7.2.2.3.2.1")
            case .hugeRSAKey:
                groups[15] = BERTLV.encode(tag: 0x6F, value: Self.rsaSubjectPublicKeyInfo(bits: 65_536))
            case .hugePACEDomain:
                masterFiles[Self.efCardAccess] = DER.set([Self.hugePACEInfo, Self.hugePACEDomainParameterInfo])
            case .brokenDG11:
                // A full name whose length field has five bytes: BER allows at most four here.
                let broken = [0x5F, 0x0E, 0x85, 0x00, 0x00, 0x00, 0x00, 0x06] + Array("BROKEN".utf8)
                groups[11] = BERTLV.encode(tag: 0x6B, value: BERTLV.encode(tag: 0x5C, value: [0x5F, 0x0E]) + broken)
            case .brokenDG1:
                groups[1] = BERTLV.encode(tag: 0x61, value: BERTLV.encode(tag: 0x5F1F, value: Array(String(repeating: "P<UTO", count: 10).utf8)))
            case .brokenDG2:
                groups[2] = BERTLV.encode(tag: 0x75, value: BERTLV.encode(tag: 0x02, value: [0x01]))
            case .alteredDG11:
                if groups[11] == nil {
                    var genuine = PassportDescription.AdditionalPersonalDetails()
                    genuine.fullName = "ERIKSSON<<ANNA<MARIA"
                    groups[11] = LDSBuilder.dg11(genuine)
                }
                alteredAfterSigning[11] = attackerDG11
            case .alteredDG12:
                var genuine = PassportDescription.AdditionalDocumentDetails()
                genuine.issuingAuthority = "UTOPIA PASSPORT OFFICE"
                if groups[12] == nil { groups[12] = LDSBuilder.dg12(genuine) }
                var forgedAuthority = PassportDescription.AdditionalDocumentDetails()
                forgedAuthority.issuingAuthority = "MALLORY FORGED AUTHORITY"
                alteredAfterSigning[12] = LDSBuilder.dg12(forgedAuthority)
            case .irisFlood:
                groups[4] = LDSBuilder.irisFlood(subtypes: 5, imagesEach: 65_535)
                biometricsBehindEAC = false
                eac = nil
            case .fingerFlood:
                groups[3] = LDSBuilder.fingerFlood(templates: 51_000)
            case .scanBombFace:
                var pointer: UnsafeMutablePointer<UInt8>?
                var length: UInt = 0
                guard CHostileImages_many_scan_jpeg(1600, 1200, 10, &pointer, &length) == 0, let pointer else {
                    throw EmulatorError("scan-bomb-face: the JPEG could not be made")
                }
                let bomb = Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
                free(pointer)
                groups[2] = try LDSBuilder.dg2(faceImage: bomb)
                biometricsBehindEAC = false
                eac = nil
            case .scanBombFinger:
                func jpeg(_ width: Int32, _ height: Int32, _ refinements: Int32) throws(EmulatorError) -> [UInt8] {
                    var pointer: UnsafeMutablePointer<UInt8>?
                    var length: UInt = 0
                    guard CHostileImages_many_scan_jpeg(width, height, refinements, &pointer, &length) == 0, let pointer else {
                        throw EmulatorError("scan-bomb-finger: the JPEG could not be made")
                    }
                    defer { free(pointer) }
                    return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
                }
                let records = [(UInt8(0x09), LDSBuilder.fingerRecord(position: 2, width: 1600, height: 1200, jpeg: try jpeg(1600, 1200, 10))),
                               (UInt8(0x0A), LDSBuilder.fingerRecord(position: 7, width: 64, height: 64, jpeg: try jpeg(64, 64, -1)))]
                groups[3] = LDSBuilder.biometricGroup(tag: 0x63, type: 0x08, formatType: [0x00, 0x07], records: records)
                biometricsBehindEAC = false
                eac = nil
            default:
                break
            }
        }
        for (number, content) in groups { applicationFiles[Self.dataGroupFID(number)] = content }
        let ldsVersion = applicationFiles[Self.efCOM].flatMap { try? EFCOM(bytes: $0) }?.ldsVersion == "0108" ? "0108" : "0107"
        let digest = applicationFiles[Self.efSOD].flatMap { try? SecurityObject(bytes: $0) }?.digestAlgorithm ?? .sha256
        applicationFiles[Self.efCOM] = LDSBuilder.com(dataGroups: Array(groups.keys), ldsVersion: ldsVersion)
        applicationFiles[Self.efSOD] = try LDSBuilder.sod(dataGroups: groups.filter { !uncovered.contains($0.key) }, digest: digest,
                                                         signer: signer, ldsVersion: ldsVersion)
        for (number, content) in alteredAfterSigning { applicationFiles[Self.dataGroupFID(number)] = content }
    }

    /// DG14 with `keys` (and a ChipAuthenticationInfo for them) instead of the chip's own CA
    /// entries; the PACE entries stay, so EF.CardAccess still matches.
    static func hostileDG14(_ existing: [UInt8]?, keys: [[UInt8]], protocol oid: String) -> [UInt8] {
        let kept = existing.flatMap { try? SecurityInfos(bytes: $0) }?.entries
            .filter { !$0.oid.hasPrefix(ChipAuthentication.protocolPrefix) && $0.oid != ChipAuthentication.ecdhPublicKeyOID
                && $0.oid != ChipAuthentication.dhPublicKeyOID }
            .map(\.der) ?? []
        let info = DER.sequence(DER.oid(oid), DER.integer(1))
        return BERTLV.encode(tag: 0x6E, value: DER.set(kept + [info] + keys))
    }

    /// A big odd number with its top bit set: the size is the attack, not the number.
    static func bigNumber(bits: Int, seed: UInt8) -> [UInt8] {
        var bytes = (0..<(bits / 8)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ Int(seed) &* 7 &+ 17) }
        bytes[0] |= 0x80
        bytes[bytes.count - 1] |= 0x01
        return bytes
    }

    /// A ChipAuthenticationPublicKeyInfo for DH over a `bits`-bit "prime" (X9.42 { p, g, q }).
    static func dhKeyInfo(bits: Int, keyId: Int = 1) -> [UInt8] {
        let p = bigNumber(bits: bits, seed: UInt8(truncatingIfNeeded: keyId))
        let q = Array(p.dropFirst(1))
        let algorithm = DER.sequence(DER.oid(ChipAuthentication.dhPublicNumberOID),
                                     DER.sequence(DER.unsignedInteger(p), DER.unsignedInteger([0x02]), DER.unsignedInteger(q)))
        let y = DER.unsignedInteger(Array(p.dropFirst(2)))
        let spki = DER.sequence(algorithm, BERTLV.encode(tag: 0x03, value: [0x00] + y))
        return DER.sequence(DER.oid(ChipAuthentication.dhPublicKeyOID), spki, DER.integer(keyId))
    }

    /// A ChipAuthenticationPublicKeyInfo for ECDH with explicit parameters over a `fieldBits`-bit
    /// prime field.
    static func ecKeyInfo(fieldBits: Int) -> [UInt8] {
        let p = bigNumber(bits: fieldBits, seed: 3)
        let size = p.count
        let field = DER.sequence(DER.oid("1.2.840.10045.1.1"), DER.unsignedInteger(p))
        let curve = DER.sequence(DER.octetString(bigNumber(bits: fieldBits, seed: 5)), DER.octetString(bigNumber(bits: fieldBits, seed: 7)))
        let base = DER.octetString([0x04] + bigNumber(bits: fieldBits, seed: 9) + bigNumber(bits: fieldBits, seed: 11))
        let parameters = DER.sequence(DER.integer(1), field, curve, base, DER.unsignedInteger(bigNumber(bits: fieldBits, seed: 13)), DER.integer(1))
        let algorithm = DER.sequence(DER.oid("1.2.840.10045.2.1"), parameters)
        let point = [0x04] + bigNumber(bits: size * 8, seed: 15) + bigNumber(bits: size * 8, seed: 17)
        let spki = DER.sequence(algorithm, BERTLV.encode(tag: 0x03, value: [0x00] + point))
        return DER.sequence(DER.oid(ChipAuthentication.ecdhPublicKeyOID), spki, DER.integer(1))
    }

    /// An RSA SubjectPublicKeyInfo with a `bits`-bit modulus and e = 65537.
    static func rsaSubjectPublicKeyInfo(bits: Int) -> [UInt8] {
        let key = DER.sequence(DER.unsignedInteger(bigNumber(bits: bits, seed: 21)), DER.integer(65_537))
        return DER.sequence(DER.sequence(DER.oid("1.2.840.113549.1.1.1"), [0x05, 0x00]), BERTLV.encode(tag: 0x03, value: [0x00] + key))
    }

    /// PACEInfo for id-PACE-DH-GM-AES-CBC-CMAC-128 with a proprietary parameter id (explicit parameters follow).
    static var hugePACEInfo: [UInt8] { DER.sequence(DER.oid("0.4.0.127.0.7.2.2.4.1.2"), DER.integer(2), DER.integer(32)) }

    /// PACEDomainParameterInfo with explicit X9.42 parameters over a 32,768-bit p.
    static var hugePACEDomainParameterInfo: [UInt8] {
        let p = bigNumber(bits: 32_768, seed: 23)
        let algorithm = DER.sequence(DER.oid(ChipAuthentication.dhPublicNumberOID),
                                     DER.sequence(DER.unsignedInteger(p), DER.unsignedInteger([0x02]), DER.unsignedInteger(Array(p.dropFirst()))))
        return DER.sequence(DER.oid("0.4.0.127.0.7.2.2.4.1"), algorithm, DER.integer(32))
    }
}

// MARK: Answering

/// A file as the hostile chip serves it: its size and its bytes at any offset, without holding a
/// 2 GiB file in memory.
struct ServedFile {
    let count: Int
    let bytes: @Sendable (Range<Int>) -> [UInt8]

    init(_ content: [UInt8]) {
        count = content.count
        bytes = { Array(content[$0]) }
    }

    /// `header`, then filler up to `count` bytes.
    init(header: [UInt8], count: Int) {
        self.count = count
        bytes = { range in
            range.map { index in index < header.count ? header[index] : UInt8(truncatingIfNeeded: 0x41 &+ index % 26) }
        }
    }
}

extension VirtualPassportChip {
    /// The file `fid` as the hostile chip serves it, when a length mode rewrites it.
    func hostileFile(_ fid: UInt16) -> ServedFile? {
        let hostile = passport.hostile
        guard fid == HostileCard.lyingFile else { return nil }
        if hostile.contains(.lyingLength) { return ServedFile(header: [0x6B, 0x84, 0x7F, 0xFF, 0xFF, 0xFF], count: 0x7FFF_FFFF + 6) }
        if hostile.contains(.indefiniteLength) { return ServedFile(header: [0x6B, 0x80], count: 0x7FFF_FFFF) }
        if hostile.contains(.hugeFile) {
            let length = HostileCard.hugeFileValueLength
            return ServedFile(header: [0x6B, 0x84, UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)],
                              count: length + 6)
        }
        return nil
    }

    /// What the hostile chip answers to a READ BINARY at `offset` of a `count`-byte file with
    /// `requested` (Ne), instead of the bytes; `nil` to answer normally.
    func hostileReadAnswer(offset: Int, requested: Int, count: Int, explicitLe: Bool, _ state: inout State) -> ResponseAPDU? {
        let hostile = passport.hostile
        if offset > 0, hostile.contains(.wrongLengthLadder) { return ResponseAPDU(statusWord: .wrongLength) }
        if offset > 0, hostile.contains(.exactLengthChase) {
            state.hostileCounter += 1
            var named = 0x10 + (state.hostileCounter * 37) % 0xE0
            if named == requested { named += 1 }
            return ResponseAPDU(statusWord: StatusWord(sw1: 0x6C, sw2: UInt8(named & 0xFF)))
        }
        guard explicitLe, offset + requested > count else { return nil }
        if hostile.contains(.wrongLengthPastEnd) { return ResponseAPDU(statusWord: .wrongLength) }
        if hostile.contains(.bareEndOfFile) {
            state.hostileAnswer = .bare
            return ResponseAPDU(statusWord: .endOfFileReached)
        }
        if hostile.contains(.unauthenticatedEndOfFile) { state.hostileAnswer = .withoutMAC }
        return nil
    }

    /// `answer`, the answer to `command`, as the hostile chip sends it: more bytes than asked for
    /// (`overlongAnswer`).
    func hostileOverlong(_ chunk: [UInt8], fid: UInt16, requested: Int) -> [UInt8] {
        guard passport.hostile.contains(.overlongAnswer), fid == HostileCard.lyingFile else { return chunk }
        return chunk + [UInt8](repeating: 0x4D, count: 32)  // (cut to what fits a short protected answer)
    }
}

/// How the hostile chip bends the secure-messaging answer to the command in progress.
enum HostileAnswer: Sendable {
    /// No secure messaging at all: the status word alone (the chip's counter moves as for a
    /// protected answer).
    case bare
    /// Protected without DO'99' and without the MAC (DO'8E').
    case withoutMAC
}
