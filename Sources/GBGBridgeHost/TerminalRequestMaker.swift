import BoundedFiles
import CVCertificates
import Foundation
import GBGBridgeRead
import MRTDCrypto

/// `gbgbridge terminal request`: a CV certificate request (TR-03110-3 C.2) for a new Inspection
/// System key — the public key with its domain parameters, the CHR asked for and the DV's CAR,
/// signed with the new key (inner signature, checked before it is handed out) and, for a renewal,
/// wrapped in an authentication request signed with a key the DV already certified.
package struct TerminalRequestMaker {
    /// The new key: a PKCS#8 file, or a `pkcs11:` URI / `exec:` command (then `publicKey` is needed).
    package var key: String
    /// The new key's SubjectPublicKeyInfo file (DER or PEM), for a key that cannot be read.
    package var publicKey: String?
    package var holderReference: String
    package var authorityReference: String?
    /// Default: ECDSA with the hash that fits the curve, RSA-PSS with SHA-256.
    package var scheme: CVSignatureAlgorithm?
    package var authenticateKey: String?
    /// The `.cvcert` of `authenticateKey`: its CHR becomes the outer CAR.
    package var authenticateAs: String?

    package init(key: String, holderReference: String) {
        self.key = key
        self.holderReference = holderReference
    }

    package func make() async throws(CVCertificateError) -> CVCertificateRequest {
        let (publicKey, signer) = try loadKey()
        let algorithm: CVSignatureAlgorithm
        if let scheme { algorithm = scheme } else { algorithm = try Self.defaultScheme(publicKey) }
        var request = CVCertificateRequest(authorityReference: authorityReference,
                                           publicKey: try CVPublicKey(publicKey: publicKey, algorithm: algorithm, withDomainParameters: !algorithm.isRSA),
                                           holderReference: holderReference)
        request.innerSignature = try await signer.sign(request.body, algorithm: algorithm)
        try request.verifyInnerSignature()
        if let authenticateKey, let authenticateAs {
            guard let certificate = try TerminalCredentials.certificates(at: [authenticateAs]).first else {
                throw CVCertificateError(.malformed, field: "certificate", "\(authenticateAs) holds no CV certificate")
            }
            let outer = try TerminalKey.signer(authenticateKey)
            try await request.authenticate(with: outer, algorithm: certificate.publicKey.algorithm, as: certificate.holderReference)
        }
        return request
    }

    private func loadKey() throws(CVCertificateError) -> (PublicKey, any TerminalSigner) {
        if let publicKey {
            let data: [UInt8]
            do {
                data = try BoundedFile.read(publicKey, ceiling: BoundedFile.Ceiling.key, what: "public key")
            } catch {
                throw CVCertificateError(.malformed, field: "public key", error.description)
            }
            let key: PublicKey
            do {
                key = try PublicKey(subjectPublicKeyInfo: Self.der(data))
            } catch {
                throw CVCertificateError(.malformed, field: "public key", "\(publicKey) is not a SubjectPublicKeyInfo (DER or PEM)")
            }
            return (key, try TerminalKey.signer(self.key))
        }
        let data: [UInt8]
        do {
            data = try BoundedFile.read(key, ceiling: BoundedFile.Ceiling.key, what: "private key")
        } catch {
            throw CVCertificateError(.malformed, field: "key", error.description)
        }
        let name = URL(fileURLWithPath: key).lastPathComponent
        let privateKey: PrivateKey
        do {
            privateKey = try PrivateKey(bytes: data)
        } catch {
            throw CVCertificateError(.malformed, field: "key", "\(name) is not a private key (PKCS#8, DER or PEM)")
        }
        do {
            return (try PublicKey(subjectPublicKeyInfo: privateKey.subjectPublicKeyInfo), PrivateKeySigner(key: privateKey))
        } catch {
            throw CVCertificateError(.malformed, field: "key", "\(name): its public key cannot be taken out")
        }
    }

    /// A PEM `PUBLIC KEY` block as DER; DER as it is.
    static func der(_ bytes: [UInt8]) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN") else { return bytes }
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Data(base64Encoded: body).map { [UInt8]($0) } ?? bytes
    }

    /// ECDSA with the SHA-2 whose size fits the curve's field; RSA-PSS with SHA-256.
    package static func defaultScheme(_ key: PublicKey) throws(CVCertificateError) -> CVSignatureAlgorithm {
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
