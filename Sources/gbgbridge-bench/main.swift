// Reading benchmark: `swift run -c release gbgbridge-bench [--iterations N] [--no-pcsc]`.
// Reads a passport with a ~20 KB DG2 from the emulator, in-process and through pcscd + vpcd,
// and prints APDU counts against the theoretical minimum for the chip's maximum read size, bytes,
// wall time, and how much of it is our own code rather than the card (or the card's transport).

import Foundation
import ImageCodecs
import ImageSandbox
import MRTD
import MRTDEmulator
import SmartCard
import TestSupport

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

/// A ~20 KB JPEG face: the JPEG 2000 fixture decoded and re-encoded at the quality that lands nearest 20,000 bytes.
func twentyKilobyteFace() throws -> [UInt8] {
    let jp2 = Array(try Data(contentsOf: TestFixtures.url("faces/face-jpeg2000.jp2")))
    let decoded = try ImageCodecs.decodeJPEG2000(jp2)
    var best: [UInt8] = []
    for quality in stride(from: 95, through: 20, by: -5) {
        let jpeg = try ImageCodecs.encodeJPEG(decoded, quality: quality)
        if best.isEmpty || abs(jpeg.count - 20_000) < abs(best.count - 20_000) { best = jpeg }
    }
    return best
}

struct ChipSetup {
    let name: String
    var extendedLength: Bool
    let maxReadLength: Int
    /// Time the emulated chip takes per APDU, to model a real chip (real eMRTDs need 5–50 ms).
    var latency: Duration = .zero
    var iterations: Int? = nil
}

func makePassport(_ setup: ChipSetup, face: [UInt8]) throws -> EmulatedPassport {
    var description = try TestFixtures.description("utopia-td3-jpeg")
    let faceURL = FileManager.default.temporaryDirectory.appendingPathComponent("gbgbridge-bench-face.jpg")
    try Data(face).write(to: faceURL)
    description.faceImage = faceURL.path
    description.chip = .init(extendedLength: setup.extendedLength, maxReadLength: setup.maxReadLength, sodDigest: nil)
    return try EmulatedPassport(description: description, baseDirectory: TestFixtures.directory, signer: try TestFixtures.documentSigner())
}

/// Looking for PACE in EF.CardAccess (ICAO 9303-11 asks readers to try PACE first), BAC
/// (SELECT, GET CHALLENGE, EXTERNAL AUTHENTICATE), plus one READ BINARY per `maxRead` bytes of
/// every file: nothing can do with fewer.
func theoreticalMinimum(_ passport: EmulatedPassport, maxRead: Int) -> Int {
    1 + 3 + passport.applicationFiles.values.reduce(0) { $0 + ($1.count + maxRead - 1) / maxRead }
}

let arguments = CommandLine.arguments
/// Every value given to `--name` (the word after it), in order.
func optionValues(_ name: String) -> [String] {
    zip(arguments, arguments.dropFirst()).filter { $0.0 == name }.map(\.1)
}
let iterations = optionValues("--iterations").last.flatMap { Int($0) } ?? 20
let usePCSC = !arguments.contains("--no-pcsc")
/// `--gbgbridge PATH` (repeatable): the binaries whose peak memory is measured; by default the one
/// built beside this benchmark.
let measuredBinaries = optionValues("--gbgbridge")

let face = try twentyKilobyteFace()
let key = try AccessKey.mrz(try TestFixtures.description("utopia-td3-jpeg").mrz.lines.joined(separator: "\n"))
var trust = TrustStore()
try trust.add(path: TestFixtures.url("pki/csca.cert.pem"))
let options = ReadOptions(trustStore: trust)


let setups = [
    ChipSetup(name: "extended length", extendedLength: true, maxReadLength: 65_536),
    ChipSetup(name: "short APDUs (Le ≤ 0xE7 under SM)", extendedLength: false, maxReadLength: 256),
    ChipSetup(name: "short APDUs, reads capped at 0x80", extendedLength: false, maxReadLength: 0x80),
    ChipSetup(name: "short APDUs, 10 ms per APDU (real chip)", extendedLength: false, maxReadLength: 256,
              latency: .milliseconds(10), iterations: 3),
]

