import Foundation
import MRTD
@testable import MRTDEmulator
import Synchronization
import TestSupport
import Testing
@testable import SmartCard

/// The PN532 UART protocol of the emulator, byte by byte.
@Suite("Emulated PN532: frames")
struct PN532FrameTests {
    static let ack: [UInt8] = [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00]

    /// A host frame `00 00 FF LEN LCS D4 cmd data DCS 00`.
    static func frame(_ command: UInt8, _ data: [UInt8] = []) -> [UInt8] {
        let body: [UInt8] = [0xD4, command] + data
        return [0x00, 0x00, 0xFF, UInt8(body.count), 0 &- UInt8(body.count)] + body + [0 &- body.reduce(0, &+), 0x00]
    }

    /// Splits the ACK off an answer and checks the answer frame's checksums; returns its data.
    static func answer(_ bytes: [UInt8], to command: UInt8) throws -> [UInt8] {
        #expect(Array(bytes.prefix(6)) == ack)
        let frame = Array(bytes.dropFirst(6))
        try #require(frame.count >= 9 && Array(frame.prefix(3)) == [0x00, 0x00, 0xFF])
        var start = 5, length = Int(frame[3])
        if frame[3] == 0xFF && frame[4] == 0xFF {
            length = Int(frame[5]) << 8 | Int(frame[6])
            #expect((Int(frame[5]) + Int(frame[6]) + Int(frame[7])) & 0xFF == 0)
            start = 8
        } else {
            #expect((Int(frame[3]) + Int(frame[4])) & 0xFF == 0)
        }
        let body = Array(frame[start..<start + length])
        #expect(body.reduce(frame[start + length], &+) == 0, "data checksum")
        #expect(frame[start + length + 1] == 0x00 && frame.count == start + length + 2)
        #expect(Array(body.prefix(2)) == [0xD5, command + 1])
        return Array(body.dropFirst(2))
    }

    @Test func wakeUpThenCommunicationTestEchoes() throws {
        let pn532 = PN532Emulator(chip: nil)
        let test: [UInt8] = [0x00] + Array("libnfc".utf8)
        // Wake-up preamble and line noise before the start code are skipped.
        let output = pn532.receive([0x55, 0x55, 0x00, 0x00, 0x00, 0x13] + Self.frame(0x00, test))
        #expect(try Self.answer(output, to: 0x00) == test)
        #expect(try Self.answer(pn532.receive(Self.frame(0x02)), to: 0x02) == [0x32, 0x01, 0x06, 0x07])
    }

    @Test func framesSplitAcrossReadsAreReassembled() throws {
        let pn532 = PN532Emulator(chip: nil)
        let whole = Self.frame(0x02)
        var output: [UInt8] = []
        for byte in whole { output += pn532.receive([byte]) }
        #expect(try Self.answer(output, to: 0x02) == [0x32, 0x01, 0x06, 0x07])
    }

    @Test func badChecksumsGetTheErrorFrameAndNackRepeats() throws {
        let pn532 = PN532Emulator(chip: nil)
        var bad = Self.frame(0x02)
        bad[bad.count - 2] &+= 1
        #expect(pn532.receive(bad) == PN532Emulator.errorFrame)
        #expect(pn532.receive([0x00, 0x00, 0xFF, 0x05, 0x05]) == PN532Emulator.errorFrame)  // LEN + LCS ≠ 0
        let first = pn532.receive(Self.frame(0x02))
        // NACK: the last answer again, without another ACK.
        #expect(pn532.receive([0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00]) == Array(first.dropFirst(6)))
        // Unknown commands are refused with the application-level error frame after the ACK.
        #expect(pn532.receive(Self.frame(0x60)) == Self.ack + PN532Emulator.errorFrame)
    }

