import ChipRead
import Foundation
import GBGBridgeNFC
import MRTDEmulator
import SmartCard
import Synchronization
import TestSupport
import MRTDCrypto
import TestTraits
import Testing
@testable import LDS
@testable import MRTD
@testable import MRTDVerification

@Suite("PassportReader against the in-process emulator")
struct PassportReaderTests {
    static let trust = TestFixtures.testTrustStore

    static func key(_ name: String) throws -> AccessKey {
        try AccessKey.mrz(try TestFixtures.description(name).mrz.lines.joined(separator: "\n"))
    }

    func read(_ chip: VirtualPassportChip, key: AccessKey, options: ReadOptions = ReadOptions.forTest(trustStore: trust),
              progress: PassportReader.ProgressHandler? = nil) async throws -> PassportReadResult {
        try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: key, options: options,
                                 progress: progress).read()
    }

    @Test("every fixture passport is read fully and verifies", arguments: TestFixtures.passportNames)
    func readsFixture(name: String) async throws {
        let passport = try TestFixtures.passport(name)
        let chip = VirtualPassportChip(passport: passport)
        let result = try await read(chip, key: try Self.key(name))
        #expect(result.accessControl == "BAC")
        for (fid, content) in passport.applicationFiles {
            let file: LDSFile = fid == 0x011E ? .com : fid == 0x011D ? .sod : .dataGroup(Int(fid - 0x0100))
            #expect(result.files[file] == content, "\(name) \(file)")
        }
        #expect(result.dg1?.mrz.lines == (try TestFixtures.description(name)).mrz.lines)
        #expect(result.dg2?.faces.isEmpty == false)
        #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
        #expect(result.passive?.dataGroups.values.allSatisfy { $0 == .matched } == true)
        #expect(result.chip.status == .notSupported)
        #expect(result.active.status == .notSupported)
        #expect(result.parseErrors.isEmpty)
    }

    @Test func cappedShortOnlyChipStepsDownToItsLimit() async throws {
        // A chip that refuses (6700) any Ne above its 128-byte buffer: the reader steps down to it.
        var passport = try TestFixtures.passport("utopia-td1-idcard")
        passport.quirks.wrongLengthAboveLimit = true
        let result = try await read(VirtualPassportChip(passport: passport), key: try Self.key("utopia-td1-idcard"))
        #expect(result.statistics.readSize == 0x80)
        #expect(!result.statistics.extendedLength)
        #expect(result.passiveOutcome.status == .valid)
    }

    @Test func cappedShortOnlyChipAnsweringWhatFitsIsReadFully() async throws {
        // The same chip answering at most 128 bytes to any Ne (ISO 7816-4: Ne is a maximum).
        let passport = try TestFixtures.passport("utopia-td1-idcard")
        let chip = VirtualPassportChip(passport: passport)
        let result = try await read(chip, key: try Self.key("utopia-td1-idcard"))
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.files[.dataGroup(2)] == passport.applicationFiles[0x0102])
    }

    @Test func extendedLengthChipIsReadInFewAPDUs() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let result = try await read(chip, key: try Self.key("utopia-td3-jpeg"))
        #expect(result.statistics.extendedLength)
        // EF.CardAccess (looking for PACE, and the extended-length probe), SELECT, GET CHALLENGE,
        // EXTERNAL AUTHENTICATE, then one READ BINARY by SFI per file (6 files): the minimum.
        #expect(result.statistics.apdus == 1 + 3 + 6)
    }

    @Test func wrongKeyIsAccessDenied() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let wrong = try AccessKey.fields(documentNumber: "L898902C3", dateOfBirth: "740812", dateOfExpiry: "120416")
        await #expect {
            _ = try await read(chip, key: wrong)
        } throws: { error in
            guard let error = error as? MRTDError else { return false }
            return error.code == .accessDenied && !error.reason.contains("L898902C3")
        }
        #expect(chip.statistics.apdus <= 5)
    }

    @Test func removalMidFileReturnsNothing() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td1-idcard"))
        // Enough APDUs for access control and a part of DG2, not all of it.
        chip.setFaults(ChipFaults(removeAfterAPDUs: 40))
        await #expect {
            _ = try await read(chip, key: try Self.key("utopia-td1-idcard"))
        } throws: { ($0 as? MRTDError)?.code == .cardRemoved }
    }

    @Test func corruptedResponseMACAbortsTheRead() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        chip.setFaults(ChipFaults(statusOverrides: [], readLengthCap: nil))
        // Corrupt a MAC a few APDUs into the secure session.
        let reader = PassportReader(connection: CorruptingConnection(chip: chip, corruptAt: 8), accessKey: try Self.key("utopia-td3-jpeg"),
                                    options: ReadOptions.forTest(trustStore: Self.trust))
        await #expect {
            _ = try await reader.read()
        } throws: { ($0 as? MRTDError)?.code == .secureMessagingFailure }
    }

    @Test func chipThatDropsSecureMessagingOnLongReadsIsStillRead() async throws {
        // A short-only chip that is sent an extended READ BINARY answers 6700 in plain and ends
        // the session: the reader must fall back to short reads and re-authenticate.
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        // The first protected read (EF.COM by SFI) is answered 6700 in plain.
        chip.setFaults(ChipFaults(statusOverrides: [.init(ins: 0xB0, p1: 0x9E, statusWord: .wrongLength, plain: true)]))
        let result = try await read(chip, key: try Self.key("utopia-td3-jpeg"))
        #expect(result.statistics.reauthentications >= 1)
        #expect(!result.statistics.extendedLength)
        #expect(result.passiveOutcome.status == .valid)
    }

    @Test func progressIsMonotonicAndEndsAt100() async throws {
        let events = Mutex<[ReadProgress]>([])
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td1-idcard"))
        _ = try await read(chip, key: try Self.key("utopia-td1-idcard")) { event in events.withLock { $0.append(event) } }
        let seen = events.withLock { $0 }
        #expect(seen.first?.phase == .authenticating)
        #expect(seen.last?.percent == 100 && seen.last?.phase == .verifying)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.percent <= $1.percent })
        #expect(seen.contains { $0.file == "DG2" && $0.bytesTotal != nil && $0.bytesRead == $0.bytesTotal })
    }

    @Test func cancellationStopsTheRead() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td1-idcard"))
        chip.setFaults(ChipFaults(latencyPerAPDU: .milliseconds(20)))
        let task = Task { try await read(chip, key: try Self.key("utopia-td1-idcard")) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        await #expect { _ = try await task.value } throws: { ($0 as? MRTDError)?.code == .cancelled }
    }

    @Test func requestedDataGroupsOnlyAndProtectedOnesAreSkipped() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        var options = ReadOptions.forTest(dataGroups: [1, 3, 11], trustStore: Self.trust)
        options.verifyPassive = true
        let result = try await read(chip, key: try Self.key("utopia-td3-jpeg"), options: options)
        #expect(result.dataGroupsRead == ["DG1", "DG11"])
        #expect(result.skipped[.dataGroup(3)] != nil)
        #expect(result.passive?.dataGroups["DG2"] == .notRead)
        #expect(result.passiveOutcome.status == .valid)
    }

    @Test(.needsSharedFixtures) func dumpOfTheBSITestPassportReadsAndIsInvalidForItsUncoveredGroups() async throws {
        let chip = VirtualPassportChip(passport: try EmulatedPassport(dumpDirectory: TestFixtures.sharedURL("lds/bsi2008")))
        let dg1 = try DataGroup1(bytes: Array(try Data(contentsOf: TestFixtures.sharedURL("lds/bsi2008/Datagroup1.bin"))))
        let result = try await read(chip, key: try AccessKey.mrz(dg1.mrz.text),
                                    options: ReadOptions.forTest(dataGroups: [1, 2, 3, 4, 14, 15], trustStore: Self.trust))
        // DG4 and DG15 are not in its EF.SOD: invalid, and never shown (the chain alone is untrusted).
        #expect(result.passiveOutcome.status == .invalid)
        #expect(result.passive?.chain == .untrusted)
        #expect(result.passive?.dataGroups["DG4"] == .notCovered)
        #expect(result.passive?.dataGroups["DG15"] == .notCovered)
        #expect(Set(result.withheld.keys) == [.dataGroup(4), .dataGroup(15)])
        #expect(result.chip.status == .invalid)  // DG14 offers CA, but a dump has no key behind it
        #expect(result.active.status == .invalid)  // DG15 present, but a dump has no key to answer with
        #expect(result.dg2?.faces.first?.format == .jpeg2000)
    }
}