func measurePeakMemory() async throws {
    let mrz = try TestFixtures.description("utopia-td3-jpeg").mrz.lines.joined(separator: "\n")
    let profile = "de-passport-2023"
    let profileURL = TestFixtures.url("\(FieldProfiles.directory)/\(profile).json")
    let profileMRZ = try PassportDescription.load(from: profileURL).mrz.lines.joined(separator: "\n")
    let profilePassport = try EmulatedPassport.load(descriptionAt: profileURL, signer: try TestFixtures.documentSigner())
    await PeakMemory.run(binaries: measuredBinaries, chips: [
        .init(name: "BAC, short APDUs, 20 KB face", passport: try makePassport(setups[1], face: face), accessArguments: ["--mrz", mrz]),
        .init(name: "BAC, extended length, 20 KB face", passport: try makePassport(setups[0], face: face), accessArguments: ["--mrz", mrz]),
        .init(name: "the same, --json (face as base64)", passport: try makePassport(setups[0], face: face), accessArguments: ["--mrz", mrz],
              extraArguments: ["--json"]),
        .init(name: "\(profile) (PACE, CA, AA)", passport: profilePassport, accessArguments: ["--mrz", profileMRZ]),
    ])
}

// --memory-only: just the peak memory of `gbgbridge read` (needs pcscd + vpcd).
if arguments.contains("--memory-only") {
    try await measurePeakMemory()
    exit(0)
}

print("GBGBridge reading benchmark — DG2 of \(face.count) bytes, \(iterations) reads per row, release build")
print("")
func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
print("transport   chip                                    APDUs  minimum   over  file bytes  read ms  card ms  own read ms  own %  verify ms")

func row(_ transport: String, _ setup: ChipSetup, _ passport: EmulatedPassport, _ results: [PassportReadResult]) {
    guard let first = results.first else { return }
    let maxRead = setup.extendedLength ? min(setup.maxReadLength, 65_536 - 32) : min(setup.maxReadLength, 0xE7)
    let minimum = theoreticalMinimum(passport, maxRead: maxRead)
    let reading = median(results.map { seconds($0.statistics.readingTime) }) * 1000
    let card = median(results.map { seconds($0.statistics.cardTime) }) * 1000
    let own = median(results.map { seconds($0.statistics.readingTime - $0.statistics.cardTime) }) * 1000
    let verify = median(results.map { seconds($0.statistics.verificationTime) }) * 1000
    let over = Double(first.statistics.apdus - minimum) / Double(minimum) * 100
    print(pad(transport, 11) + " " + pad(setup.name, 38)
          + String(format: " %6d  %7d  %5.1f%%  %10d  %7.2f  %7.2f  %11.2f  %5.1f  %9.2f",
                   first.statistics.apdus, minimum, over, first.statistics.fileBytes, reading, card, own,
                   own / max(reading, 0.0001) * 100, verify))
}

for setup in setups {
    let passport = try makePassport(setup, face: face)
    var results: [PassportReadResult] = []
    for _ in 0..<(setup.iterations ?? iterations) {
        let chip = VirtualPassportChip(passport: passport)
        chip.setFaults(ChipFaults(latencyPerAPDU: setup.latency))
        results.append(try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: key, options: options).read())
    }
    row("in-process", setup, passport, results)
}