    @Test func registersParametersAndPolling() throws {
        let pn532 = PN532Emulator(chip: nil)
        #expect(try Self.answer(pn532.receive(Self.frame(0x08, [0x63, 0x3D, 0x07])), to: 0x08) == [])
        #expect(try Self.answer(pn532.receive(Self.frame(0x06, [0x63, 0x3D, 0x63, 0x02])), to: 0x06) == [0x07, 0x00])
        // MxRtyPassiveActivation 0: an empty field answers at once with no target.
        #expect(try Self.answer(pn532.receive(Self.frame(0x32, [0x05, 0xFF, 0x01, 0x00])), to: 0x32) == [])
        #expect(try Self.answer(pn532.receive(Self.frame(0x4A, [0x01, 0x00])), to: 0x4A) == [0x00])
        #expect(try Self.answer(pn532.receive(Self.frame(0x40, [0x01, 0x00, 0x84, 0x00, 0x00, 0x08])), to: 0x40) == [0x27])
    }

    @Test func infiniteRetriesWaitForTheCardAndAnAckAborts() throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let pn532 = PN532Emulator(chip: nil)
        _ = pn532.receive(Self.frame(0x12, [0x10]))  // automatic RATS
        #expect(pn532.receive(Self.frame(0x4A, [0x01, 0x00])) == Self.ack)  // pending
        let late = pn532.setChip(chip)
        let target = try Self.answer(Self.ack + late, to: 0x4A)
        #expect(Array(target.prefix(6)) == [0x01, 0x01, 0x00, 0x08, 0x20, 0x04])
        #expect(target.count == 6 + 4 + 6)  // UID and ATS (with its length byte)
        // APDUs go to the chip; an extended answer frame carries more than 255 bytes.
        let select = try Self.answer(pn532.receive(Self.frame(0x40, [0x01] + (try CommandAPDU.selectApplication(EmulatedApplicationID.value).encoded()))), to: 0x40)
        #expect(select == [0x00, 0x90, 0x00])
        _ = pn532.setChip(nil)
        #expect(pn532.receive(Self.frame(0x4A, [0x01, 0x00])) == Self.ack)
        #expect(pn532.receive([0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00]) == [])  // ACK from the host: aborted
        #expect(pn532.setChip(chip) == [])  // nothing pending any more
    }

    @Test func answersOverOneFrameUseExtendedFrames() throws {
        let frame = PN532Emulator.frame(command: 0x40, [0x00] + [UInt8](repeating: 0xAB, count: 258))
        #expect(Array(frame.prefix(5)) == [0x00, 0x00, 0xFF, 0xFF, 0xFF])
        #expect(try Self.answer(Self.ack + frame, to: 0x40).count == 259)
    }
}

/// Real libnfc (`pn532_uart` driver) talking to the emulated PN532 on a pseudo-terminal.
@Suite("libnfc back end against an emulated PN532 on a pty", .serialized)
struct LibNFCHardwareInTheLoopTests {
    static let trust = TestFixtures.testTrustStore

    static func key(_ name: String) throws -> AccessKey { try TestFixtures.accessKey(name) }

    func withPN532<T: Sendable>(_ chip: VirtualPassportChip?, cardType: PN532Emulator.CardType = .typeA,
                                _ body: @Sendable (PN532PseudoTerminal, LibNFCBackend) async throws -> T) async throws -> T {
        let terminal = try PN532PseudoTerminal(chip: chip, cardType: cardType)
        terminal.start()
        defer { terminal.stop() }
        let backend = LibNFCBackend(connectionStrings: [terminal.connectionString], discover: false,
                                    pollInterval: .milliseconds(20))
        return try await body(terminal, backend)
    }

