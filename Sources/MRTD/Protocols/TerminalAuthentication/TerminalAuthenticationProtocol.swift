import CVCertificates
import MRTDCrypto
import SmartCardCore

/// Terminal Authentication version 1 (BSI TR-03110-1/-3, ICAO 9303 EAC): after Chip
/// Authentication, under its secure messaging, the terminal proves it is an Inspection System the
/// issuing state authorised, so the chip opens DG3 (fingerprints) and DG4 (iris):
///
/// 1. for each certificate of the chain from a CVCA the chip names in EF.CVCA (link certificates
///    first, then the DV's, then the terminal's): MSE:Set DST with the CAR, PSO:Verify Certificate;
/// 2. MSE:Set AT with the terminal's CHR; GET CHALLENGE (r_PICC, 8 bytes);
/// 3. EXTERNAL AUTHENTICATE with the terminal's signature over ID_PICC ‖ r_PICC ‖ Comp(PK_PCD),
///    PK_PCD being Chip Authentication's ephemeral key.
///
/// A refusal is an `invalid` outcome naming the step and the chip's status word; the session goes on.
package struct TerminalAuthenticationProtocol {
    package let credentials: TerminalCredentials
    /// ID_PICC: the document number with its check digit (BAC), or Comp of the chip's ephemeral PACE key.
    package let chipIdentifier: [UInt8]
    /// Comp(PK_PCD): Chip Authentication's ephemeral public key, compressed.
    package let ephemeralKey: [UInt8]

    package init(credentials: TerminalCredentials, chipIdentifier: [UInt8], ephemeralKey: [UInt8]) {
        self.credentials = credentials
        self.chipIdentifier = chipIdentifier
        self.ephemeralKey = ephemeralKey
    }

    /// The CVCA references in EF.CVCA: up to two `42` objects, then zero padding.
    package static func trustPoints(inCVCA bytes: [UInt8]) -> [String] {
        var references: [String] = []
        var rest = bytes[...]
        while let first = rest.first, first == 0x42, let (object, consumed) = try? BERTLV.parseOne(rest) {
            if let reference = try? CVCertificate.reference(object.value) { references.append(reference) }
            rest = rest.dropFirst(consumed)
        }
        return references
    }

    package func run(on session: CardSession, trustPoints: [String]) async throws(MRTDError) -> (VerificationOutcome, CertificateHolderAuthorization?) {
        session.traceContext.step = "TA"
        session.traceContext.detail = nil
        func refused(_ detail: String) -> (VerificationOutcome, CertificateHolderAuthorization?) {
            (VerificationOutcome(status: .invalid, detail: detail), nil)
        }
        let chain: CVCertificateChain
        do {
            chain = try credentials.chain(to: trustPoints)
        } catch {
            return refused("no certificate chain from the terminal to a CVCA the chip trusts (EF.CVCA: \(trustPoints.isEmpty ? "none" : trustPoints.joined(separator: ", "))): \(error.reason)")
        }
        for certificate in chain.certificates {
            session.traceContext.detail = certificate.holderReference
            let dst = try await session.manageSecurityEnvironment(
                .verification, BERTLV.encode(tag: 0x83, value: CVCertificate.referenceBytes(certificate.authorityReference)), .secure)
            guard dst.status == .ok else {
                return refused("the chip does not know the key \(certificate.authorityReference) (MSE:Set DST: \(dst.statusWord.meaning))")
            }
            let verified = try await session.verifyCertificate(certificate.verifyCertificateData)
            guard verified.status == .ok else {
                return refused("the chip refused the certificate \(certificate.holderReference) (PSO:Verify Certificate: \(verified.statusWord.meaning)): expired for the chip's date, not issued by \(certificate.authorityReference), or a wrong signature")
            }
        }
        guard let terminal = chain.terminal else { return refused("an empty certificate chain") }
        session.traceContext.detail = nil
        let at = try await session.manageSecurityEnvironment(
            .terminalAuthentication, BERTLV.encode(tag: 0x83, value: CVCertificate.referenceBytes(terminal.holderReference)), .secure)
        guard at.status == .ok else { return refused("the chip refused MSE:Set AT for \(terminal.holderReference) (\(at.statusWord.meaning))") }
        let challenge = try await session.getChallenge(length: 8, .secure)
        guard challenge.status == .ok, challenge.data.count == 8 else {
            return refused("GET CHALLENGE failed (\(challenge.statusWord.meaning), \(challenge.data.count) bytes)")
        }
        let signature: [UInt8]
        do {
            signature = try await credentials.signer.sign(chipIdentifier + challenge.data + ephemeralKey, algorithm: terminal.publicKey.algorithm)
        } catch {
            return refused("the terminal key could not sign: \(error.reason)")
        }
        let answer = try await session.externalAuthenticate(signature, .secure)
        guard answer.status == .ok else {
            return refused("the chip refused the terminal's signature (EXTERNAL AUTHENTICATE: \(answer.statusWord.meaning)): is the key the one of \(terminal.holderReference)?")
        }
        // What the chip granted: the CHATs ANDed down the chain.
        let rights = chain.certificates.dropFirst().reduce(chain.certificates[0].authorization) { $1.authorization.intersected(with: $0) }
        let granted = rights.biometricDataGroups
        return (VerificationOutcome(status: .valid, detail: "the chip accepted the Inspection System \(terminal.holderReference) (chain from \(chain.trustPoint), \(chain.certificates.count) certificate\(chain.certificates.count == 1 ? "" : "s")); may read \(granted.isEmpty ? "no biometric data group" : granted.joined(separator: " and "))"), rights)
    }
}