/// Flips a bit in the MAC of the `corruptAt`-th response.
final class CorruptingConnection: CardConnection {
    let inner: EmulatedCardConnection
    let corruptAt: Int
    let count = Mutex(0)
    init(chip: VirtualPassportChip, corruptAt: Int) {
        inner = EmulatedCardConnection(chip: chip)
        self.corruptAt = corruptAt
    }
    var readerName: String { inner.readerName }
    var atr: [UInt8] { inner.atr }
    var exchangeTimeLimit: Duration? { inner.exchangeTimeLimit }
    func transmit(raw: [UInt8]) async throws -> [UInt8] {
        var response = try await inner.transmit(raw: raw)
        let n = count.withLock { $0 += 1; return $0 }
        if n == corruptAt, response.count > 4 { response[response.count - 3] ^= 0x01 }
        return response
    }
    func isCardPresent() async -> Bool { await inner.isCardPresent() }
    func disconnect() async { await inner.disconnect() }
}

@Suite("PACE against the in-process emulator")
struct PACEReaderTests {
    static let trust = PassportReaderTests.trust

    func read(_ name: String, key: AccessKey, access: AccessControlPreference = .automatic,
              configure: (inout EmulatedPassport) -> Void = { _ in }) async throws -> (PassportReadResult, VirtualPassportChip) {
        var passport = try TestFixtures.passport(name)
        configure(&passport)
        let chip = VirtualPassportChip(passport: passport)
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: key,
                                              options: ReadOptions.forTest(trustStore: Self.trust, accessControl: access)).read()
        return (result, chip)
    }

    @Test("PACE with the MRZ on every PACE fixture", arguments: TestFixtures.pacePassportNames)
    func paceWithMRZ(name: String) async throws {
        let (result, chip) = try await read(name, key: try PassportReaderTests.key(name))
        #expect(result.accessControl == "PACE")
        #expect(result.paceMapping == "GM")
        #expect(result.accessControlNote == nil)
        #expect(result.passiveOutcome.status == .valid)
        #expect(chip.statistics.paceSuccesses == 1 && chip.statistics.bacSuccesses == 0)
        #expect(ReadReport(result).paceMapping == "GM")
    }

    @Test func paceWithCAN() async throws {
        let (result, _) = try await read("utopia-id-pace-only", key: .can("123456"))
        #expect(result.accessControl == "PACE")
        #expect(result.dg1?.mrz.documentNumber == "U21034875")
    }

    @Test func wrongCANIsAccessDeniedAndTheChipStaysUsable() async throws {
        var passport = try TestFixtures.passport("utopia-id-pace-only")
        passport.maxReadLength = 256
        let chip = VirtualPassportChip(passport: passport)
        let connection = EmulatedCardConnection(chip: chip)
        await #expect {
            _ = try await PassportReader(connection: connection, accessKey: .can("654321"), options: .forTest()).read()
        } throws: { ($0 as? MRTDError)?.code == .accessDenied }
        #expect(chip.statistics.paceFailures == 1)
        // No lock-up: the right CAN works on the same connection right after.
        let result = try await PassportReader(connection: connection, accessKey: .can("123456"),
                                              options: ReadOptions.forTest(trustStore: Self.trust)).read()
        #expect(result.accessControl == "PACE")
    }

    @Test func aSecondReadFindsTheChipInsideTheApplicationAndStillUsesPACE() async throws {
        // PC/SC leaves the card powered between sessions: the chip is still in the eMRTD
        // application with the old secure-messaging session when the next read starts.
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-id-pace-only"))
        let connection = EmulatedCardConnection(chip: chip)
        for _ in 0..<2 {
            let result = try await PassportReader(connection: connection, accessKey: .can("123456"),
                                                  options: ReadOptions.forTest(trustStore: Self.trust)).read()
            #expect(result.accessControl == "PACE")
        }
        #expect(chip.statistics.paceSuccesses == 2)
    }

    @Test func paceOnlyChipRefusesBAC() async throws {
        await #expect {
            _ = try await read("utopia-id-pace-only", key: try PassportReaderTests.key("utopia-id-pace-only"), access: .bacOnly)
        } throws: { ($0 as? MRTDError)?.code == .notSupported && "\($0)".contains("PACE only") }
    }

    @Test func forcedBACOnAChipThatHasBoth() async throws {
        let (result, chip) = try await read("utopia-td3-pace", key: try PassportReaderTests.key("utopia-td3-pace"), access: .bacOnly)
        #expect(result.accessControl == "BAC")
        #expect(chip.statistics.paceSuccesses == 0)
    }

    @Test func canOnABACOnlyChipIsAClearError() async throws {
        await #expect {
            _ = try await read("utopia-td3-jpeg", key: .can("123456"))
        } throws: { error in
            guard let error = error as? MRTDError else { return false }
            return error.code == .notSupported && error.reason.contains("PACE")
        }
        await #expect {
            _ = try await read("utopia-td3-jpeg", key: try PassportReaderTests.key("utopia-td3-jpeg"), access: .paceOnly)
        } throws: { ($0 as? MRTDError)?.code == .notSupported }
    }

    @Test("PACE on every standardised group and cipher", arguments: [
        (0, KeyDerivation.KeyType.tripleDES), (1, .aes128), (2, .aes256),
        (8, .tripleDES), (9, .aes128), (10, .aes192), (11, .aes256), (12, .aes128), (13, .tripleDES),
        (14, .aes256), (15, .aes192), (16, .aes128), (17, .aes256), (18, .aes256),
    ])
    func curvesAndCiphers(parameterId: Int, keyType: KeyDerivation.KeyType) async throws {
        let (result, _) = try await read("utopia-td3-jpeg", key: try PassportReaderTests.key("utopia-td3-jpeg")) { passport in
            let keyAgreement = PACEDomain.standardized(parameterId)!.keyAgreement
            passport.enablePACE(PACEInfo(protocolID: PACE.ProtocolID(keyAgreement: keyAgreement, mapping: .genericMapping, keyType: keyType),
                                         parameterId: parameterId), can: "555555", bacAllowed: false)
        }
        #expect(result.accessControl == "PACE")
        #expect(result.passiveOutcome.status == .valid)
    }

    @Test func unsupportedPACEFallsBackToBACAndSaysSo() async throws {
        let (result, _) = try await read("utopia-td3-jpeg", key: try PassportReaderTests.key("utopia-td3-jpeg")) { passport in
            // Integrated mapping on NIST P-224 is not performed (p ≡ 1 mod 4); the chip also offers BAC.
            passport.masterFiles[0x011C] = DER.set([PACEInfo(protocolID: PACE.ProtocolID(keyAgreement: .ecdh, mapping: .integratedMapping,
                                                                                          keyType: .aes128), parameterId: 10).der])
        }
        #expect(result.accessControl == "BAC")
        #expect(result.accessControlNote?.contains("does not perform") == true)
        #expect(ReadReport(result).accessControlNote == result.accessControlNote)
    }
}