if usePCSC {
    for setup in setups {
        let passport = try makePassport(setup, face: face)
        let chip = VirtualPassportChip(passport: passport)
        chip.setFaults(ChipFaults(latencyPerAPDU: setup.latency))
        do {
            let results = try await PCSCDHarness.withEmulatedCard(chip) { _ in
                let backend = PCSCBackend()
                var results: [PassportReadResult] = []
                for _ in 0..<(setup.iterations ?? iterations) {
                    let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
                    let connection = try await backend.connect(reader: info.name)
                    results.append(try await PassportReader(connection: connection, accessKey: key, options: options).read())
                    await connection.disconnect()
                }
                return results
            }
            row("pcscd+vpcd", setup, passport, results)
        } catch {
            print("pcscd+vpcd  skipped: \(error)")
            break
        }
    }
}
// libnfc → emulated PN532 on a pty → chip: short APDUs only (262-byte PN53x frames), so the
// extended-length setups read like short ones here.
for setup in setups where setup.latency == .zero {
    let passport = try makePassport(setup, face: face)
    let chip = VirtualPassportChip(passport: passport)
    do {
        let terminal = try PN532PseudoTerminal(chip: chip)
        terminal.start()
        defer { terminal.stop() }
        let backend = LibNFCBackend(connectionStrings: [terminal.connectionString], discover: false)
        var results: [PassportReadResult] = []
        for _ in 0..<(setup.iterations ?? iterations) {
            let connection = try await backend.connect(reader: LibNFCBackend.readerPrefix + terminal.connectionString)
            results.append(try await PassportReader(connection: connection, accessKey: key, options: options).read())
            await connection.disconnect()
        }
        var shortSetup = setup
        shortSetup.extendedLength = false
        row("libnfc+pty", shortSetup, passport, results)
    } catch {
        print("libnfc+pty  skipped: \(error)")
        break
    }
}

// Quirky chips (../shared/field-profiles.md): a PACE passport with the 20 KB face, short APDUs,
// opened with the MRZ, without CA and AA (so the APDUs are access control and files only). The
// minimum is what that chip's limits force: PACE (EF.CardAccess, MSE, 4 × GA, SELECT) plus
// ⌈size / max read⌉ per file, plus a SELECT per file (and for EF.CardAccess) where the chip has no
// short EF identifiers. What is over it is what learning the quirk cost.
let quirkSetups = [Quirk.none] + Quirk.all.filter {
    ["no SFI (6A82)", "no SFI (6986)", "plain errors, counted in the SSC", "plain errors, not counted in the SSC", "Le = 00 refused",
     "READ BINARY limit A0 (6700)", "READ BINARY limit A0 (6CA0)", "SELECT requires Le, no SFI", "MSE:Set AT requires the parameter id",
     "MSE:Set AT refuses the parameter id", "all but SELECT MF"].contains($0.name)
}

/// The PACE fixture with the 20 KB face, short APDUs, and the quirk's switches.
func quirkyPassport(_ quirk: Quirk, face: [UInt8], tagLoss: (afterAPDUs: Int, returnAfterMilliseconds: Int)? = nil) throws -> EmulatedPassport {
    var description = try quirk.description("utopia-td3-pace", tagLoss: tagLoss)
    let faceURL = FileManager.default.temporaryDirectory.appendingPathComponent("gbgbridge-bench-face.jpg")
    try Data(face).write(to: faceURL)
    description.faceImage = faceURL.path
    description.chip = .init(extendedLength: false, maxReadLength: quirk.maxReadLength ?? 256, sodDigest: nil)
    return try EmulatedPassport(description: description, baseDirectory: TestFixtures.directory, signer: try TestFixtures.documentSigner())
}

let paceKey = try AccessKey.mrz(try TestFixtures.description("utopia-td3-pace").mrz.lines.joined(separator: "\n"))
let filesOnly = ReadOptions(verifyChip: false, verifyActive: false, trustStore: trust)
print("")
print("Quirky chips (PACE with the MRZ, short APDUs, no CA/AA; in-process, \(iterations) reads per row)")
print("chip                                   APDUs  minimum  over  new sessions  access  read ms")
for setup in quirkSetups {
    let passport = try quirkyPassport(setup, face: face)
    let maxRead = min(setup.maxReadLength ?? 256, 0xDF)
    let noSFI = passport.quirks.noShortFileIdentifier != nil
    let files = passport.applicationFiles.values.reduce(0) { $0 + ($1.count + maxRead - 1) / maxRead }
    let minimum = (noSFI ? 2 : 1) + 6 + files + (noSFI ? passport.applicationFiles.count : 0)
    var results: [PassportReadResult] = []
    for _ in 0..<iterations {
        let chip = VirtualPassportChip(passport: passport)
        results.append(try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: paceKey, options: filesOnly).read())
    }
    let first = results[0]
    // trap: a benchmark that reads wrongly must stop rather than print figures for a broken read.
    precondition(first.passiveOutcome.status == .valid, "\(setup.name): \(first.passiveOutcome.detail)")
    print(pad(setup.name, 38) + String(format: " %5d  %7d  %3d  %12d  %6@  %7.2f", first.statistics.apdus, minimum,
                                       first.statistics.apdus - minimum, first.statistics.reauthentications, first.accessControl,
                                       median(results.map { seconds($0.statistics.readingTime) }) * 1000))
}

