import LDS
@testable import MRTD
import MRTDEmulator
import SmartCard
import TestSupport
import Testing

/// READ BINARY under secure messaging against every Ne a reader written elsewhere sends
/// (ISO/IEC 7816-4 §5.1, §11.3.3; ICAO 9303-11 §9.8): Ne is a maximum, so the chip answers what
/// fits (≤ Ne) with 9000, and 6282 only when the end of the file comes before Ne bytes; never
/// 6700. Readers such as gmrtd read with Le = 00 and then ask, at the end of a file, for exactly
/// the bytes left (233, 225 …), which under short secure messaging do not fit in one answer.
@Suite("READ BINARY answers every Le from 1 to 256 (ISO 7816-4: Ne is a maximum)")
struct ReadBinaryLengthTests {
    /// Opens `chip` as the fixture's holder: PACE when the chip offers it, else BAC.
    static func openSession(_ name: String, chip: VirtualPassportChip, passport: EmulatedPassport) async throws -> CardSession {
        let session = CardSession(connection: EmulatedCardConnection(chip: chip))
        let description = try TestFixtures.description(name)
        let mrz = try AccessKey.mrz(description.mrz.lines.joined(separator: "\n"))
        let offers = try passport.masterFiles[EmulatedPassport.efCardAccess].map { PACEInfo.all(in: try SecurityInfos(bytes: $0)) } ?? []
        if let info = offers.first(where: PACEProtocol.canPerform) {
            let key = description.can.map(AccessKey.can) ?? mrz
            _ = try await PACEProtocol(info: info, key: key).run(on: session)
        } else {
            try await session.selectOrFail(.application(CardSession.eMRTDApplication), .plain)
            try await BasicAccessControl(key: mrz).run(on: session)
        }
        try await session.selectOrFail(.application(CardSession.eMRTDApplication), .secure)
        return session
    }

    static let everyLe = Array(1...256)
    /// The boundaries of one short protected answer (223 AES, 231 3DES) and of Le = 00.
    static let boundaryLe = [1, 0x80, 0xDF, 0xE0, 0xE7, 0xE8, 0xFF, 256]

    @Test("every fixture and field profile, every Le, at every file's end and in mid-file",
          arguments: EmulatorConformanceTests.allChips)
    func everyLe(name: String) async throws {
        let passport = try TestFixtures.passport(name)
        let chip = VirtualPassportChip(passport: passport)
        let session = try await Self.openSession(name, chip: chip, passport: passport)
        let mostThatFits = session.secureMessaging?.largestShortReadLength ?? 0xDF
        let chipLimit = passport.maxReadLength
        for (fid, content) in passport.applicationFiles.sorted(by: { $0.key < $1.key }) where !content.isEmpty {
            try await session.selectOrFail(.file(fid), .secure)
            if passport.biometricsBehindEAC, fid == 0x0103 || fid == 0x0104 {
                // DG3/DG4 of an EAC document: closed without Terminal Authentication.
                let answer = try await session.send(CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 256), .secure)
                #expect(answer.statusWord == .securityStatusNotSatisfied && answer.data.isEmpty, "\(name) DG\(fid & 0xFF)")
                continue
            }
            let size = content.count
            // Offsets a reader reaches: the start, mid-file, the ends gmrtd asks at (233 and 225
            // left), one short answer before the end, the last byte, and the end itself.
            let ends = [size / 2, size - 233, size - 225, size - 1].filter { $0 >= 0 && $0 <= 0x7FFF }
            let others = [0, size - mostThatFits, size].filter { $0 >= 0 && $0 <= 0x7FFF && !ends.contains($0) }
            for (offsets, les) in [(ends, Self.everyLe), (others, Self.boundaryLe)] {
                for offset in offsets {
                    for le in les {
                        let answer = try await session.send(CommandAPDU(ins: 0xB0, p1: UInt8(offset >> 8), p2: UInt8(offset & 0xFF), ne: le), .secure)
                        let context = "\(name) file \(String(fid, radix: 16)) (\(size) bytes) at \(offset), Le \(le)"
                        let left = size - offset
                        let expected = min(le, left, mostThatFits, chipLimit)
                        if left == 0 {
                            // At the end: nothing to read; 6282 (end reached before Ne) or 6B00.
                            #expect(answer.data.isEmpty && [StatusWord.endOfFileReached, .wrongP1P2, .success].contains(answer.statusWord),
                                    "\(context): \(answer.statusWord)")
                            continue
                        }
                        #expect(answer.statusWord == .success || answer.statusWord == .endOfFileReached, "\(context): \(answer.statusWord)")
                        #expect(answer.data.count == expected, "\(context): \(answer.data.count) bytes, expected \(expected)")
                        #expect(answer.data == Array(content[offset..<(offset + answer.data.count)]), "\(context): wrong bytes")
                        let endBeforeNe = answer.data.count == left && left < le && le != 256
                        #expect((answer.statusWord == .endOfFileReached) == endBeforeNe, "\(context): \(answer.statusWord)")
                    }
                }
            }
        }
    }

    @Test("the wrongLengthAboveLimit quirk refuses an explicit Le whose answer does not fit, and Le = 00 still gets what fits")
    func quirkRefuses() async throws {
        let name = "utopia-td3-pace"
        var description = try TestFixtures.description(name)
        var quirks = ChipQuirks()
        quirks.wrongLengthAboveLimit = true
        description.quirks = quirks
        let passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"), signer: try TestFixtures.documentSigner())
        let chip = VirtualPassportChip(passport: passport)
        let session = try await Self.openSession(name, chip: chip, passport: passport)
        try await session.selectOrFail(.file(EmulatedPassport.dataGroupFID(2)), .secure)
        let explicit = try await session.send(CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 0xE9), .secure)
        #expect(explicit.statusWord == .wrongLength)
        // 6700 ends nothing here (the quirk answers it protected); Le = 00 gets what fits.
        let upTo256 = try await session.send(CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 256), .secure)
        #expect(upTo256.statusWord == .success && upTo256.data.count == 0xDF)
    }
}