@Suite("Active Authentication against the in-process emulator")
struct ActiveAuthenticationTests {
    func read(_ name: String, clone: Bool = false, kind: String? = nil) async throws -> PassportReadResult {
        var description = try TestFixtures.description(name)
        if let kind { description.activeAuthentication = kind }
        description.clone = clone
        let passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        let chip = VirtualPassportChip(passport: passport)
        return try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try PassportReaderTests.key(name),
                                        options: ReadOptions.forTest(trustStore: PassportReaderTests.trust)).read()
    }

    @Test("a genuine chip signs the challenge", arguments: [
        ("utopia-td3-pace", "RSA-1024"), ("utopia-td3-pace", "RSA-2048"), ("utopia-id-pace-only", "ECDSA-P256"),
        ("utopia-td3-jpeg", "ECDSA-brainpoolP256r1"),
    ])
    func genuine(name: String, kind: String) async throws {
        let result = try await read(name, kind: kind)
        #expect(result.active.status == .valid, "\(result.active.detail)")
        #expect(result.passive?.dataGroups["DG15"] == .matched)
        #expect(result.passiveOutcome.status == .valid)
    }

    @Test("ECDSA with every hash TR-03111 names, identified as ecdsa-plain-SHA* or as X9.62 ecdsa-with-SHA*: the named hash is used",
          arguments: ["ECDSA-P256-SHA1", "ECDSA-P256-SHA224", "ECDSA-P256-SHA256", "ECDSA-P384-SHA384", "ECDSA-brainpoolP384r1-SHA384",
                      "ECDSA-brainpoolP256r1-SHA224", "ECDSA-P521-SHA512", "ECDSA-brainpoolP512r1-SHA512"], [false, true])
    func ecdsaHashes(kind: String, x962: Bool) async throws {
        var description = try TestFixtures.description("utopia-td3-pace")
        description.activeAuthentication = kind
        description.activeAuthenticationX962Identifier = x962
        let passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: VirtualPassportChip(passport: passport)),
                                              accessKey: try PassportReaderTests.key("utopia-td3-pace"),
                                              options: ReadOptions.forTest(trustStore: PassportReaderTests.trust)).read()
        #expect(result.active.status == .valid, "\(kind): \(result.active.detail)")
        let hash = String(kind.split(separator: "-").last ?? "")
        #expect(result.active.detail.replacingOccurrences(of: "-", with: "").contains(hash), "\(result.active.detail)")
        // DG14 names the algorithm as asked: TR-03111's plain identifier by default.
        let infos = try #require(result.dg14)
        let oid = try #require(infos.entries.first { $0.oid == ActiveAuthentication.infoOID }.flatMap { entry in
            (try? BERTLV.parseSingle(entry.der).children()).flatMap { $0.count >= 3 ? DER.oidString($0[2].value) : nil }
        })
        #expect(oid.hasPrefix(x962 ? "1.2.840.10045.4" : "0.4.0.127.0.7.1.1.4.1."), "\(oid)")
    }

    @Test("TR-03111 ecdsa-plain identifiers map to their hashes (BSI TR-03111 §5.2.1)")
    func plainIdentifiers() {
        let expected: [(String, DigestAlgorithm)] = [("0.4.0.127.0.7.1.1.4.1.1", .sha1), ("0.4.0.127.0.7.1.1.4.1.2", .sha224),
                                                     ("0.4.0.127.0.7.1.1.4.1.3", .sha256), ("0.4.0.127.0.7.1.1.4.1.4", .sha384),
                                                     ("0.4.0.127.0.7.1.1.4.1.5", .sha512)]
        for (oid, digest) in expected {
            #expect(ActiveAuthentication.ecdsaSignatureAlgorithms[oid] == digest)
            #expect(ActiveAuthentication.plainSignatureOID(digest) == oid)
            let dg14 = try? SecurityInfos(bytes: BERTLV.encode(tag: 0x6E, value: DER.set([DER.sequence(DER.oid(ActiveAuthentication.infoOID),
                                                                                                    DER.integer(1), DER.oid(oid))])))
            #expect(ActiveAuthentication.ecdsaDigest(in: dg14) == digest, "\(oid)")
        }
    }

    @Test("a cloned chip fails", arguments: ["RSA-1024", "ECDSA-P256"])
    func cloned(kind: String) async throws {
        let result = try await read("utopia-td3-pace", clone: true, kind: kind)
        #expect(result.active.status == .invalid)
        #expect(result.active.detail.contains("copy"))
        #expect(result.passiveOutcome.status == .valid)  // the data is genuine, the chip is not
    }

    @Test(.needsSharedFixtures) func aReplayedDumpCannotAnswer() async throws {
        // The BSI test passport's DG15 with no private key behind it: INTERNAL AUTHENTICATE fails.
        let chip = VirtualPassportChip(passport: try EmulatedPassport(dumpDirectory: TestFixtures.sharedURL("lds/bsi2008")))
        let dg1 = try DataGroup1(bytes: Array(try Data(contentsOf: TestFixtures.sharedURL("lds/bsi2008/Datagroup1.bin"))))
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try AccessKey.mrz(dg1.mrz.text),
                                              options: ReadOptions.forTest(dataGroups: [1, 15])).read()
        #expect(result.active.status == .invalid)
    }

    @Test func iso9796Blocks() throws {
        let key = try PrivateKey.generateRSA(bits: 1024)
        let publicKey = try PublicKey(subjectPublicKeyInfo: key.subjectPublicKeyInfo)
        let challenge: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let signature = try ActiveAuthentication.signISO9796(key: key, modulusBytes: 128, challenge: challenge)
        #expect(ActiveAuthentication.verify(publicKey: publicKey, challenge: challenge, signature: signature, ecdsaDigest: .sha256).status == .valid)
        #expect(ActiveAuthentication.verify(publicKey: publicKey, challenge: [9, 9, 9, 9, 9, 9, 9, 9], signature: signature, ecdsaDigest: .sha256).status == .invalid)
        var damaged = signature
        damaged[5] ^= 1
        #expect(ActiveAuthentication.verify(publicKey: publicKey, challenge: challenge, signature: damaged, ecdsaDigest: .sha256).status == .invalid)
        #expect(ActiveAuthentication.verify(publicKey: publicKey, challenge: challenge, signature: [1, 2, 3], ecdsaDigest: .sha256).status == .invalid)
    }
}

