import ArgumentParser
import BoundedFiles
import CVCertificates
import Foundation
import GBGBridgeHost
import GBGBridgeRead
import MRTD
import MRTDCrypto

/// `gbgbridge terminal`: an Inspection System's credentials for Terminal Authentication —
/// checked before a passport is on the reader, CV certificates and requests shown, and requests
/// made for a new key.
struct TerminalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "terminal",
        abstract: "Inspection System credentials for Terminal Authentication (DG3/DG4): check them, print CV certificates, make certificate requests.",
        subcommands: [TerminalCheckCommand.self, TerminalPrintCommand.self, TerminalRequestCommand.self]
    )
}

/// `gbgbridge terminal check`: what a chip will find wrong with the credentials, found first.
struct TerminalCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check Terminal Authentication credentials: the chain, validity, rights, and that the key is the terminal certificate's.",
        discussion: """
            Signs a test message with --terminal-key (file, pkcs11: or exec:, as for read and serve) and verifies it \
            with the terminal certificate's key. With --cvca, each chain is verified from that CVCA as a chip would \
            (signatures, dates, roles); without, the chains are only followed by CAR/CHR and the curve is taken from \
            the key itself. Exit status: 0 usable, 1 not (expired, key not the certificate's, broken chain, no DG3/DG4 \
            rights), 2 bad arguments.
            """
    )

    @OptionGroup var terminal: TerminalOptions

    @Option(name: .long, help: ArgumentHelp("A CVCA certificate to verify the chain from (as a chip holds it); repeatable.", valueName: "file"))
    var cvca: [String] = []

    @Option(name: .long, help: ArgumentHelp("The date to check against, YYMMDD (default: today, UTC). A chip's own date may lag behind.", valueName: "YYMMDD"))
    var date: String?

    @Flag(name: .long, help: "Print JSON: {\"status\", \"terminal\", \"chains\", \"key\", \"problems\"}.")
    var json = false

    func validate() throws {
        guard !terminal.terminalCertificates.isEmpty, terminal.terminalKey != nil else {
            throw ValidationError("give --terminal-certificates and --terminal-key")
        }
        if let date, CVDate(date) == nil { throw ValidationError("--date must be a date as YYMMDD") }
    }

    func run() async throws {
        let day = date.flatMap(CVDate.init) ?? CVDate(Date())
        let credentials: TerminalCredentials
        let trustPoints: [CVCertificate]
        do throws(CVCertificateError) {
            guard let loaded = try terminal.load() else { throw CVCertificateError(.malformed, field: "terminal", "no credentials") }
            credentials = loaded
            trustPoints = try TerminalCredentials.certificates(at: cvca)
        } catch {
            if json { printJSON(["status": "error", "problems": ["\(error.field): \(error.reason)"]]) }
            printError("gbgbridge terminal check: \(error.field): \(error.reason)")
            throw ExitCode(1)
        }
        let report = await TerminalCheck.run(credentials, trustPoints: trustPoints, on: day)
        if json {
            printJSON(report.json)
        } else {
            for line in report.lines { print(line) }
        }
        if !report.problems.isEmpty { throw ExitCode(1) }
    }
}

/// `gbgbridge terminal print`: CV certificates and requests in words (or JSON).
struct TerminalPrintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "print",
        abstract: "Print CV certificates (.cvcert) and certificate requests (7F21 or 67): references, role, rights, dates, key.",
        discussion: "Exit status: 0 all parsed, 1 a file is not a CV certificate or request (the field that is wrong is named)."
    )

    @Argument(help: ArgumentHelp("CV certificate or request files.", valueName: "file"))
    var files: [String]

    @Flag(name: .long, help: "Print a JSON array, one object per file.")
    var json = false

    func run() throws {
        var objects: [[String: Any]] = []
        var failed = false
        for file in files {
            let described = TerminalPrint.describe(file: file)
            objects.append(described.json)
            if let error = described.error {
                printError("gbgbridge terminal print: \(error)")
                failed = true
            } else if !json {
                print(described.text)
            }
        }
        if json { printJSON(objects) }
        if failed { throw ExitCode(1) }
    }
}

