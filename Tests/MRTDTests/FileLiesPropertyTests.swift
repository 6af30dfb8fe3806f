import Foundation
import MRTDEmulator
import PropertyBased
import SmartCard
import TestSupport
import Testing
@testable import MRTD

/// Random truncations, extensions and length lies of every fixture file, served by a chip that
/// otherwise behaves: the reader never returns a file that is not exactly what the chip holds up
/// to its header's length, never returns one whose header claims more than the chip gives, and a
/// data group that differs from the signed one never passes passive authentication.
@Suite("File lies (property-based)")
struct FileLiesPropertyTests {
    /// One mutation of one file of one fixture passport.
    struct Lie: CustomStringConvertible, Sendable {
        enum Kind: Sendable { case truncate(Int), extend([UInt8]), claimLength(Int), flipByte(Int) }
        var passport: String
        var fid: UInt16
        var kind: Kind
        var description: String { "\(passport) \(String(format: "%04X", fid)) \(kind)" }
    }

    static let passports = ["utopia-td3-jpeg", "utopia-td1-idcard", "utopia-td3-pace", "utopia-demo"]
    static let files: [UInt16] = [0x011E, 0x011D, 0x0101, 0x0102, 0x010B, 0x010C, 0x010E, 0x010F]

    static let lies = Generator<Lie, Shrink.None<Lie>> { rng in
        let passport = passports.randomElement(using: &rng) ?? passports[0]
        let fid = files.randomElement(using: &rng) ?? 0x0101
        let kind: Lie.Kind
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: kind = .truncate(Int.random(in: 0..<4_000, using: &rng))
        case 1: kind = .extend((0..<Int.random(in: 1...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 2:
            let choices = [0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x1234, 0xFFFF, 0x10000, 70_000, 0x7FFF_FFFF]
            kind = .claimLength(Bool.random(using: &rng) ? (choices.randomElement(using: &rng) ?? 0) : Int.random(in: 0...70_000, using: &rng))
        default: kind = .flipByte(Int.random(in: 0..<4_000, using: &rng))
        }
        return Lie(passport: passport, fid: fid, kind: kind)
    }

    /// `bytes` with its outer TLV header claiming `length` bytes of value (long form as needed).
    static func claiming(_ length: Int, _ bytes: [UInt8]) -> [UInt8] {
        guard let header = try? BERTLV.header(bytes) else { return bytes }
        let rest = Array(bytes.dropFirst(header.headerLength))
        return BERTLV.encodeTag(header.tag) + BERTLV.encodeLength(length) + rest
    }

    static func served(_ original: [UInt8], _ kind: Lie.Kind) -> [UInt8] {
        switch kind {
        case .truncate(let count): return Array(original.prefix(count % max(original.count, 1)))
        case .extend(let junk): return original + junk
        case .claimLength(let length): return claiming(length, original)
        case .flipByte(let index):
            var copy = original
            if !copy.isEmpty { copy[index % copy.count] ^= 0x5A }
            return copy
        }
    }

    @Test func aLieIsRefusedOrCaughtNeverPassedOn() async throws {
        let originals = try Dictionary(uniqueKeysWithValues: Self.passports.map { ($0, try TestFixtures.passport($0)) })
        await propertyCheck(count: 300, input: Self.lies) { lie in
            guard var passport = originals[lie.passport], let original = passport.applicationFiles[lie.fid] else { return }
            let served = Self.served(original, lie.kind)
            passport.applicationFiles[lie.fid] = served
            let chip = VirtualPassportChip(passport: passport)
            var options = ReadOptions.forTest(trustStore: TestFixtures.testTrustStore)
            options.readTimeout = nil  // an in-process chip: what is checked is the files, not the time
            let reader: PassportReader
            do {
                reader = PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try TestFixtures.accessKey(lie.passport), options: options)
            } catch {
                Issue.record("\(lie): \(error)")
                return
            }
            let result: PassportReadResult
            do throws(MRTDError) {
                result = try await reader.read()
            } catch {
                // A typed error ends the read (never a hang or a crash); nothing was passed on.
                _ = error
                return
            }
            for (file, bytes) in result.files where !file.isOnMasterFile {
                guard let chipFile = passport.applicationFiles[file.fid] else {
                    Issue.record("\(lie): \(file) returned but the chip has no such file")
                    continue
                }
                guard let declared = (try? BERTLV.header(chipFile))?.totalLength, declared <= chipFile.count else {
                    Issue.record("\(lie): \(file) returned although its header is broken or claims more than the chip holds")
                    continue
                }
                #expect(bytes == Array(chipFile.prefix(declared)), "\(lie): \(file) is not the chip's file up to its header's length")
                if let number = file.dataGroupNumber, bytes != originals[lie.passport]?.applicationFiles[file.fid] {
                    #expect(result.passiveOutcome.status != .valid, "\(lie): DG\(number) differs from the signed one, passive \(result.passiveOutcome)")
                }
            }
        }
    }
}