@Suite("Chip Authentication against the in-process emulator")
struct ChipAuthenticationTests {
    func read(_ name: String, ca: String?, access: AccessControlPreference = .automatic,
              configure: (VirtualPassportChip) -> Void = { _ in }) async throws -> (PassportReadResult, VirtualPassportChip) {
        var description = try TestFixtures.description(name)
        description.chipAuthentication = ca
        let passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        let chip = VirtualPassportChip(passport: passport)
        configure(chip)
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try PassportReaderTests.key(name),
                                              options: ReadOptions.forTest(trustStore: PassportReaderTests.trust, accessControl: access)).read()
        return (result, chip)
    }

    @Test("CA after BAC or PACE, every cipher", arguments: [
        ("utopia-td3-jpeg", "ECDH-brainpoolP256r1-AES-128"), ("utopia-td3-jpeg", "ECDH-P256-3DES"),
        ("utopia-td3-pace", "ECDH-P384-AES-192"), ("utopia-id-pace-only", "ECDH-P256-AES-256"),
        ("utopia-td1-idcard", "ECDH-brainpoolP384r1-AES-256"), ("utopia-td3-jpeg", "DH-MODP2048/224-AES-128"),
        ("utopia-td3-pace", "DH-MODP1024/160-3DES"), ("utopia-td3-jpeg", "ECDH-brainpoolP256r1-3DES-v1"),
        ("utopia-td3-jpeg", "DH-MODP2048/256-3DES-v1"),
    ])
    func chipAuthentication(name: String, ca: String) async throws {
        let (result, chip) = try await read(name, ca: ca)
        #expect(result.chip.status == .valid, "\(result.chip.detail)")
        #expect(chip.statistics.chipAuthentications == 1)
        #expect(result.passiveOutcome.status == .valid)
        #expect(result.passive?.dataGroups["DG14"] == .matched)
        // Everything after DG14 was read with the new keys: the files are complete.
        #expect(result.dg2?.faces.isEmpty == false)
    }

    @Test func aChipWithoutTheKeyFailsCA() async throws {
        // The chip answers GENERAL AUTHENTICATE with an error, as a chip without the DG14 key would.
        let (result, _) = try await read("utopia-td3-jpeg", ca: "ECDH-P256-AES-128") { chip in
            chip.setFaults(ChipFaults(statusOverrides: [.init(ins: 0x86, statusWord: .wrongData)]))
        }
        #expect(result.chip.status == .invalid)
        #expect(result.dg2?.faces.isEmpty == false)  // reading went on after re-authentication
    }

    @Test("a copy that answers CA with a key of its own is caught by the next protected exchange",
          arguments: ["ECDH-P256-AES-128", "ECDH-brainpoolP256r1-3DES", "DH-MODP2048/224-AES-128"])
    func aCopyWithAnotherKeyFailsCA(ca: String) async throws {
        // DG14 (signed, copied from the genuine chip) publishes one key; the chip holds another.
        // MSE:Set AT and GENERAL AUTHENTICATE pass: only the session keys tell.
        var description = try TestFixtures.description("utopia-td3-jpeg")
        description.chipAuthentication = ca
        var passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        let impostor = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        passport.chipAuthenticationKey = impostor.chipAuthenticationKey
        let chip = VirtualPassportChip(passport: passport)
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: try PassportReaderTests.key("utopia-td3-jpeg"),
                                              options: ReadOptions.forTest(trustStore: PassportReaderTests.trust)).read()
        #expect(result.chip.status == .invalid, "\(result.chip.detail)")
        #expect(result.chip.detail.contains("copy"))
        #expect(result.passiveOutcome.status == .valid, "the read still completes: \(result.passiveOutcome.detail)")
        #expect(result.dg2?.faces.isEmpty == false)
    }

    @Test func threeDESRunsThroughMSESetKATNotGeneralAuthenticate() async throws {
        // A chip that refuses GENERAL AUTHENTICATE still completes 3DES CA: it goes through KAT.
        let (result, chip) = try await read("utopia-td3-jpeg", ca: "ECDH-P256-3DES") { chip in
            chip.setFaults(ChipFaults(statusOverrides: [.init(ins: 0x86, statusWord: .wrongData)]))
        }
        #expect(result.chip.status == .valid, "\(result.chip.detail)")
        #expect(chip.statistics.chipAuthentications == 1)
    }

    @Test func aDG14WithOnlyTheKeyImpliesVersion1With3DES() async throws {
        let (result, _) = try await read("utopia-td3-jpeg", ca: "ECDH-P256-3DES-v1")
        let dg14 = try #require(result.dg14)
        let offer = try #require(ChipAuthentication.offer(in: dg14))
        #expect(offer.impliedByKeyOnly && offer.protocolID.keyType == .tripleDES && offer.protocolID.keyAgreement == .ecdh)
        #expect(result.chip.status == .valid && result.chip.detail.contains("implied"))
    }

    @Test func aDHKeyRoundTripsThroughItsSubjectPublicKeyInfo() throws {
        let group = try #require(DiffieHellmanGroup.rfc5114(parameterId: 1))
        let pair = try group.generateKeyPair()
        let spki = ChipAuthentication.dhSubjectPublicKeyInfo(group: group, publicValue: pair.publicKey)
        let parsed = try #require(ChipAuthentication.dhPublicKey(subjectPublicKeyInfo: spki))
        #expect(parsed.group.p == group.p && parsed.group.g == group.g && parsed.group.q == group.q)
        #expect(parsed.publicValue == pair.publicKey)
        // A value outside the subgroup, or a truncated structure, is no key.
        #expect(ChipAuthentication.dhPublicKey(subjectPublicKeyInfo: ChipAuthentication.dhSubjectPublicKeyInfo(group: group, publicValue: [2])) == nil)
        #expect(ChipAuthentication.dhPublicKey(subjectPublicKeyInfo: Array(spki.dropLast(3))) == nil)
    }

    @Test func unknownChipAuthenticationSettingsAreRefused() throws {
        for setting in ["ECDH-P256-AES-128-v1", "DH-MODP3072-AES-128", "RSA-P256-AES-128", "ECDH-P256"] {
            #expect(throws: EmulatorError.self, "\(setting)") {
                var description = try TestFixtures.description("utopia-td3-jpeg")
                description.chipAuthentication = setting
                _ = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                         signer: try TestFixtures.documentSigner())
            }
        }
    }

    @Test func noDG14MeansNotSupported() async throws {
        let (result, _) = try await read("utopia-td3-jpeg", ca: nil)
        #expect(result.chip.status == .notSupported)
    }
}