// Tag loss: the card leaves the field half-way through DG2 and comes back. "waiting" runs from
// the loss to the connection that held (pcscd notices a vpcd card coming and going only when it
// polls, every 400 ms); "to finish" from there to the last APDU: re-opening the chip (PACE
// again), re-selecting DG2 and reading the rest.
print("")
print("Tag loss half-way through DG2 (PACE, short APDUs, 20 KB face)")
print("transport    back after  reconnections  APDUs  (undisturbed)  waiting ms  to finish ms  total ms")
do {
    let setup = quirkSetups[0]
    let plain = try quirkyPassport(setup, face: face)
    let undisturbed = try await PassportReader(connection: EmulatedCardConnection(chip: VirtualPassportChip(passport: plain)),
                                               accessKey: paceKey, options: filesOnly).read()
    let half = undisturbed.statistics.apdus - ((plain.applicationFiles[0x0102]?.count ?? 0) / 0xDF) / 2
    final class Moments: @unchecked Sendable {
        var started: ContinuousClock.Instant?
        var lost: ContinuousClock.Instant?
        var back: ContinuousClock.Instant?
        var done: ContinuousClock.Instant?
    }
    func measure(_ transport: String, returnAfter: Int, read: (EmulatedPassport, Moments) async throws -> PassportReadResult) async throws {
        let passport = try quirkyPassport(setup, face: face, tagLoss: (half, returnAfter))
        let moments = Moments()
        let result = try await read(passport, moments)
        guard let started = moments.started, let lost = moments.lost, let back = moments.back, let finished = moments.done else {
            print(pad(transport, 12) + " the card did not leave")
            return
        }
        // trap: a benchmark that reads wrongly must stop rather than print figures for a broken read.
        precondition(result.passiveOutcome.status == .valid)
        print(pad(transport, 12) + String(format: " %7d ms  %13d  %5d  %13d  %10.1f  %11.1f  %8.1f", returnAfter, result.statistics.reconnections,
                                          result.statistics.apdus, undisturbed.statistics.apdus, seconds(back - lost) * 1000,
                                          seconds(finished - back) * 1000, seconds(finished - started) * 1000))
    }
    @Sendable func progress(_ moments: Moments) -> PassportReader.ProgressHandler {
        { update in
            if moments.started == nil { moments.started = .now }
            if update.phase == .verifying, moments.done == nil { moments.done = .now }
            if update.reason == ReadProgress.cardRemovedReason { moments.lost = .now }
            // The last time the card was found again (a back end that polls may hand out a
            // connection before the card is steady: those attempts count as waiting).
            if update.phase == .cardDetected, moments.lost != nil { moments.back = .now }
        }
    }
    for returnAfter in [0, 500] {
        try await measure("in-process", returnAfter: returnAfter) { passport, moments in
            let backend = EmulatedReaderBackend(chip: VirtualPassportChip(passport: passport))
            let name = backend.readerName
            return try await PassportReader(connection: try await backend.connect(reader: name), accessKey: paceKey, options: filesOnly,
                                            progress: progress(moments),
                                            reconnect: { try await backend.reconnect(reader: name, until: .now + .seconds(10)) }).read()
        }
    }
    if usePCSC {
        for returnAfter in [0, 500] {
            do {
                try await measure("pcscd+vpcd", returnAfter: returnAfter) { passport, moments in
                    let handler = progress(moments)
                    return try await PCSCDHarness.withEmulatedCard(VirtualPassportChip(passport: passport)) { _ in
                        let backend = PCSCBackend()
                        let info = try await backend.waitForCard(readerMatching: PCSCDHarness.vpcdReaderName, timeout: .seconds(10))
                        let reader = PassportReader(connection: try await backend.connect(reader: info.name), accessKey: paceKey, options: filesOnly,
                                                    progress: handler,
                                                    reconnect: { try await backend.reconnect(reader: info.name, until: .now + .seconds(10)) })
                        let result = try await reader.read()
                        await reader.connection.disconnect()
                        return result
                    }
                }
            } catch {
                print("pcscd+vpcd   skipped: \(error)")
                break
            }
        }
    }
}