    @Test("every fixture passport reads through libnfc and the PN532",
          arguments: TestFixtures.passportNames + TestFixtures.pacePassportNames)
    func readsFixture(name: String) async throws {
        let passport = try TestFixtures.passport(name)
        let chip = VirtualPassportChip(passport: passport)
        try await withPN532(chip) { terminal, backend in
            let info = try await backend.waitForCard(readerMatching: nil, timeout: .seconds(10))
            #expect(info.name == "libnfc:" + terminal.connectionString && info.backend == "libnfc")
            // The pseudo-ATR pcscd would build for this ISO 14443-4 card: 3B 8n 80 01 … TCK.
            let atr = try #require(info.atr)
            #expect(Array(atr.prefix(5)) == [0x3B, 0x81, 0x80, 0x01, 0x80] && atr.dropFirst().reduce(0, ^) == 0)
            let connection = try await backend.connect(reader: info.name)
            #expect(!connection.supportsExtendedLength)
            let result = try await PassportReader(connection: connection, accessKey: try Self.key(name),
                                                  options: ReadOptions.forTest(trustStore: Self.trust)).read()
            await connection.disconnect()
            for (fid, content) in passport.applicationFiles {
                let file: LDSFile = fid == 0x011E ? .com : fid == 0x011D ? .sod : .dataGroup(Int(fid - 0x0100))
                #expect(result.files[file] == content, "\(name) \(file)")
            }
            #expect(result.passiveOutcome.status == .valid, "\(result.passiveOutcome.detail)")
            #expect(result.statistics.extendedLength == false)
            if TestFixtures.pacePassportNames.contains(name) {
                #expect(result.accessControl == "PACE")
                #expect(result.chip.status == .valid && result.active.status == .valid)
            } else {
                #expect(result.accessControl == "BAC")
            }
        }
    }

    @Test func aTypeBCardIsFoundAfterTypeAPollingAndReads() async throws {
        let passport = try TestFixtures.passport("utopia-id-pace-only")
        let chip = VirtualPassportChip(passport: passport)
        try await withPN532(chip, cardType: .typeB) { _, backend in
            let info = try await backend.waitForCard(readerMatching: nil, timeout: .seconds(10))
            // Pseudo-ATR from the ATQB: application data, protocol info, MBLI.
            #expect(info.atr == [0x3B, 0x88, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80, 0x81, 0x81, 0x00, 0x89])
            let connection = try await backend.connect(reader: info.name)
            let result = try await PassportReader(connection: connection, accessKey: try Self.key("utopia-id-pace-only"),
                                                  options: ReadOptions.forTest(trustStore: Self.trust)).read()
            #expect(result.files[.dataGroup(1)] == passport.applicationFiles[0x0101])
            #expect(result.passiveOutcome.status == .valid && result.chip.status == .valid)
            #expect(await connection.isCardPresent())
        }
    }

