import CVCertificates
import Foundation
import MRTDCrypto
import TestSupport
import Testing

/// CV certificate requests (TR-03110-3 C.2): ours round-trip, their inner and outer signatures
/// verify and fail when altered, malformed ones are typed errors naming the field — and OpenPACE
/// (a tool we did not write) reads them: `cvc-print --csr` verifies the inner signature and
/// `cvc-create --csr` issues a certificate from one, for the key and CHR it asked for.
@Suite("CV certificate requests")
struct CVCertificateRequestTests {
    static func fixture(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: TestFixtures.url("cvc/\(name)"))) }

    /// A request for a new Inspection System key (brainpoolP256r1), inner-signed, and authenticated
    /// with the current IS key when `authenticated`.
    static func request(authenticated: Bool, algorithm: CVSignatureAlgorithm = .ecdsaSHA256, newKey: PrivateKey? = nil,
                        authority: String? = "UTDVIS00001") throws -> (CVCertificateRequest, PrivateKey) {
        let key = try newKey ?? PrivateKey.generateEC(curveName: "brainpoolP256r1")
        var request = CVCertificateRequest(authorityReference: authority,
                                           publicKey: try CVPublicKey(key: key, algorithm: algorithm, withDomainParameters: !algorithm.isRSA),
                                           holderReference: "UTIS0000009")
        try request.sign(with: key)
        if authenticated {
            try request.authenticate(with: try PrivateKey(bytes: try fixture("UTIS0000001.pkcs8")), algorithm: .ecdsaSHA256, as: "UTIS0000001")
        }
        return (request, key)
    }

    @Test func requestsRoundTripAndVerify() throws {
        for authenticated in [false, true] {
            let (request, _) = try Self.request(authenticated: authenticated)
            let parsed = try CVCertificateRequest(bytes: request.encoded)
            #expect(parsed == request && parsed.encoded == request.encoded)
            #expect(request.encoded.first == (authenticated ? 0x67 : 0x7F))
            try parsed.verifyInnerSignature()
            if authenticated {
                let current = try CVCertificate(bytes: try Self.fixture("UTIS0000001.cvcert"))
                let dv = try CVCertificate(bytes: try Self.fixture("UTDVIS00001.cvcert"))
                let cvca = try CVCertificate(bytes: try Self.fixture("UTCVCA00001.cvcert"))
                try parsed.verifyOuterSignature(with: current.publicKey.inheriting(from: dv.publicKey.inheriting(from: cvca.publicKey)))
                #expect(throws: CVCertificateError.self) { try parsed.verifyOuterSignature(with: cvca.publicKey) }
            }
        }
        // RSA (PSS): no domain parameters to carry.
        let (rsa, _) = try Self.request(authenticated: false, algorithm: .rsaPSSSHA256, newKey: try PrivateKey.generateRSA(bits: 2048))
        try CVCertificateRequest(bytes: rsa.encoded).verifyInnerSignature()
    }

    @Test func alteredAndMalformedRequestsAreTypedErrors() throws {
        let (request, _) = try Self.request(authenticated: false)
        var altered = request
        altered.holderReference = "UTIS0000010"
        #expect(throws: CVCertificateError(.badSignature, field: "inner signature",
                                           "does not verify with the request's own key (ECDSA_SHA_256)")) { try altered.verifyInnerSignature() }
        #expect(throws: CVCertificateError.self) { try request.verifyOuterSignature(with: request.publicKey) }
        func code(_ bytes: [UInt8]) -> (CVCertificateError.Code, String)? {
            do {
                _ = try CVCertificateRequest(bytes: bytes)
                return nil
            } catch {
                return (error.code, error.field)
            }
        }
        // An EC key without its domain parameters.
        var bare = request
        bare.publicKey.domainParameters = nil
        #expect(code(bare.encoded).map { $0.0 } == .missingDomainParameters)
        // A certificate is not a request; garbage is not either.
        #expect(code(try Self.fixture("UTIS0000001.cvcert"))?.1 == "request body")
        #expect(code([0x30, 0x00])?.1 == "certificate request")
        #expect(code([0x67, 0x02, 0x42, 0x00])?.1 == "authentication")
        // No CHR.
        let noCHR: [UInt8] = [0x7F, 0x21, 0x0C, 0x7F, 0x4E, 0x04, 0x5F, 0x29, 0x01, 0x00, 0x5F, 0x37, 0x02, 0x01, 0x02]
        #expect(code(noCHR) != nil)
    }

    @Test("OpenPACE reads our requests: cvc-print verifies them, cvc-create issues a certificate from one",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cvc-create"), "needs cvc-create (package openpace)"))
    func openPACEReadsOurRequests() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cvreq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["UTCVCA00001.cvcert", "UTDVIS00001.cvcert", "UTDVIS00001.pkcs8"] {
            try Data(try Self.fixture(name)).write(to: directory.appendingPathComponent(name))
        }
        // OpenPACE 1.1.2's cvc-print does not parse an authentication request (67): the plain
        // request goes to it, and our outer signature is checked with Python's cryptography.
        let (request, _) = try Self.request(authenticated: false)
        let file = directory.appendingPathComponent("request.cvreq")
        try Data(request.encoded).write(to: file)
        let printed = try await runCommand("/usr/bin/env", ["-C", directory.path, "cvc-print", "--csr", file.path], timeout: .seconds(30))
        #expect(printed.status == 0, "\(printed.standardError)")
        #expect(printed.standardOutput.contains("UTIS0000009") && printed.standardOutput.contains("CAR: UTDVIS00001"), "\(printed.standardOutput)")
        #expect(printed.standardOutput.contains("certificate request verified") && !printed.standardOutput.contains("not verified"),
                "\(printed.standardOutput)")

        let (authenticated, _) = try Self.request(authenticated: true)
        let authenticatedFile = directory.appendingPathComponent("authenticated.cvreq")
        try Data(authenticated.encoded).write(to: authenticatedFile)
        let current = try CVCertificate(bytes: try Self.fixture("UTIS0000001.cvcert"))
        let check = directory.appendingPathComponent("outer.py")
        try Data("""
            import sys
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import ec, utils
            def tlv(data, i):
                tag = data[i]; i += 1
                if tag & 0x1F == 0x1F:
                    tag = tag << 8 | data[i]; i += 1
                length = data[i]; i += 1
                if length & 0x80:
                    n = length & 0x7F; length = int.from_bytes(data[i:i + n], "big"); i += n
                return tag, i, i + length
            data = open(sys.argv[1], "rb").read()
            tag, start, end = tlv(data, 0)
            assert tag == 0x67
            parts, i = [], start
            while i < end:
                t, s, e = tlv(data, i); parts.append((t, i, s, e)); i = e
            assert [p[0] for p in parts] == [0x7F21, 0x42, 0x5F37]
            signed = data[parts[0][1]:parts[1][3]]
            signature = data[parts[2][2]:parts[2][3]]
            key = ec.EllipticCurvePublicKey.from_encoded_point(ec.BrainpoolP256R1(), bytes.fromhex(sys.argv[2]))
            half = len(signature) // 2
            der = utils.encode_dss_signature(int.from_bytes(signature[:half], "big"), int.from_bytes(signature[half:], "big"))
            key.verify(der, signed, ec.ECDSA(hashes.SHA256()))
            print("outer signature verified")
            """.utf8).write(to: check)
        let point = try #require(current.publicKey.point).map { String(format: "%02x", $0) }.joined()
        let python = try await runCommand("/usr/bin/python3", [check.path, authenticatedFile.path, point], timeout: .seconds(30))
        #expect(python.standardOutput.contains("outer signature verified"), "\(python.standardOutput) \(python.standardError)")

        // An altered request is not verified by cvc-print either.
        var (altered, _) = try Self.request(authenticated: false)
        altered.innerSignature[5] ^= 0x01
        let alteredFile = directory.appendingPathComponent("altered.cvreq")
        try Data(altered.encoded).write(to: alteredFile)
        let refused = try await runCommand("/usr/bin/env", ["-C", directory.path, "cvc-print", "--csr", alteredFile.path], timeout: .seconds(30))
        #expect(refused.standardOutput.contains("not verified"), "\(refused.standardOutput)")

        // cvc-create issues an IS certificate from our request, signed by the DV.
        let (newRequest, newKey) = try Self.request(authenticated: false)
        try Data(newRequest.encoded).write(to: directory.appendingPathComponent("new.cvreq"))
        let created = try await runCommand("/usr/bin/env", ["-C", directory.path, "cvc-create", "--role=terminal", "--type=is", "--csr=new.cvreq",
                                                            "--expires=351231", "--sign-with=UTDVIS00001.pkcs8", "--scheme=ECDSA_SHA_256",
                                                            "--read-finger", "--out-cert=issued.cvcert"], timeout: .seconds(30))
        #expect(created.status == 0, "\(created.standardError)")
        let issued = try CVCertificate(bytes: [UInt8](try Data(contentsOf: directory.appendingPathComponent("issued.cvcert"))))
        // cvc-create's csr mode takes no --sign-as: the CAR is the one the request names.
        #expect(issued.holderReference == "UTIS0000009" && issued.authorityReference == "UTDVIS00001", "\(issued)")
        #expect(issued.publicKey.point == newRequest.publicKey.point)
        let dv = try CVCertificate(bytes: try Self.fixture("UTDVIS00001.cvcert"))
        let cvca = try CVCertificate(bytes: try Self.fixture("UTCVCA00001.cvcert"))
        try issued.verifySignature(issuerKey: dv.publicKey.inheriting(from: cvca.publicKey))
        // And the new key signs for the new certificate.
        let message: [UInt8] = Array("terminal authentication".utf8)
        let signature = try CVSignatureAlgorithm.ecdsaSHA256.sign(message, with: newKey)
        #expect(issued.publicKey.algorithm.verify(signature, over: message,
                                                  with: try issued.publicKey.inheriting(from: cvca.publicKey).publicKey()))
    }
}
