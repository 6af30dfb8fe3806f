import ArgumentParser
import BoundedFiles
import CVCertificates
import CGBGBridgeCLI
import Foundation
import GBGBridge
import GBGBridgeHost
import GBGBridgeRead
import MdocEmulator
import MRTD
import MRTDEmulator
import Synchronization

/// `gbgbridge emulate`: a virtual passport in a real pcscd.
struct EmulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulate",
        abstract: "Put a virtual passport into pcscd (vpcd) or behind an emulated PN532 on a pty.",
        discussion: """
            Connects to vpcd (Debian package vsmartcard-vpcd) as the card of reader \
            'Virtual PCD 00 00' (port 35963) or 'Virtual PCD 00 01' (port 35964) and answers \
            like an ICAO 9303 chip: BAC and/or PACE (GM, IM or CAM, MRZ or CAN), secure \
            messaging, Chip and Active Authentication, as the passport description says \
            (access, paceMapping, paceParameterId, paceCipher, paceExplicitParameters, can, \
            chipAuthentication, chipAuthenticationKeyIn, activeAuthentication, clone; see \
            Docs/pace-ca-aa.md). Runs until interrupted; reconnects when pcscd restarts. SIGUSR1 takes the card out of the reader, \
            SIGUSR2 puts it back. The chip's EF.SOD is signed with the test document \
            signer in pki/ (test only) unless --signer-cert/--signer-key are given.

            Passports, profiles and the test PKI are looked for in $GBGBRIDGE_DATA, \
            ./Fixtures (a checkout), the checkout above the executable, then \
            /usr/share/gbgbridge (the Debian package), so emulate works from any directory.

            With --pn532-pty the chip sits in the field of an emulated PN532 on a \
            pseudo-terminal instead, for libnfc: the first line of output is the connection \
            string (pn532_uart:/dev/pts/N) to give libnfc, e.g. \
            gbgbridge read --reader libnfc:pn532_uart:/dev/pts/N. The emulated PN532 carries \
            at most 262 bytes per exchange, like the real one.

            An mdoc holder (--mdoc FILE or --mdoc-profile utopia-mdl|utopia-pid) is a phone wallet at the reader instead: an NFC Forum Type 4 Tag with the ISO 18013-5 engagement (--handover static|negotiated), then the NFC data transfer with session encryption and device authentication (--device-auth signature|mac) — or, with --transport ble, the session over BLE as the phone wallets do (mdoc peripheral server mode through BlueZ, --bluetooth-adapter to pick one; --handover qr shows a QR code's text instead of the NFC engagement, --qr-file FILE writes it there, a new one after each session), its MSO signed by the test document signer in mdoc/; --hostile takes the mdoc modes (\(MdocHostileMode.allCases.map(\.rawValue).joined(separator: ", "))).

            Field profiles (--profile NAME) are the chip configurations of 22 real documents \
            (access control, curve, cipher, CA / PACE-CAM / AA, extended length, LDS version), \
            with test data signed by the test PKI. --latency and --bit-rate make the chip answer \
            as slowly as a real one: its own time per APDU plus the bytes on air at an ISO 14443 \
            bit rate (Docs/smartcard-and-emulator.md, "Timing model").

            Field behaviours (Docs/smartcard-and-emulator.md): each flag under FIELD BEHAVIOURS \
            reproduces one thing real chips do (no short EF identifiers, errors without secure \
            messaging, SELECT and MSE forms, small read limits, tag loss …); they add to the \
            description's "quirks" object. Example: --no-short-file-identifier 6A82 --plain-errors \
            --tag-loss-after-apdus 20.

            Hostile cards (--hostile MODE, repeatable): the chip opens correctly and then attacks \
            the reader — lying or indefinite lengths, endless files, 6700/6Cxx ladders, endless \
            GET RESPONSE, a stall after access control or at an APDU, oversized DH/RSA/EC keys, an \
            EF.SOD that leaves data groups uncovered, reads past the end of a file answered with a \
            bare or unauthenticated 6282 or 6700, broken data groups. A reader must end each \
            within its bounds (Docs/hostile-input.md).
            """
    )

    @Option(name: .long, help: "A passport description: a JSON file, or a name in passports/ (utopia-td3-jpeg, utopia-demo, utopia-td3-pace …).")
    var passport: String?

    @Option(name: .long, help: ArgumentHelp(
        "A field profile: the chip configuration of a real document (passports/field/NAME.json). One of: \(FieldProfiles.names.joined(separator: ", ")).",
        valueName: "name"))
    var profile: String?

    @Option(name: .long, help: ArgumentHelp("An mdoc holder instead of a passport: a document profile (JSON, Fixtures/mdoc/README.md).", valueName: "file"))
    var mdoc: String?

    @Option(name: .customLong("mdoc-profile"), help: ArgumentHelp("An mdoc holder with a profile from mdoc/: \(MdocProfiles.names.joined(separator: ", ")).", valueName: "name"))
    var mdocProfile: String?

    @Option(name: .long, help: ArgumentHelp("With --mdoc: the engagement the holder offers, static or negotiated (TNEP), or qr (a QR code's text, with --transport ble; no vpcd).", valueName: "mode"))
    var handover = "static"

    @Option(name: .customLong("qr-file"), help: ArgumentHelp("With --handover qr: write the QR code's text (mdoc:…) to this file, anew after each session (draw it with qrencode).", valueName: "file"))
    var qrFile: String?

    @Option(name: .customLong("device-auth"), help: ArgumentHelp("With --mdoc: mdoc authentication by signature or mac.", valueName: "method"))
    var deviceAuth = "signature"

    @Option(name: .long, help: ArgumentHelp("With --mdoc: how the session travels after the NFC engagement: nfc, or ble as the phone wallets do (mdoc peripheral server mode through BlueZ; the engagement offers BLE alone).", valueName: "transport"))
    var transport = "nfc"

    @Option(name: .customLong("bluetooth-adapter"), help: ArgumentHelp("With --transport ble: the adapter to advertise on (hci0 …); every powered one by default.", valueName: "name"))
    var bluetoothAdapter: String?

    @Flag(name: .long, help: "With --transport ble: also offer an L2CAP channel (the service's L2CAP characteristic gives its PSM); a reader that opens it is answered there, others over GATT.")
    var l2cap = false

    @Option(name: .long, help: "A directory of EF dumps (EF_COM.bin, EF_SOD.bin, DG1.bin …) to serve as they are.")
    var dump: String?

    @Option(name: .long, help: "The MRZ to use as access key for a dump without DG1.")
    var mrz: String?

    @Option(name: .long, help: "vpcd's TCP port: 35963 for reader 00 00, 35964 for 00 01.")
    var vpcdPort: UInt16 = 35963

    @Option(name: .long, help: "vpcd's host.")
    var vpcdHost = "127.0.0.1"

    @Option(name: .long, help: "Document signer certificate (PEM/DER) for EF.SOD.")
    var signerCert: String?

    @Option(name: .long, help: "Document signer private key (PEM/DER) for EF.SOD.")
    var signerKey: String?

    @Flag(name: .long, help: "Refuse extended-length APDUs (overrides the description).")
    var noExtendedLength = false

    @Option(name: .long, help: "The most bytes one READ BINARY answers: a larger Ne gets this many (6Cxx with --exact-length-hint, 6700 with --wrong-length-above-limit).")
    var maxReadLength: Int?

    @Flag(name: .customLong("pn532-pty"), help: "Emulate a PN532 on a pseudo-terminal (for libnfc) instead of using vpcd.")
    var pn532PTY = false

    @Flag(name: .customLong("type-b"), help: "With --pn532-pty: the card answers ISO 14443 type B polling (like many ID cards) instead of type A.")
    var typeB = false

    @Flag(name: .long, help: "Log every APDU exchange (sizes only, never contents).")
    var verbose = false

    @Option(name: .long, help: ArgumentHelp("The chip's own time per APDU, added before every answer (a real chip: a few ms per READ BINARY, more for key agreement).", valueName: "ms"))
    var latency: Double?

    @Option(name: .long, help: ArgumentHelp("Add the time the bytes take on air at this ISO 14443 bit rate (106, 212, 424 or 848 kbit/s), with frame delays and chaining.", valueName: "kbit/s"))
    var bitRate: Int?

    @Option(name: .long, help: ArgumentHelp("With --bit-rate: the largest ISO 14443-4 frame (FSC/FSD), 16 to 4096 bytes.", valueName: "bytes"))
    var frameSize = 256

    @Option(name: .customLong("eac-cvca"), help: ArgumentHelp("Extended Access Control: a CVCA certificate (.cvcert) the chip trusts for Terminal Authentication; repeatable (a chip names two trust points in EF.CVCA). The chip gets DG3 (fingerprints) and DG4 (iris) behind TA, synthesised unless a --dump has them. Needs a passport with Chip Authentication.", valueName: "FILE"))
    var eacCVCA: [String] = []

    @Option(name: .customLong("eac-date"), help: ArgumentHelp("With --eac-cvca: the chip's current date, YYMMDD (default: today); certificates expired before it are refused. CVCA link and domestic DV certificates move it on.", valueName: "YYMMDD"))
    var eacDate: String?

    @OptionGroup(title: "Field behaviours (quirks)") var quirks: QuirkOptions

    @Option(name: .long, help: ArgumentHelp("Make the chip a hostile card, for testing a reader's bounds (repeatable): \(HostileMode.allCases.map(\.rawValue).joined(separator: ", ")), or stall-at-apdu=N. The chip completes access control and secure messaging correctly, then misbehaves (Docs/hostile-input.md lists what each mode does).", valueName: "MODE"))
    var hostile: [String] = []

    /// The virtual passport the options describe.
    func recipe() throws -> EmulatorRecipe {
        var recipe = EmulatorRecipe(source: dump.map { .dump(directory: $0, mrz: mrz) } ?? profile.map { .profile($0) } ?? .passport(passport ?? ""))
        recipe.signerCertificate = signerCert
        recipe.signerKey = signerKey
        recipe.quirks = { [quirks] in quirks.applied(to: $0) }
        for mode in hostile {
            do {
                try recipe.hostile.add(mode)
            } catch {
                throw ValidationError("--hostile: \(error.reason)")
            }
        }
        do {
            recipe.eac = try EmulatorRecipe.eacConfiguration(cvcaFiles: eacCVCA, date: eacDate)
        } catch {
            throw ValidationError(error.reason)
        }
        recipe.shortAPDUsOnly = noExtendedLength
        recipe.maxReadLength = maxReadLength
        return recipe
    }

    func validate() throws {
        guard [passport, dump, profile, mdoc, mdocProfile].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --passport FILE, --profile NAME, --dump DIR, --mdoc FILE or --mdoc-profile NAME")
        }
        if isMdoc {
            try validateMdoc()
            return
        }
        if transport != "nfc" || bluetoothAdapter != nil {
            throw ValidationError("--transport and --bluetooth-adapter go with an mdoc holder (--mdoc or --mdoc-profile); a passport answers over NFC")
        }
        if let profile, !FieldProfiles.names.contains(profile) {
            throw ValidationError("no field profile '\(profile)'; profiles: \(FieldProfiles.names.joined(separator: ", "))")
        }
        if let latency, !(0...60_000).contains(latency) {
            throw ValidationError("--latency must be between 0 and 60000 ms")
        }
        do {
            try timing?.validate()
        } catch {
            throw ValidationError(error.reason.replacingOccurrences(of: "the bit rate", with: "--bit-rate").replacingOccurrences(of: "the frame size", with: "--frame-size"))
        }
        if (signerCert == nil) != (signerKey == nil) {
            throw ValidationError("--signer-cert and --signer-key go together")
        }
        if typeB && !pn532PTY {
            throw ValidationError("--type-b needs --pn532-pty (under vpcd the card type is pcscd's business)")
        }
        if let maxReadLength, !(1...65_536).contains(maxReadLength) {
            throw ValidationError("--max-read-length must be between 1 and 65536")
        }
        if dump != nil && quirks.dg14WithoutCardAccessInfos {
            throw ValidationError("--dg14-without-card-access-infos changes DG14, which a --dump serves as it is")
        }
        if eacDate != nil && eacCVCA.isEmpty { throw ValidationError("--eac-date goes with --eac-cvca") }
        _ = try recipe()
    }

    func run() async throws {
        CGBGBridgeCLI_line_buffer_stdout()
        if isMdoc {
            try await runMdoc()
            return
        }
        let chipContent: EmulatedPassport
        var notes: [String]  // printed after --pn532-pty's connection string, which must be the first line
        do {
            (chipContent, notes) = try recipe().build()
        } catch let error as EmulatorError {
            printError("gbgbridge emulate: \(error.reason)")
            throw ExitCode(2)
        }
        let chip = VirtualPassportChip(passport: chipContent)
        if latency != nil || bitRate != nil {
            var faults = chip.faults
            faults.latencyPerAPDU = bitRate == nil ? .milliseconds(latency ?? 0) : .zero
            faults.timing = timing
            chip.setFaults(faults)
            notes.append("Timing: \(timing.map(String.init(describing:)) ?? "\(latency ?? 0) ms per APDU")")
        }
        let verbose = self.verbose
        if pn532PTY {
            try await runPN532(chip: chip, content: chipContent, notes: notes)
            return
        }
        notes.forEach { print($0) }
        let port = vpcdPort
        let client = VPCDClient(chip: chip, host: vpcdHost, port: vpcdPort) { event in
            if let line = event.line(port: port, verbose: verbose) { print(line) }
        }
        chipContent.summaryLines.forEach { print($0) }
        print("Waiting for vpcd on \(vpcdHost):\(vpcdPort) … (Ctrl-C to stop)")
        await HostServer.runEmulator(start: client.start, stop: client.stop, remove: {
            client.removeCard()
        }, insert: {
            client.insertCard()
            print("card inserted")
        })
        print("stopped")
    }

    /// The contactless timing model the flags ask for (`nil` without --bit-rate).
    var timing: ContactlessTiming? {
        bitRate.map { ContactlessTiming(bitRate: $0, chipTime: .microseconds(Int64((latency ?? 0) * 1_000)), frameSize: frameSize) }
    }

    private func runPN532(chip: VirtualPassportChip, content: EmulatedPassport, notes: [String]) async throws {
        let verbose = self.verbose
        let terminal: PN532PseudoTerminal
        do {
            terminal = try PN532PseudoTerminal(chip: chip, cardType: typeB ? .typeB : .typeA) { event in
                if let line = event.line(verbose: verbose) { print(line) }
            }
        } catch {
            printError("gbgbridge emulate: \(error.reason)")
            throw ExitCode(2)
        }
        // First line: the connection string, for scripts.
        print(terminal.connectionString)
        notes.forEach { print($0) }
        print("Emulating a PN532 with an ISO 14443 type \(typeB ? "B" : "A") card in its field (Ctrl-C to stop)")
        content.summaryLines.forEach { print($0) }
        await HostServer.runEmulator(start: terminal.start, stop: terminal.stop, remove: {
            terminal.setChip(nil)
            print("card removed")
        }, insert: {
            terminal.setChip(chip)
            print("card inserted")
        })
        print("stopped")
    }
}