    @Test func extendedAPDUsNeverReachTheCard() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        try await withPN532(chip) { _, backend in
            let connection = try await backend.connect(reader: "libnfc:" + backend.connectionStrings[0])
            let before = chip.statistics.apdus
            let response = try await connection.transmit(CommandAPDU(ins: 0x84, p1: 0, p2: 0, ne: 8, forceExtended: true))
            #expect(response.statusWord == .wrongLength)
            #expect(chip.statistics.apdus == before)
            #expect(try await connection.transmit(.getChallenge()).data.count == 8)
            #expect(chip.statistics.apdus == before + 1)
        }
    }

    @Test func waitingTimesOutThenFindsTheCardWhenItArrives() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        try await withPN532(nil) { terminal, backend in
            await #expect {
                _ = try await backend.waitForCard(readerMatching: "pn532", timeout: .milliseconds(300))
            } throws: { ($0 as? SmartCardError)?.code == .timeout }
            #expect(try await backend.readers().map(\.cardPresent) == [false])
            await #expect {
                _ = try await backend.connect(reader: "libnfc:" + terminal.connectionString)
            } throws: { ($0 as? SmartCardError)?.code == .noCard }
            // From a thread of its own, so a busy cooperative pool cannot delay the card past
            // the reader's 10 s.
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 0.2)
                terminal.setChip(chip)
            }
            let info = try await backend.waitForCard(readerMatching: "pn532", timeout: .seconds(10))
            #expect(info.cardPresent)
            await #expect {
                _ = try await backend.waitForCard(readerMatching: "libnfc:acr122_usb", timeout: .seconds(1))
            } throws: { ($0 as? SmartCardError)?.code == .readerNotFound }
        }
    }

    @Test func removalDuringAReadIsReportedAndDetected() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        try await withPN532(chip) { terminal, backend in
            let connection = try await backend.connect(reader: "libnfc:" + terminal.connectionString)
            #expect(await connection.isCardPresent())
            var faults = ChipFaults()
            faults.removeAfterAPDUs = 12
            chip.setFaults(faults)
            await #expect {
                _ = try await PassportReader(connection: connection, accessKey: try Self.key("utopia-td3-jpeg"), options: .forTest()).read()
            } throws: { error in
                guard let error = error as? MRTDError else { return false }
                return error.code == .cardRemoved
            }
            #expect(await !connection.isCardPresent())
            // Back in the field: a fresh connection reads again.
            terminal.setChip(chip)
            let again = try await backend.connect(reader: "libnfc:" + terminal.connectionString)
            let result = try await PassportReader(connection: again, accessKey: try Self.key("utopia-td3-jpeg"),
                                                  options: ReadOptions.forTest(trustStore: Self.trust)).read()
            #expect(result.passiveOutcome.status == .valid)
        }
    }

    @Test func cancellingAWaitStopsIt() async throws {
        try await withPN532(nil) { _, backend in
            let wait = Task { try await backend.waitForCard(readerMatching: nil, timeout: nil) }
            try await Task.sleep(for: .milliseconds(200))
            wait.cancel()
            await #expect {
                _ = try await wait.value
            } throws: { ($0 as? SmartCardError)?.code == .cancelled || $0 is CancellationError }
        }
    }

    @Test func cancellingAnExchangeAbortsTheCommand() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-jpeg"))
        let apdus = Mutex(0)
        let terminal = try PN532PseudoTerminal(chip: chip) { event in
            if case .apdu = event { apdus.withLock { $0 += 1 } }
        }
        terminal.start()
        defer { terminal.stop() }
        let backend = LibNFCBackend(connectionStrings: [terminal.connectionString], discover: false)
        do {
            let connection = try await backend.connect(reader: "libnfc:" + terminal.connectionString)
            var faults = ChipFaults()
            faults.latencyPerAPDU = .seconds(3)
            chip.setFaults(faults)
            let before = apdus.withLock { $0 }
            let exchange = Task { try await connection.transmit(.getChallenge()) }
            // Cancel once the chip is working on it (libnfc is then waiting for the answer).
            while apdus.withLock({ $0 }) == before { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(50))
            exchange.cancel()
            await #expect {
                _ = try await exchange.value
            } throws: { ($0 as? SmartCardError)?.code == .cancelled }
            // Usually libnfc's abort also reaches the PN532 as an ACK (PN532Emulator.Event.aborted);
            // in about one full CI run in ten it does not interrupt the wait and the exchange ends
            // at the chip's answer — still reported as cancelled. Not asserted until understood
            // (see Docs/libnfc-and-pn532.md).
            // The device is usable again: the card is found and answers.
            chip.setFaults(ChipFaults())
            let again = try await backend.connect(reader: "libnfc:" + terminal.connectionString)
            #expect(try await again.transmit(.selectApplication(EmulatedApplicationID.value)).statusWord == .success)
        }
    }

    @Test func combinedBackendListsAndRoutesLibNFCReaders() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td1-idcard"))
        try await withPN532(chip) { terminal, libnfc in
            // PC/SC may or may not run here; the libnfc reader is listed either way. PC/SC goes to
            // the test's private pcscd, never the machine's (see PCSCDHarness).
            _ = await PCSCDHarness.shared.ensureRunning()
            let combined = CombinedReaderBackend([PCSCBackend(), libnfc])
            let readers = try await combined.readers()
            #expect(readers.contains { $0.name == "libnfc:" + terminal.connectionString && $0.cardPresent })
            let info = try await combined.waitForCard(readerMatching: "libnfc:pn532_uart", timeout: .seconds(5))
            let connection = try await combined.connect(reader: info.name)
            #expect(connection.readerName == info.name)
            #expect(try await connection.transmit(.selectApplication(EmulatedApplicationID.value)).statusWord == .success)
        }
    }

    @Test func aMissingDeviceIsAClearError() async throws {
        let backend = LibNFCBackend(connectionStrings: ["pn532_uart:/dev/does-not-exist"], discover: false)
        await #expect {
            _ = try await backend.connect(reader: "libnfc:pn532_uart:/dev/does-not-exist")
        } throws: { error in
            guard let error = error as? SmartCardError else { return false }
            return error.code == .readerUnavailable && error.reason.contains("/dev/does-not-exist")
        }
        // Waiting does not poll a device that cannot be opened until the deadline.
        await #expect {
            _ = try await backend.waitForCard(readerMatching: nil, timeout: nil)
        } throws: { ($0 as? SmartCardError)?.code == .readerUnavailable }
        let listed = try await backend.readers()
        #expect(listed.count == 1 && listed[0].mute && !listed[0].cardPresent)
    }
}

