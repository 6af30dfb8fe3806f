import TextSanitizing
import BoundedFiles
import ChipRead
import ArgumentParser
import CGBGBridgeCLI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Glibc
import MRTD
import SmartCard
import Synchronization

/// Options shared by commands that take trust anchors.
package struct TrustOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("CSCA certificate (PEM/DER), directory of them, ICAO master list (.ml) or CRL; repeatable.",
                                             valueName: "path"))
    package var trust: [String] = []

    package init() {}

    package init(paths: [String]) { trust = paths }

    package func load() throws -> TrustStore {
        var store = TrustStore()
        for path in trust {
            do {
                try store.add(path: URL(fileURLWithPath: path))
            } catch {
                printError("gbgbridge: \(error.reason)")
                throw ExitCode(ReadExit.badArguments)
            }
        }
        return store
    }
}

/// `gbgbridge read`: read and verify a passport chip.
package struct ReadCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Read an ePassport / eID chip and verify it.",
        discussion: """
            Waits for a card, opens it with PACE when the chip offers it (MRZ or CAN) or BAC, \
            reads EF.COM, EF.SOD and the data groups, runs Chip Authentication (DG14, \
            EF.CardSecurity or PACE-CAM) and Active Authentication (DG15) when the chip offers them, and passive \
            authentication against --trust anchors. With --json prints exactly the nfc.read \
            success data object.

            A card that leaves the reader during the read is waited for (up to --timeout, within \
            --read-timeout) and the read goes on where it stopped. The chip is untrusted: a file \
            larger than its ceiling, with a lying or indefinite length, is refused and named under \
            parseErrors; a data group EF.SOD does not cover is withheld (withheldDataGroups) and \
            makes passive authentication invalid. --trace FILE records every APDU exchange as JSON \
            lines for a bug report: never the MRZ, CAN, keys, nonces or decrypted contents.

            With --terminal-certificates and --terminal-key, Terminal Authentication (Extended \
            Access Control) opens DG3 (fingerprints) and DG4 (iris) on chips that protect them; \
            a refused TA is reported (verification.terminal) and does not fail the read.

            With --mrz-from-camera nobody types the MRZ: frames from the camera (--camera, or \
            the first that works) are read until two agree on an access key whose check \
            digits hold (at most --mrz-timeout seconds, a progress line on a terminal; at the \
            end the keys the frames offered), then the chip is read. With --mrz-from-image FILE \
            the MRZ is read from a photo or scan (PNG or JPEG, decoded in the confined child). \
            Either way the photo gives key candidates, not an identity: the chip is tried with \
            each in turn (at most 3, within --read-timeout) and decides which is right; the \
            JSON says which opened it (accessKeyFrom: {source: "photo", candidate, tried}), and \
            the MRZ shown is the chip's DG1, verified — never the photo's. No candidate opening \
            the chip is ACCESS_DENIED (exit 3).

            Exit status: 0 read (verified, or not verifiable: untrusted or no EF.SOD), \
            2 bad arguments, 3 access denied (wrong MRZ/CAN), 4 no card, or the chip stopped answering \
            (--timeout, --read-timeout), \
            5 communication failure or card removed, 6 verification failed, \
            7 no MRZ read from the camera in time (--mrz-from-camera), or no camera, or no access \
            key read from the photo (--mrz-from-image).
            """
    )

    @Option(name: .long, help: "Use the first reader whose name contains this text; libnfc:<connstring> (e.g. libnfc:pn532_uart:/dev/ttyUSB0) uses that libnfc device, a bare libnfc: the devices libnfc finds.")
    var reader: String?

    @Option(name: .long, help: "The full MRZ (lines separated by newlines, or run together).")
    var mrz: String?

    @Option(name: .long, help: "Document number (with --birth-date and --expiry-date).")
    var documentNumber: String?

    @Option(name: .long, help: "Date of birth, YYMMDD.")
    var birthDate: String?

    @Option(name: .long, help: "Date of expiry, YYMMDD.")
    var expiryDate: String?

    @Option(name: .long, help: "Card access number printed on the card (opens it with PACE).")
    var can: String?

    @Flag(name: .long, help: "Read the MRZ from the document in front of the camera, then the chip (no typing).")
    var mrzFromCamera = false

    @Option(name: .long, help: ArgumentHelp("With --mrz-from-camera: the camera, /dev/videoN or a /dev/v4l/by-id/… link (default: the first that works).", valueName: "DEVICE"))
    var camera: String?

    @Option(name: .long, help: ArgumentHelp("With --mrz-from-camera: seconds to look for a readable MRZ.", valueName: "seconds"))
    var mrzTimeout: Double = 30

    @Option(name: .long, help: ArgumentHelp("Read the MRZ from this photo or scan of the data page (PNG or JPEG), then the chip: the keys read from it are tried in turn (at most 3) and the chip decides.", valueName: "FILE"))
    var mrzFromImage: String?

    @Flag(name: .long, help: "Use PACE only (fail rather than fall back to BAC).")
    var paceOnly = false

    @Flag(name: .long, help: "Use BAC only (do not look for PACE).")
    var bacOnly = false

    @OptionGroup var trustOptions: TrustOptions

    @OptionGroup var terminalOptions: TerminalOptions

    @Option(name: .long, help: "Seconds to wait for a card.")
    var timeout: Double = 30

    @Option(name: .long, help: ArgumentHelp("The read's time limit once the card is there (waiting for a card that left the reader included); past it the exchange in flight is abandoned and the read fails with exit status 4 — unless the chip is still sending file data at 256 bytes a second or more, when it goes on up to three times the limit.", valueName: "seconds"))
    var readTimeout: Double = 60

    @Flag(name: .long, help: "Print the nfc.read data object as JSON.")
    var json = false

    @Option(name: .long, help: "Save the face image as JPEG to this file.")
    var photo: String?

    @Option(name: .long, help: "Save every file read as <name>.bin (EF_COM.bin, EF_SOD.bin, DG1.bin …) in this directory.")
    var dump: String?

    @Option(name: .long, help: "Data groups to read, e.g. DG1,DG2,DG11 (default: all listed by the chip).")
    var dataGroups: String?

    @Option(name: .long, help: ArgumentHelp("Record every APDU exchange in this file, one JSON object per line (time, step, file and offset, command, response, status word, protected). Holds no access key, session key, nonce or decrypted content: safe to attach to a report.", valueName: "file"))
    var trace: String?

    @Option(name: .long, help: ArgumentHelp("Write the chip evidence (every file as the chip returned it, the checks run, the Active Authentication challenge and signature) as JSON to this file, for a backend to verify (gbgbridge verify --evidence; Docs/server-side-verification.md).", valueName: "file"))
    var evidence: String?

    @Option(name: .long, help: ArgumentHelp("The 8-byte Active Authentication challenge, base64 (a backend's nonce; default: random).", valueName: "base64"))
    var challenge: String?

    package func validate() throws {
        let fields = [documentNumber, birthDate, expiryDate].compactMap { $0 }
        let ways = [mrz != nil, !fields.isEmpty, can != nil, mrzFromCamera, mrzFromImage != nil].filter { $0 }.count
        guard ways == 1 else {
            throw ValidationError("give the access key as --mrz TEXT, or --document-number with --birth-date and --expiry-date, or --can NNNNNN, or --mrz-from-camera, or --mrz-from-image FILE")
        }
        if camera != nil && !mrzFromCamera { throw ValidationError("--camera goes with --mrz-from-camera") }
        guard mrzTimeout >= 1, mrzTimeout <= 600 else { throw ValidationError("--mrz-timeout must be between 1 and 600 seconds") }
        if let camera, !camera.hasPrefix("/dev/") { throw ValidationError("--camera must be a device path under /dev, e.g. /dev/video0") }
        if mrzFromCamera, Self.cameraMRZ == nil {
            throw ValidationError("--mrz-from-camera runs in the full gbgbridge binary (this one reads chips only)")
        }
        if !fields.isEmpty, fields.count != 3 {
            throw ValidationError("--document-number, --birth-date and --expiry-date go together")
        }
        if paceOnly && bacOnly { throw ValidationError("--pace-only and --bac-only exclude each other") }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 seconds") }
        guard readTimeout >= 1, readTimeout <= 3600 else { throw ValidationError("--read-timeout must be between 1 and 3600 seconds") }
        for (option, path) in [("--photo", photo), ("--trace", trace), ("--evidence", evidence)] {
            // The evidence and the photo are written after the dump, so they may go into the
            // directory --dump creates (e.g. --dump DIR --photo DIR/face.jpg).
            if let path, let dump, option != "--trace", path.hasPrefix(dump.hasSuffix("/") ? dump : dump + "/") { continue }
            if let path, let problem = BoundedFile.outputProblem(path, option: option) { throw ValidationError(problem) }
        }
        if let dump, let problem = BoundedFile.outputProblem(dump, option: "--dump", directory: true) { throw ValidationError(problem) }
        if !mrzFromCamera, mrzFromImage == nil { _ = try accessKey() }
        _ = try requestedDataGroups()
        _ = try challengeBytes()
    }

    /// --challenge decoded: exactly 8 bytes.
    func challengeBytes() throws -> [UInt8]? {
        try challenge.map(Self.decodeChallenge)
    }

    package static func decodeChallenge(_ text: String) throws -> [UInt8] {
        guard let bytes = ActiveAuthentication.challenge(base64: text) else {
            throw ValidationError("--challenge must be base64 of exactly 8 bytes (12 characters, e.g. AAECAwQFBgc=)")
        }
        return bytes
    }

    func accessKey() throws -> AccessKey {
        do {
            if let mrz { return try AccessKey.mrz(mrz) }
            if let can { return try AccessKey.cardAccessNumber(can) }
            return try AccessKey.fields(documentNumber: documentNumber ?? "", dateOfBirth: birthDate ?? "", dateOfExpiry: expiryDate ?? "")
        } catch {
            throw ValidationError(Self.optionNames(in: error.reason))
        }
    }

    /// An access-key reason with the API's field names replaced by this command's options.
    static func optionNames(in reason: String) -> String {
        let names = [("documentNumber", "--document-number"), ("dateOfBirth", "--birth-date"), ("dateOfExpiry", "--expiry-date"),
                     ("can ", "--can "), ("the MRZ", "--mrz: the MRZ")]
        for (field, option) in names where reason.hasPrefix(field) {
            return option + reason.dropFirst(field.count)
        }
        return reason
    }

    func requestedDataGroups() throws -> [Int]? {
        guard let dataGroups else { return nil }
        var numbers: [Int] = []
        for name in dataGroups.split(separator: ",") {
            guard let file = LDSFile(name: name.trimmingWhitespace()), let n = file.dataGroupNumber else {
                throw ValidationError("'\(name)' is not a data group (DG1 … DG16)")
            }
            numbers.append(n)
        }
        return numbers
    }

    /// How `--mrz-from-camera` gets its MRZ: installed by the full `gbgbridge` binary (cameras
    /// and the MRZ reader are not in the lean reader): the camera (nil: the first that works),
    /// the time allowed, a progress callback; returns the MRZ text, or throws a message.
    package nonisolated(unsafe) static var cameraMRZ: (@Sendable (String?, Duration, @escaping @Sendable (String) -> Void) async throws -> [AccessKey])?

    package func run() async throws {
        CGBGBridgeCLI_line_buffer_stdout()
        let key: AccessKey
        // Keys read from a photo, for the chip to confirm (issue 50): tried in turn.
        var candidates: [AccessKey] = []
        if mrzFromCamera, let cameraMRZ = Self.cameraMRZ {
            let terminal = isatty(STDERR_FILENO) == 1
            do {
                candidates = try await cameraMRZ(camera, .milliseconds(Int(mrzTimeout * 1000))) { line in
                    if terminal { writeStandardError("\r\u{1B}[K" + line) }
                }
                if terminal { writeStandardError("\r\u{1B}[K") }
            } catch {
                if terminal { writeStandardError("\r\u{1B}[K") }
                printError("gbgbridge read: \(error)")
                throw ExitCode(ReadExit.noMRZ)
            }
            guard let first = candidates.first else {
                printError("gbgbridge read: no access key was read from the camera")
                throw ExitCode(ReadExit.noMRZ)
            }
            key = first
            printError("gbgbridge read: \(candidates.count) access key\(candidates.count == 1 ? "" : "s") read from the camera; now the chip decides")
        } else if let mrzFromImage {
            candidates = try PhotoKeys.read(mrzFromImage)
            guard let first = candidates.first else { throw ExitCode(ReadExit.noMRZ) }
            key = first
            printError("gbgbridge read: \(candidates.count) access key\(candidates.count == 1 ? "" : "s") read from the photo; now the chip decides")
        } else {
            key = try accessKey()
        }
        let trustStore = try trustOptions.load()
        let apduTrace: APDUTrace?
        if let trace {
            do {
                apduTrace = try APDUTrace(url: URL(fileURLWithPath: trace))
            } catch {
                printError("gbgbridge read: \(error.reason)")
                throw ExitCode(ReadExit.badArguments)
            }
        } else {
            apduTrace = nil
        }
        defer {
            apduTrace?.close()
            if let failure = apduTrace?.writeFailure { printError("gbgbridge read: the trace is incomplete: \(failure)") }
        }
        var options = ReadOptions(dataGroups: try requestedDataGroups(), trustStore: trustStore,
                                  accessControl: paceOnly ? .paceOnly : bacOnly ? .bacOnly : .automatic, trace: apduTrace)
        options.activeAuthenticationChallenge = try challengeBytes()
        options.readTimeout = .milliseconds(Int(readTimeout * 1000))
        do {
            options.terminal = try terminalOptions.load()
        } catch {
            printError("gbgbridge read: \(error)")
            throw ExitCode(ReadExit.badArguments)
        }
        let bar = ReadProgressBar(enabled: isatty(STDERR_FILENO) == 1)
        // A libnfc device is opened only when asked for: `libnfc:<connstring>` opens exactly that
        // one, a bare `libnfc:` the devices libnfc finds (libnfc.conf, LIBNFC_DEVICE, USB).
        let backend: any CardReaderBackend
        if let reader, LibNFCBackend.handles(readerName: reader) {
            let connstring = LibNFCBackend.connectionString(fromReaderName: reader)
            backend = LibNFCBackend(connectionStrings: connstring.isEmpty ? [] : [connstring], discover: connstring.isEmpty)
        } else {
            backend = PCSCBackend()
        }

        // A card that leaves the field mid-read is waited for (up to --timeout) and the read goes on.
        let job = ReadJob(reader: reader, accessKey: key, options: options, cardTimeout: .milliseconds(Int(timeout * 1000)))
        let connected = { @Sendable (card: ReaderInfo, connection: any CardConnection) -> Void in
            apduTrace?.note("start", ["tool": "gbgbridge \(GBGBridgeVersion.current)", "reader": card.name, "backend": card.backend,
                                      "atr": Formatting.hex(connection.atr)])
        }
        let outcome: ReadJob.Outcome
        var trial: ReadJob.KeyTrial?
        if candidates.isEmpty {
            outcome = await job.run(on: backend, progress: { bar.update($0) }, connected: connected)
        } else {
            let (ended, keys) = await job.run(on: backend, keys: candidates, progress: { bar.update($0) }, connected: connected)
            (outcome, trial) = (ended, keys)
        }
        bar.finish()
        let result: PassportReadResult
        let readerName: String
        switch outcome {
        case .noCard(let error):
            apduTrace?.note("end", ["outcome": "\(error.code)", "reason": error.reason])
            try fail(error.reason, code: error.code, exit: ReadExit.status(for: error))
        case .failed(let error, _, _, _):
            apduTrace?.note("end", ["outcome": error.code.rawValue, "reason": error.reason])
            if let trial, error.code == .accessDenied {
                try fail("the chip refused every key read from the photo: tried \(trial.tried) keys read from the photo; give the MRZ or the CAN",
                         code: error.code.rawValue, exit: ReadExit.accessDenied)
            }
            try fail(error.reason, code: error.code.rawValue, exit: ReadExit.status(for: error))
        case .read(let read, let reader, _):
            apduTrace?.note("end", ["outcome": "read", "apdus": String(read.statistics.apdus),
                                    "reconnections": String(read.statistics.reconnections)])
            result = read
            readerName = reader
        }

        var report = ReadReport(result)
        if let trial, let used = trial.used { report.accessKeyFrom = ReadReport.AccessKeyFrom(source: "photo", candidate: used + 1, tried: trial.tried) }
        do {
            if let dump { try ReadOutputs.write(dump: dump, result.files) }
            if let evidence { try ReadOutputs.write(evidenceOf: result, to: evidence) }
            if let photo { try ReadOutputs.write(photoOf: report, to: photo) }
        } catch {
            printError("gbgbridge read: \(error)")
            throw ExitCode(ReadExit.communication)
        }
        if json {
            print(String(decoding: try report.jsonData(pretty: true), as: UTF8.self))
        } else {
            ReadSummary.lines(report, result, reader: readerName).forEach { print($0) }
        }
        let failed = [report.verification.passive.status, report.verification.chip.status, report.verification.active.status].contains(.invalid)
        if failed { throw ExitCode(ReadExit.verificationFailed) }
    }

    func fail(_ message: String, code: CustomStringConvertible, exit: Int32) throws -> Never {
        if json {
            printJSON(["error": ["code": "\(code)", "message": message]] as [String: [String: String]])
        }
        printError("gbgbridge read: \(message)")
        throw ExitCode(exit)
    }
}