func result(of mapping: String, _ parameterId: Int, _ cipher: String) -> String {
    "PACE-\(parameterId <= 2 ? "DH" : "ECDH")-\(mapping)-\(cipher) on \(PACEDomain.standardized(parameterId).map { "\($0)" } ?? "?")"
}

// PACE + Chip Authentication: our own time (crypto and protocol) against the card's. The first
// row is the bar (PACE-GM + CA on brainpoolP256r1 under 50 ms of our CPU); the others show what
// the other mappings and groups cost.
print("")
for (mapping, parameterId, cipher, ca) in [("GM", 13, "AES-128", "ECDH-brainpoolP256r1-AES-128"), ("IM", 13, "AES-128", "ECDH-brainpoolP256r1-AES-128"),
                                           ("CAM", 13, "AES-128", "ECDH-brainpoolP256r1-AES-128"), ("GM", 18, "AES-256", "ECDH-P521-AES-256"),
                                           ("GM", 2, "AES-128", "DH-MODP2048/256-AES-128"), ("IM", 2, "AES-256", "DH-MODP2048/256-3DES")] {
    let (passport, description) = try TestFixtures.pacePassport(mapping: mapping, parameterId: parameterId, cipher: cipher,
                                                                 chipAuthentication: ca)
    let paceKey = try AccessKey.mrz(description.mrz.lines.joined(separator: "\n"))
    var own: [Double] = []
    var card: [Double] = []
    var cpu: [Double] = []
    for _ in 0..<iterations {
        let chip = VirtualPassportChip(passport: passport)
        let startCPU = clock()
        let result = try await PassportReader(connection: EmulatedCardConnection(chip: chip), accessKey: paceKey,
                                              options: ReadOptions(dataGroups: [14], verifyPassive: false, verifyActive: false, trustStore: trust)).read()
        cpu.append(Double(clock() - startCPU) / Double(CLOCKS_PER_SEC) * 1000)
        // trap: a benchmark that reads wrongly must stop rather than print figures for a broken read.
        precondition(result.accessControl == "PACE" && result.chip.status == .valid)
        own.append(seconds(result.statistics.readingTime - result.statistics.cardTime) * 1000)
        card.append(seconds(result.statistics.cardTime) * 1000)
    }
    let name = "\(result(of: mapping, parameterId, cipher)) + \(mapping == "CAM" ? "CAM" : ca)"
    print(String(format: "%@ (in-process, median of %d): reader %.2f ms, chip (emulator) %.2f ms, process CPU %.2f ms",
                 name, iterations, median(own), median(card), median(cpu)))
}
print("  (reader = our PACE and CA crypto and protocol handling, excluding the chip's time; process CPU includes the emulated chip's crypto)")