/// The commands as a rig uses them: `emulate --pn532-pty` prints the connection string first,
/// `read --reader libnfc:…` reads through it.
private let gbgbridgeBinary = TestFixtures.packageRoot.appendingPathComponent(".build/debug/gbgbridge")

@Suite("gbgbridge emulate --pn532-pty and read --reader libnfc:", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: gbgbridgeBinary.path)))
struct PN532CommandLineTests {
    static let binary = gbgbridgeBinary

    @Test func emulateThenRead() async throws {
        let emulator = Process()
        emulator.executableURL = Self.binary
        emulator.currentDirectoryURL = TestFixtures.packageRoot
        emulator.arguments = ["emulate", "--pn532-pty", "--passport", "Fixtures/passports/utopia-td3-pace.json"]
        let output = Pipe()
        emulator.standardOutput = output
        try emulator.run()
        defer { emulator.terminate(); emulator.waitUntilExit() }
        // The first line, and nothing else needed: the connection string.
        var line: [UInt8] = []
        while line.last != 0x0A, let byte = try output.fileHandleForReading.read(upToCount: 1)?.first { line.append(byte) }
        let connstring = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(connstring.hasPrefix("pn532_uart:/dev/pts/"))

        let reader = Process()
        reader.executableURL = Self.binary
        reader.currentDirectoryURL = TestFixtures.packageRoot
        let traceFile = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pn532-trace-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: traceFile) }
        reader.arguments = ["read", "--reader", "libnfc:" + connstring, "--can", "112233", "--json",
                            "--trust", "Fixtures/pki/csca.cert.pem", "--timeout", "10", "--trace", traceFile.path]
        let result = Pipe()
        reader.standardOutput = result
        reader.standardError = FileHandle.nullDevice
        try reader.run()
        let data = try result.fileHandleForReading.readToEnd() ?? Data()
        reader.waitUntilExit()
        #expect(reader.terminationStatus == 0)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("ERIKSSON") || text.contains("\"valid\""), "\(text.prefix(400))")
        // The trace: a start line with the reader, one line per exchange, an end line; no CAN.
        let trace = try String(contentsOf: traceFile, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(trace.first?.contains(#""event":"start""#) == true && trace.first?.contains("libnfc:") == true)
        #expect(trace.last?.contains(#""event":"end""#) == true && trace.last?.contains(#""outcome":"read""#) == true)
        #expect(trace.contains { $0.contains(#""step":"PACE""#) } && trace.contains { $0.contains(#""step":"AA""#) })
        #expect(!trace.joined().contains("112233") && !trace.joined().contains("313132323333"))
        for line in trace { #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "\(line)") }
    }
}

/// libnfc's serial drivers wait with `select()`, which glibc aborts on for a descriptor past
/// FD_SETSIZE: a host with a thousand descriptors open (a busy `serve`) must get a typed error
/// from the reader, not lose the process.
@Suite("libnfc and a process with more than 1,024 descriptors open",
       .enabled(if: FileManager.default.isExecutableFile(atPath: gbgbridgeBinary.path)))
struct LibNFCDescriptorLimitTests {
    @Test func manyDescriptorsGiveATypedErrorNotAnAbort() async throws {
        let chip = VirtualPassportChip(passport: try TestFixtures.passport("utopia-td3-pace"))
        let terminal = try PN532PseudoTerminal(chip: chip, cardType: .typeA)
        terminal.start()
        defer { terminal.stop() }
        // The shell opens descriptors 3…1100 (inherited: not close-on-exec), then becomes the reader.
        let script = #"for i in $(seq 3 1100); do eval "exec $i</dev/null" || exit 99; done; exec "$0" "$@""#
        let outcome = try await runCommand("/bin/bash", ["-c", script, gbgbridgeBinary.path, "read", "--reader",
                                                         "libnfc:" + terminal.connectionString, "--can", "112233",
                                                         "--timeout", "3"], timeout: .seconds(60))
        #expect(outcome.status != 99, "the shell could not open the descriptors")
        #expect(!outcome.standardError.contains("FD_SETSIZE on fd_set"), "libnfc's select() aborted the process")
        #expect(![0, 6, 134].contains(outcome.status), "status \(outcome.status): \(outcome.standardError.prefix(400))")
        #expect(outcome.standardError.contains("descriptors open"), "\(outcome.standardError.prefix(400))")
    }
}

/// `emulate` finds passports, profiles and the test signer from any directory (KitData), and the
/// first line of `--pn532-pty` is the connection string whatever else it has to say.
@Suite("gbgbridge emulate from any directory", .enabled(if: FileManager.default.isExecutableFile(atPath: gbgbridgeBinary.path)))
struct EmulateKitDataTests {
    /// The first line `emulate` prints, run from `/tmp` (the emulator is stopped after it).
    static func firstLine(_ arguments: [String]) async throws -> CommandOutcome {
        try await runCommand("/usr/bin/timeout", ["3", gbgbridgeBinary.path, "emulate", "--pn532-pty"] + arguments,
                             timeout: .seconds(30), directory: URL(fileURLWithPath: "/tmp"))
    }

    @Test("a profile, a passport by name, a profile with notes: the connection string comes first",
          arguments: [["--profile", "de-passport-2023"], ["--passport", "utopia-demo"], ["--profile", "fi-passport-2024", "--latency", "5"]])
    func findsTheKitFromTmp(_ arguments: [String]) async throws {
        let outcome = try await Self.firstLine(arguments)
        let first = outcome.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("pn532_uart:/dev/pts/"), "\(outcome.standardOutput.prefix(300)) \(outcome.standardError.prefix(300))")
    }

    @Test("what cannot be found is one line that says where it was looked for", arguments: [
        (["--passport", "no-such-passport"], "no passport file or name"),
        (["--passport", "utopia-demo", "--signer-cert", "/nonexistent/ds.pem", "--signer-key", "/nonexistent/ds.key"], "no such file"),
        (["--passport", "utopia-demo", "--signer-cert", "/tmp", "--signer-key", "/tmp"], "is a directory"),
    ])
    func errorsAreOneLine(arguments: [String], says: String) async throws {
        let outcome = try await Self.firstLine(arguments)
        #expect(outcome.status == 2)
        let lines = outcome.standardError.split(separator: "\n")
        #expect(lines.count == 1 && outcome.standardError.contains(says), "\(outcome.standardError)")
        for dump in ["NSCocoaErrorDomain", "Error Domain=", "UserInfo=", "The operation could not be completed"] {
            #expect(!outcome.standardError.contains(dump))
        }
    }
}