/// `gbgbridge terminal request`: a CV certificate request for a key, to send to the DV.
struct TerminalRequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Make a CV certificate request (TR-03110-3 C.2) for a new Inspection System key, to send to your DV.",
        discussion: """
            The request carries the new public key (with its domain parameters), the CHR asked for and, with --car, \
            the DV it is meant for; it is signed with the new key (--key: a PKCS#8 file, or a pkcs11: URI or exec: \
            command with --public-key). With --authenticate-key and --authenticate-as, the request is wrapped in an \
            authentication request (67) signed with the key of a certificate the DV already issued (renewal). \
            Exit status: 0 written, 1 the key cannot sign or the file cannot be written, 2 bad arguments.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The new key: a PKCS#8 file (DER or PEM), a pkcs11: URI or exec:COMMAND (the latter two with --public-key).", valueName: "KEY"))
    var key: String

    @Option(name: .long, help: ArgumentHelp("The new key's public half (SubjectPublicKeyInfo, DER or PEM), for a key in a token or behind exec:.", valueName: "file"))
    var publicKey: String?

    @Option(name: .long, help: ArgumentHelp("The Certificate Holder Reference asked for: country (2 letters), mnemonic (up to 9), sequence (5), e.g. UTIS0000002.", valueName: "CHR"))
    var chr: String

    @Option(name: .long, help: ArgumentHelp("The DV the request is for (its CHR).", valueName: "CAR"))
    var car: String?

    @Option(name: .long, help: ArgumentHelp("Signature scheme: ECDSA_SHA_256 … ECDSA_SHA_512, RSA_v1_5_SHA_256, RSA_PSS_SHA_256 … (default: ECDSA with the hash of the curve's size, RSA_PSS_SHA_256).", valueName: "scheme"))
    var scheme: String?

    @Option(name: .long, help: ArgumentHelp("Authenticate the request with this key (a PKCS#8 file, pkcs11: or exec:), the key of --authenticate-as.", valueName: "KEY"))
    var authenticateKey: String?

    @Option(name: .long, help: ArgumentHelp("The certificate (.cvcert) of --authenticate-key: its CHR becomes the outer CAR, its algorithm the outer scheme.", valueName: "file"))
    var authenticateAs: String?

    @Option(name: [.short, .long], help: ArgumentHelp("Where to write the request (binary).", valueName: "file"))
    var out: String

    func validate() throws {
        if (authenticateKey == nil) != (authenticateAs == nil) { throw ValidationError("--authenticate-key and --authenticate-as go together") }
        if let problem = BoundedFile.outputProblem(out, option: "--out") { throw ValidationError(problem) }
        if let scheme, CVSignatureAlgorithm.allCases.first(where: { $0.schemeName == scheme }) == nil {
            throw ValidationError("unknown --scheme \(scheme); one of \(CVSignatureAlgorithm.allCases.map(\.schemeName).joined(separator: ", "))")
        }
        for (name, value) in [("--chr", chr), ("--car", car)] {
            guard let value else { continue }
            do {
                _ = try CVCertificate.referenceBytes(validating: value, name)
            } catch {
                throw ValidationError("\(name) \(error.reason)")
            }
        }
        if !key.hasPrefix("pkcs11:"), !key.hasPrefix("exec:") { return }
        if publicKey == nil { throw ValidationError("a key in a token or behind exec: needs --public-key (its SubjectPublicKeyInfo)") }
    }

    func run() async throws {
        do {
            var maker = TerminalRequestMaker(key: key, holderReference: chr)
            (maker.publicKey, maker.authorityReference) = (publicKey, car)
            maker.scheme = scheme.flatMap { name in CVSignatureAlgorithm.allCases.first { $0.schemeName == name } }
            (maker.authenticateKey, maker.authenticateAs) = (authenticateKey, authenticateAs)
            let request = try await maker.make()
            do {
                try PrivateFile.write(request.encoded, to: out, mode: 0o644)
            } catch {
                printError("gbgbridge terminal request: \(error.description)")
                throw ExitCode(1)
            }
            print(TerminalPrint.text(request, file: out))
        } catch let error as CVCertificateError {
            printError("gbgbridge terminal request: \(error.field): \(error.reason)")
            throw ExitCode(1)
        }
    }
}

extension Optional {
    func unwrapped(_ what: String) throws(CVCertificateError) -> Wrapped {
        guard let self else { throw CVCertificateError(.malformed, field: "terminal", what) }
        return self
    }
}