@Suite("PACE-CAM against the in-process emulator")
struct PACECAMTests {
    func passport(parameterId: Int = 13, cipher: String = "AES-128") throws -> EmulatedPassport {
        var description = try TestFixtures.description("utopia-id-pace-only")
        description.paceMapping = "CAM"
        description.paceParameterId = parameterId
        description.paceCipher = cipher
        description.chipAuthentication = nil
        return try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                    signer: try TestFixtures.documentSigner())
    }

    @Test("CAM proves the chip", arguments: [(13, "AES-128"), (12, "AES-256"), (16, "AES-192")])
    func chipAuthenticationMapping(parameterId: Int, cipher: String) async throws {
        let chip = VirtualPassportChip(passport: try passport(parameterId: parameterId, cipher: cipher))
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: .can("123456"),
                                              options: ReadOptions.forTest(trustStore: PassportReaderTests.trust)).read()
        #expect(result.accessControl == "PACE" && result.paceMapping == "CAM")
        #expect(result.chip.status == .valid, "\(result.chip.detail)")
        #expect(result.chip.detail.contains("PACE-CAM"))
        #expect(result.files[.cardSecurity] != nil)
        #expect(result.passiveOutcome.status == .valid)
    }

    @Test func aChipWithoutTheCardSecurityKeyFails() async throws {
        var content = try passport()
        content.chipAuthenticationMappingKey = try PrivateKey.generateEC(curveName: "brainpoolP256r1")  // not the published one
        let chip = VirtualPassportChip(passport: content)
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: .can("123456"),
                                              options: ReadOptions.forTest(trustStore: PassportReaderTests.trust)).read()
        #expect(result.chip.status == .invalid)
        #expect(result.chip.detail.contains("copy"))
    }

    @Test func untrustedCardSecurityIsReported() async throws {
        let chip = VirtualPassportChip(passport: try passport())
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: .can("123456"), options: .forTest()).read()
        #expect(result.chip.status == .untrusted)
    }
}

