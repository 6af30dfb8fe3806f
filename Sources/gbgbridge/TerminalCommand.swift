import ArgumentParser
import BoundedFiles
import CVCertificates
import Foundation
import GBGBridgeHost
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
        do {
            credentials = try terminal.load().unwrapped("no credentials")
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
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.read(file, ceiling: BoundedFile.Ceiling.cvCertificate, what: "CV certificate or request")
            } catch {
                printError("gbgbridge terminal print: \(error.description)")
                objects.append(["file": file, "error": error.description])
                failed = true
                continue
            }
            if let certificate = try? CVCertificate(bytes: bytes) {
                var object = TerminalPrint.json(certificate)
                object["file"] = file
                objects.append(object)
                if !json { print(TerminalPrint.text(certificate, file: file)) }
            } else {
                do {
                    let request = try CVCertificateRequest(bytes: bytes)
                    var object = TerminalPrint.json(request)
                    object["file"] = file
                    objects.append(object)
                    if !json { print(TerminalPrint.text(request, file: file)) }
                } catch {
                    // Say what is wrong with it as a certificate when it looks like one.
                    let reason = bytes.first == 0x7F || bytes.first != 0x67 ? (Self.certificateError(bytes) ?? error) : error
                    printError("gbgbridge terminal print: \(file): \(reason.field): \(reason.reason)")
                    objects.append(["file": file, "error": ["code": reason.code.rawValue, "field": reason.field, "message": reason.reason]])
                    failed = true
                }
            }
        }
        if json { printJSON(objects) }
        if failed { throw ExitCode(1) }
    }

    static func certificateError(_ bytes: [UInt8]) -> CVCertificateError? {
        do {
            _ = try CVCertificate(bytes: bytes)
            return nil
        } catch {
            return error
        }
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
            let (publicKey, signer) = try loadKey()
            let algorithm = try scheme.flatMap { name in CVSignatureAlgorithm.allCases.first { $0.schemeName == name } } ?? Self.defaultScheme(publicKey)
            var request = CVCertificateRequest(authorityReference: car,
                                               publicKey: try CVPublicKey(publicKey: publicKey, algorithm: algorithm, withDomainParameters: !algorithm.isRSA),
                                               holderReference: chr)
            request.innerSignature = try await signer.sign(request.body, algorithm: algorithm)
            try request.verifyInnerSignature()
            if let authenticateKey, let authenticateAs {
                let certificate = try TerminalCredentials.certificates(at: [authenticateAs]).unwrappedFirst(authenticateAs)
                let outer = try TerminalOptions.signer(authenticateKey)
                try await request.authenticate(with: outer, algorithm: certificate.publicKey.algorithm, as: certificate.holderReference)
            }
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

    private func loadKey() throws(CVCertificateError) -> (PublicKey, any TerminalSigner) {
        if let publicKey {
            let data: [UInt8]
            do {
                data = try BoundedFile.read(publicKey, ceiling: BoundedFile.Ceiling.key, what: "public key")
            } catch {
                throw CVCertificateError(.malformed, field: "public key", error.description)
            }
            do {
                return (try PublicKey(subjectPublicKeyInfo: Self.der(data)), try TerminalOptions.signer(key))
            } catch let error as CVCertificateError {
                throw error
            } catch {
                throw CVCertificateError(.malformed, field: "public key", "\(publicKey) is not a SubjectPublicKeyInfo (DER or PEM)")
            }
        }
        let url = URL(fileURLWithPath: key)
        let data: [UInt8]
        do {
            data = try BoundedFile.read(url.path, ceiling: BoundedFile.Ceiling.key, what: "private key")
        } catch {
            throw CVCertificateError(.malformed, field: "key", error.description)
        }
        let privateKey: PrivateKey
        do {
            privateKey = try PrivateKey(bytes: data)
        } catch {
            throw CVCertificateError(.malformed, field: "key", "\(url.lastPathComponent) is not a private key (PKCS#8, DER or PEM)")
        }
        do {
            return (try PublicKey(subjectPublicKeyInfo: privateKey.subjectPublicKeyInfo), PrivateKeySigner(key: privateKey))
        } catch {
            throw CVCertificateError(.malformed, field: "key", "\(url.lastPathComponent): its public key cannot be taken out")
        }
    }

    /// A PEM `PUBLIC KEY` block as DER; DER as it is.
    static func der(_ bytes: [UInt8]) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN") else { return bytes }
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Data(base64Encoded: body).map { [UInt8]($0) } ?? bytes
    }

    static func defaultScheme(_ key: PublicKey) throws(CVCertificateError) -> CVSignatureAlgorithm {
        if key.rsaComponents != nil { return .rsaPSSSHA256 }
        guard let (curve, _) = key.ecPoint else { throw CVCertificateError(.unsupportedAlgorithm, field: "key", "neither RSA nor EC on a known curve") }
        switch curve.fieldSize {
        case ...28: return .ecdsaSHA224
        case ...32: return .ecdsaSHA256
        case ...48: return .ecdsaSHA384
        default: return .ecdsaSHA512
        }
    }
}

extension Optional {
    func unwrapped(_ what: String) throws(CVCertificateError) -> Wrapped {
        guard let self else { throw CVCertificateError(.malformed, field: "terminal", what) }
        return self
    }
}

extension Array where Element == CVCertificate {
    func unwrappedFirst(_ file: String) throws(CVCertificateError) -> CVCertificate {
        guard let first else { throw CVCertificateError(.malformed, field: "certificate", "\(file) holds no CV certificate") }
        return first
    }
}
