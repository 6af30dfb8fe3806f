// Reading benchmark: `swift run -c release gbgbridge-bench [--iterations N] [--no-pcsc]`.
// Reads a passport with a ~20 KB DG2 from the emulator, in-process and through pcscd + vpcd,
// and prints APDU counts against the theoretical minimum for the chip's maximum read size, bytes,
// wall time, and how much of it is our own code rather than the card (or the card's transport).

import Foundation
import ImageCodecs
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
let iterations = arguments.firstIndex(of: "--iterations").flatMap { Int(arguments[$0 + 1]) } ?? 20
let usePCSC = !arguments.contains("--no-pcsc")

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
    var description = try TestFixtures.description("utopia-td3-pace")
    description.activeAuthentication = nil
    description.paceMapping = mapping
    description.paceParameterId = parameterId
    description.paceCipher = cipher
    description.chipAuthentication = ca
    let passport = try EmulatedPassport(description: description, baseDirectory: TestFixtures.url("passports"),
                                        signer: try TestFixtures.documentSigner())
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
        precondition(result.accessControl == "PACE" && result.chip.status == .valid)
        own.append(seconds(result.statistics.readingTime - result.statistics.cardTime) * 1000)
        card.append(seconds(result.statistics.cardTime) * 1000)
    }
    let name = "\(result(of: mapping, parameterId, cipher)) + \(mapping == "CAM" ? "CAM" : ca)"
    print(String(format: "%@ (in-process, median of %d): reader %.2f ms, chip (emulator) %.2f ms, process CPU %.2f ms",
                 name, iterations, median(own), median(card), median(cpu)))
}
print("  (reader = our PACE and CA crypto and protocol handling, excluding the chip's time; process CPU includes the emulated chip's crypto)")
print("")
print("minimum = EF.CardAccess + SELECT + GET CHALLENGE + EXTERNAL AUTHENTICATE + ⌈file size / max read⌉ per file;")
print("read = access control and file reading; card = time inside transmit (emulator, or pcscd + vpcd + emulator);")
print("own read = read − card (secure messaging, APDU handling); verify = parsing and passive authentication after the last APDU.")