// Field profiles: what a full read (all files, CA/PACE-CAM and AA where the document has them)
// costs on a real contactless link, by the ISO 14443 timing model (ContactlessTiming): bytes on
// air, frame delays and chaining at 106 and 424 kbit/s, plus an assumed chip time per APDU.
let chipTimePerAPDU = Duration.milliseconds(optionValues("--chip-ms").last.flatMap { Int($0) } ?? 5)
print("")
print("Field profiles (Fixtures/passports/field): a full read with the MRZ, modelled on a real link — ISO 14443 frames of 256 bytes,")
print("\(chipTimePerAPDU.milliseconds) ms of chip time per APDU assumed (--chip-ms N); air = bytes on air and frame delays only")
print("profile            access  chip auth   APDUs  bytes out  bytes in  air 106 ms  air 424 ms  total 106 ms  total 424 ms")
for (name, _) in FieldProfiles.all {
    let url = TestFixtures.url("\(FieldProfiles.directory)/\(name).json")
    let description = try PassportDescription.load(from: url)
    let chip = VirtualPassportChip(passport: try EmulatedPassport.load(descriptionAt: url, signer: try TestFixtures.documentSigner()))
    let connection = RecordingConnection(EmulatedCardConnection(chip: chip))
    let result = try await PassportReader(connection: connection, accessKey: try AccessKey.mrz(description.mrz.lines.joined(separator: "\n")),
                                          options: options).read()
    // trap: a benchmark that reads wrongly must stop rather than print figures for a broken read.
    precondition(result.passiveOutcome.status == .valid, "\(name): \(result.passiveOutcome.detail)")
    let exchanges = connection.recorded.map { ($0.command.count, $0.response.count) }
    func total(_ timing: ContactlessTiming) -> Double {
        exchanges.reduce(Duration.zero) { $0 + timing.exchangeTime(commandBytes: $1.0, responseBytes: $1.1) }.milliseconds
    }
    let usesCAM = description.paceMapping?.uppercased().contains("CAM") == true
    let authenticity = [usesCAM ? "CAM" : nil, description.chipAuthentication != nil ? "CA" : nil,
                        result.active.status == .valid ? "AA" : nil].compactMap { $0 }.joined(separator: "+")
    // trap: a benchmark that reads wrongly must stop rather than print figures for a broken read.
    precondition(result.chip.status == (usesCAM || description.chipAuthentication != nil ? .valid : .notSupported), "\(name): \(result.chip.detail)")
    print(pad(name, 18), pad(result.accessControl, 7), pad(authenticity.isEmpty ? "none" : authenticity, 10),
          String(format: "%6d  %9d  %8d  %10.0f  %10.0f  %12.0f  %12.0f", exchanges.count, exchanges.reduce(0) { $0 + $1.0 },
                 exchanges.reduce(0) { $0 + $1.1 }, total(ContactlessTiming(bitRate: 106)), total(ContactlessTiming(bitRate: 424)),
                 total(ContactlessTiming(bitRate: 106, chipTime: chipTimePerAPDU)), total(ContactlessTiming(bitRate: 424, chipTime: chipTimePerAPDU))))
}

if usePCSC {
    try await measurePeakMemory()
}

// The confined image decoder (issue 43): what a child costs. A full read with a face decodes it once
// in a child, so this is its whole cost on a read's wall time (beside the read rows above).
print("")
print("The image decoder child (gbgbridge-decode: spawn, confine, decode, answer), \(iterations * 10) runs each")
print("image                         median ms   p95 ms")
for (name, image) in [("20 KB JPEG face (passed on)", face),
                      ("JPEG 2000 face (re-encoded)", Array(try Data(contentsOf: TestFixtures.url("faces/face-jpeg2000.jp2"))))] {
    var times: [Double] = []
    for _ in 0..<(iterations * 10) {
        let started = ContinuousClock.now
        _ = try ImageSandbox.browserJPEG(image)
        times.append((ContinuousClock.now - started).milliseconds)
    }
    times.sort()
    print(pad(name, 30) + String(format: "%9.1f  %7.1f", times[times.count / 2], times[min(times.count - 1, times.count * 95 / 100)]))
}

print("")
print("minimum = EF.CardAccess + SELECT + GET CHALLENGE + EXTERNAL AUTHENTICATE + ⌈file size / max read⌉ per file;")
print("read = access control and file reading; card = time inside transmit (emulator, or pcscd + vpcd + emulator);")
print("own read = read − card (secure messaging, APDU handling); verify = parsing and passive authentication after the last APDU.")