@Suite("PACE Integrated Mapping against the in-process emulator")
struct PACEIMTests {
    func passport(parameterId: Int, cipher: String = "AES-128") throws -> EmulatedPassport {
        var description = try TestFixtures.description("utopia-id-pace-only")
        description.paceMapping = "IM"
        description.paceParameterId = parameterId
        description.paceCipher = cipher
        // 2048-bit DH public keys (256 bytes) need extended-length GENERAL AUTHENTICATE, as on
        // real cards with these groups.
        if parameterId == 1 || parameterId == 2 { description.chip?.extendedLength = true }
        return try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                    signer: try TestFixtures.documentSigner())
    }

    @Test("IM opens the chip", arguments: [
        (13, "AES-128"), (12, "AES-128"), (8, "3DES"), (17, "AES-256"), (18, "AES-192"), (11, "AES-256"), (9, "AES-192"),
        (0, "AES-128"), (1, "3DES"), (2, "AES-256"),
    ])  // brainpoolP256r1, P-256, P-192, brainpoolP512r1, P-521, brainpoolP224r1, brainpoolP192r1, the three RFC 5114 groups
    func integratedMapping(parameterId: Int, cipher: String) async throws {
        let chip = VirtualPassportChip(passport: try passport(parameterId: parameterId, cipher: cipher))
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: .can("123456"),
                                              options: ReadOptions.forTest(trustStore: PassportReaderTests.trust)).read()
        #expect(result.accessControl == "PACE" && result.paceMapping == "IM")
        #expect(result.paceProtocol == "PACE-\(parameterId <= 2 ? "DH" : "ECDH")-IM-\(cipher)")
        #expect(result.passiveOutcome.status == .valid)
        #expect(chip.statistics.paceSuccesses == 1)
    }

    @Test func aWrongCANIsAccessDenied() async throws {
        let chip = VirtualPassportChip(passport: try passport(parameterId: 13))
        await #expect {
            _ = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: .can("654321"), options: .forTest()).read()
        } throws: { ($0 as? MRTDError)?.code == .accessDenied }
    }

    @Test func nistP224IsRefusedByTheEmulator() throws {
        // NIST P-224 has p ≡ 1 mod 4: Appendix B's point encoding does not apply.
        #expect(throws: EmulatorError.self) { _ = try passport(parameterId: 10) }
    }
}
