@testable import CVCertificates
import Foundation
import MRTDCrypto
import TestSupport
import Testing

/// CV certificates made by a tool we did not write — OpenPACE's `cvc-create` (Debian package
/// `openpace`) — parsed, re-encoded byte for byte and verified by us; and ours checked by its
/// `cvc-print`. CVCA → DV → IS chains for ECDSA on brainpool and NIST curves and for RSA.
@Suite("CV certificates against OpenPACE's cvc-create / cvc-print", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cvc-create"), "needs cvc-create (package openpace; scripts/install-deps.sh)"))
struct OpenPACECVCTests {
    struct Scheme: Sendable, CustomStringConvertible {
        let name: String
        /// `openssl genpkey` arguments for the CVCA key.
        let keyArguments: [String]
        let algorithm: CVSignatureAlgorithm
        var description: String { name }
    }

    static let schemes: [Scheme] = [
        Scheme(name: "ECDSA brainpoolP256r1 SHA-256", keyArguments: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:brainpoolP256r1"], algorithm: .ecdsaSHA256),
        Scheme(name: "ECDSA brainpoolP384r1 SHA-384", keyArguments: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:brainpoolP384r1"], algorithm: .ecdsaSHA384),
        Scheme(name: "ECDSA P-256 SHA-256", keyArguments: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1"], algorithm: .ecdsaSHA256),
        Scheme(name: "ECDSA P-224 SHA-224", keyArguments: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp224r1"], algorithm: .ecdsaSHA224),
        Scheme(name: "ECDSA brainpoolP512r1 SHA-512", keyArguments: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:brainpoolP512r1"], algorithm: .ecdsaSHA512),
        Scheme(name: "RSA 2048 PKCS#1 v1.5 SHA-256", keyArguments: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], algorithm: .rsaPKCS1v15SHA256),
        Scheme(name: "RSA 2048 PSS SHA-256", keyArguments: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], algorithm: .rsaPSSSHA256),
        Scheme(name: "RSA 2048 PSS SHA-1", keyArguments: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], algorithm: .rsaPSSSHA1),
    ]

    /// A CVCA → DV → IS chain made by cvc-create in a fresh directory.
    struct Chain {
        let directory: URL
        func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: directory.appendingPathComponent(name))) }
        func certificate(_ name: String) throws -> CVCertificate { try CVCertificate(bytes: try bytes(name)) }
        func key(_ name: String) throws -> PrivateKey { try PrivateKey(bytes: try bytes(name)) }
    }

    static func run(_ tool: String, _ arguments: [String], in directory: URL) async throws -> CommandOutcome {
        let outcome = try await runCommand("/usr/bin/env", ["-C", directory.path, tool] + arguments, timeout: .seconds(60))
        try #require(outcome.status == 0, "\(tool) \(arguments.joined(separator: " ")): \(outcome.standardError)")
        return outcome
    }

    static func makeChain(_ scheme: Scheme, isRights: [String] = ["--read-finger"], isExpires: String = "351231") async throws -> Chain {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cvc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = try await run("openssl", ["genpkey"] + scheme.keyArguments + ["-outform", "DER", "-out", "cvca.pkcs8"], in: directory)
        let s = "--scheme=\(scheme.algorithm.schemeName)"
        _ = try await run("cvc-create", ["--role=cvca", "--type=is", "--chr=UTCVCA00001", "--expires=401231", "--sign-with=cvca.pkcs8", s,
                                         "--read-finger", "--read-iris"], in: directory)
        _ = try await run("cvc-create", ["--role=dv_domestic", "--chr=UTDVIS00001", "--expires=391231", "--sign-with=cvca.pkcs8",
                                         "--sign-as=UTCVCA00001.cvcert", "--read-finger", "--read-iris", "--out-key=dv.pkcs8", s], in: directory)
        _ = try await run("cvc-create", ["--role=terminal", "--chr=UTIS0000001", "--expires=\(isExpires)", "--sign-with=dv.pkcs8",
                                         "--sign-as=UTDVIS00001.cvcert", "--out-key=is.pkcs8", s] + isRights, in: directory)
        return Chain(directory: directory)
    }

    @Test("cvc-create's chains parse, re-encode byte for byte and verify", arguments: schemes)
    func theirsParseAndVerify(_ scheme: Scheme) async throws {
        let chain = try await Self.makeChain(scheme)
        defer { try? FileManager.default.removeItem(at: chain.directory) }
        let cvca = try chain.certificate("UTCVCA00001.cvcert")
        let dv = try chain.certificate("UTDVIS00001.cvcert")
        let terminal = try chain.certificate("UTIS0000001.cvcert")
        for (certificate, file) in [(cvca, "UTCVCA00001.cvcert"), (dv, "UTDVIS00001.cvcert"), (terminal, "UTIS0000001.cvcert")] {
            #expect(certificate.encoded == (try chain.bytes(file)), "\(file) re-encodes to other bytes")
            #expect(certificate.publicKey.algorithm == scheme.algorithm)
        }
        #expect(cvca.isSelfSigned && cvca.authorization.role == .cvca)
        #expect(dv.authorization.role == .dvDomestic && dv.authorityReference == "UTCVCA00001")
        #expect(terminal.authorization.role == .terminal && terminal.holderReference == "UTIS0000001")
        #expect(terminal.authorization.terminalType == CertificateHolderAuthorization.inspectionSystem)
        #expect(terminal.authorization.readsDG3 && !terminal.authorization.readsDG4)
        #expect(dv.authorization.readsDG3 && dv.authorization.readsDG4)
        if !scheme.algorithm.isRSA {
            #expect(cvca.publicKey.domainParameters != nil, "a CVCA key carries its domain parameters")
            #expect(dv.publicKey.domainParameters == nil && terminal.publicKey.domainParameters == nil)
        }
        try cvca.verifySignature(issuerKey: cvca.publicKey)
        let built = try CVCertificateChain.build(to: ["UTCVCA00001"], from: [cvca, dv], terminal: terminal)
        #expect(built.certificates.map(\.holderReference) == ["UTDVIS00001", "UTIS0000001"])
        let rights = try built.verify(trustPointKey: cvca.publicKey, on: CVDate(Date()))
        #expect(rights.readsDG3 && !rights.readsDG4, "the effective rights are the terminal's ANDed with the DV's")
        // The terminal's key signs what the chip's key verifies (TA's EXTERNAL AUTHENTICATE).
        let message = Array("ID_PICC || r_PICC || Comp(PK_PCD)".utf8)
        let signature = try scheme.algorithm.sign(message, with: try chain.key("is.pkcs8"))
        #expect(scheme.algorithm.verify(signature, over: message, with: try terminal.publicKey.inheriting(from: cvca.publicKey).publicKey()))
    }

    @Test("our certificates, signed with cvc-create's keys, verify in cvc-print", arguments: schemes)
    func oursVerifyInCVCPrint(_ scheme: Scheme) async throws {
        let chain = try await Self.makeChain(scheme)
        defer { try? FileManager.default.removeItem(at: chain.directory) }
        let cvca = try chain.certificate("UTCVCA00001.cvcert")
        let dvKey = try chain.key("dv.pkcs8")
        var dv = CVCertificate(
            authorityReference: "UTCVCA00001",
            publicKey: try CVPublicKey(key: dvKey, algorithm: scheme.algorithm, withDomainParameters: false),
            holderReference: "UTDVOURS0001",
            authorization: .inspectionSystem(role: .dvForeign, readDG3: true, readDG4: true),
            effectiveDate: CVDate(Date()), expirationDate: try #require(CVDate("391231")))
        try dv.sign(with: try chain.key("cvca.pkcs8"), algorithm: cvca.publicKey.algorithm)
        var terminal = CVCertificate(
            authorityReference: dv.holderReference,
            publicKey: try CVPublicKey(key: try chain.key("is.pkcs8"), algorithm: scheme.algorithm, withDomainParameters: false),
            holderReference: "UTISOURS00001",
            authorization: .inspectionSystem(role: .terminal, readDG3: true, readDG4: false),
            effectiveDate: CVDate(Date()), expirationDate: try #require(CVDate("361231")))
        try terminal.sign(with: dvKey, algorithm: scheme.algorithm)
        // cvc-print finds trust anchors by CAR, as files named after it.
        let trust = chain.directory.appendingPathComponent("trust")
        try FileManager.default.createDirectory(at: trust, withIntermediateDirectories: true)
        try Data(try chain.bytes("UTCVCA00001.cvcert")).write(to: trust.appendingPathComponent("UTCVCA00001"))
        try Data(dv.encoded).write(to: trust.appendingPathComponent(dv.holderReference))
        for certificate in [dv, terminal] {
            let file = chain.directory.appendingPathComponent("\(certificate.holderReference).cvcert")
            try Data(certificate.encoded).write(to: file)
            let printed = try await Self.run("cvc-print", ["--cvc", file.path, "--cvc-dir", trust.path], in: chain.directory)
            #expect(printed.standardOutput.contains("CHR: \(certificate.holderReference)"), "\(printed.standardOutput)")
            #expect(printed.standardOutput.contains("certificate verified") && !printed.standardOutput.contains("not verified"),
                    "cvc-print does not verify our \(certificate.holderReference): \(printed.standardOutput) \(printed.standardError)")
        }
        #expect(try CVCertificate(bytes: terminal.encoded) == terminal)
    }

    /// TR-03110-3 §2.3: CVCA (link certificates) → one DV → the terminal. A second DV certificate
    /// (domestic or foreign) between the DV and the terminal is refused, though every signature holds.
    @Test("a DV certificate anywhere but just above the terminal is refused", arguments: [CertificateHolderAuthorization.Role.dvDomestic, .dvForeign])
    func dvOnlyAboveTheTerminal(_ role: CertificateHolderAuthorization.Role) async throws {
        let scheme = Self.schemes[0]
        let chain = try await Self.makeChain(scheme)
        defer { try? FileManager.default.removeItem(at: chain.directory) }
        let cvca = try chain.certificate("UTCVCA00001.cvcert")
        let dvKey = try chain.key("dv.pkcs8")
        let today = CVDate(Date())
        func dv(_ holder: String, issuer: String, signer: PrivateKey, algorithm: CVSignatureAlgorithm) throws -> CVCertificate {
            var certificate = CVCertificate(
                authorityReference: issuer, publicKey: try CVPublicKey(key: dvKey, algorithm: scheme.algorithm, withDomainParameters: false),
                holderReference: holder, authorization: .inspectionSystem(role: role, readDG3: true, readDG4: true),
                effectiveDate: today, expirationDate: try #require(CVDate("391231")))
            try certificate.sign(with: signer, algorithm: algorithm)
            return certificate
        }
        let first = try dv("UTDVONE00001", issuer: "UTCVCA00001", signer: try chain.key("cvca.pkcs8"), algorithm: cvca.publicKey.algorithm)
        let second = try dv("UTDVTWO00001", issuer: first.holderReference, signer: dvKey, algorithm: scheme.algorithm)
        var terminal = CVCertificate(
            authorityReference: second.holderReference,
            publicKey: try CVPublicKey(key: try chain.key("is.pkcs8"), algorithm: scheme.algorithm, withDomainParameters: false),
            holderReference: "UTISTWO00001", authorization: .inspectionSystem(role: .terminal, readDG3: true, readDG4: false),
            effectiveDate: today, expirationDate: try #require(CVDate("361231")))
        try terminal.sign(with: dvKey, algorithm: scheme.algorithm)
        // One DV: accepted. Two: refused by role, at the first DV's place.
        try CVCertificateChain(certificates: [second, terminal], trustPoint: first.holderReference)
            .verify(trustPointKey: first.publicKey.inheriting(from: cvca.publicKey), on: today)
        #expect {
            try CVCertificateChain(certificates: [first, second, terminal], trustPoint: "UTCVCA00001").verify(trustPointKey: cvca.publicKey, on: today)
        } throws: { error in
            guard let error = error as? CVCertificateError else { return false }
            return error.code == .unauthorized && error.reason.contains("UTDVONE00001")
        }
    }

    @Test("refusals: another CVCA, an expired terminal certificate, a wrong signature, no DG3 rights")
    func refusals() async throws {
        let scheme = Self.schemes[0]
        let chain = try await Self.makeChain(scheme, isRights: ["--read-iris"], isExpires: "270101")
        let other = try await Self.makeChain(scheme)
        defer {
            try? FileManager.default.removeItem(at: chain.directory)
            try? FileManager.default.removeItem(at: other.directory)
        }
        let cvca = try chain.certificate("UTCVCA00001.cvcert")
        let dv = try chain.certificate("UTDVIS00001.cvcert")
        let terminal = try chain.certificate("UTIS0000001.cvcert")
        #expect(!terminal.authorization.readsDG3 && terminal.authorization.readsDG4)
        // A chain to a CVCA the chip does not name.
        #expect(throws: CVCertificateError.self) { try CVCertificateChain.build(to: ["UTCVCA00002"], from: [cvca, dv], terminal: terminal) }
        // The same names under another CVCA's key: the signatures do not verify.
        let built = try CVCertificateChain.build(to: ["UTCVCA00001"], from: [dv], terminal: terminal)
        let otherCVCA = try other.certificate("UTCVCA00001.cvcert")
        #expect(performing: { try built.verify(trustPointKey: otherCVCA.publicKey, on: CVDate(Date())) },
                throws: { ($0 as? CVCertificateError)?.code == .badSignature })
        // Past the terminal certificate's expiry.
        #expect(performing: { try built.verify(trustPointKey: cvca.publicKey, on: try #require(CVDate("270102"))) },
                throws: { ($0 as? CVCertificateError)?.code == .notValid })
        // A flipped bit in the signature.
        var tampered = terminal
        tampered.signature[tampered.signature.count / 2] ^= 0x01
        #expect(performing: { try tampered.verifySignature(issuerKey: dv.publicKey.inheriting(from: cvca.publicKey)) },
                throws: { ($0 as? CVCertificateError)?.code == .badSignature })
    }
}
