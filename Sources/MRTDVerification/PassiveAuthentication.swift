#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto

/// The outcome of one verification (passive, chip, active), in the shape `nfc.read` reports:
/// `{status: valid|invalid|untrusted|notSupported|notChecked, detail}`.
public enum VerificationStatus: String, Sendable, Hashable, Codable {
    case valid, invalid, untrusted, notSupported, notChecked
}

/// Passive authentication of EF.SOD (ICAO 9303-11 §5.1): the CMS signature, the data-group hashes
/// and the document signer's chain to a trusted CSCA, each reported separately.
public struct PassiveAuthenticationResult: Sendable, Hashable, Codable {
    public enum Signature: String, Sendable, Hashable, Codable { case valid, invalid }
    public enum Chain: String, Sendable, Hashable, Codable {
        /// Signed by a CSCA in the trust store, valid at signing time, not revoked.
        case trusted
        /// No CSCA in the trust store issued the document signer.
        case untrusted
        /// The document signer (or its CSCA) was not valid when the SOD was signed.
        case expiredAtSigning
        /// A CRL of the CSCA lists the document signer.
        case revoked
        /// Not checked: the signature itself is invalid, or the SOD names no signer.
        case notChecked
    }
    public enum HashStatus: String, Sendable, Hashable, Codable {
        case matched, mismatched
        /// Read from the chip, but EF.SOD has no hash for it: not protected.
        case notCovered
        /// Hashed in EF.SOD but not read (not asked for).
        case notRead
        /// Hashed in EF.SOD, but the chip does not give it (not found, or an error): a chip that
        /// leaves out a file its EF.SOD lists is not the document that was signed.
        case missing
        /// Hashed in EF.SOD, but access protected (Extended Access Control): not checkable here.
        case protected
        /// The chip offered it, but the reader refused it before reading it whole (a header that
        /// claims more than the file's ceiling, an indefinite length, a file that does not end):
        /// the reason is in the report's `parseErrors`.
        case refused
    }

    public var status: VerificationStatus
    public var detail: String
    public var signature: Signature
    public var signatureDetail: String
    public var chain: Chain
    public var chainDetail: String
    /// By data-group name (`DG1` …).
    public var dataGroups: [String: HashStatus]
    public var documentSigner: String?
    public var csca: String?
    public var digestAlgorithm: String?
    public var signatureAlgorithm: String?
    public var signingTime: String?
}

public enum PassiveAuthentication {
    /// Verifies `sod` against the data groups that were read and `trustStore`.
    /// `now` is the fallback signing time when the SOD has no signing-time attribute.
    public static func verify(sod: SecurityObject, dataGroups: [Int: [UInt8]], trustStore: TrustStore,
                              now: Date = Date()) -> PassiveAuthenticationResult {
        var hashStatuses: [String: PassiveAuthenticationResult.HashStatus] = [:]
        var mismatched: [String] = []
        for (number, content) in dataGroups {
            let name = "DG\(number)"
            guard let expected = sod.dataGroupHashes[number] else {
                hashStatuses[name] = .notCovered
                continue
            }
            let matches = sod.digestAlgorithm.hash(content) == expected
            hashStatuses[name] = matches ? .matched : .mismatched
            if !matches { mismatched.append(name) }
        }
        for number in sod.dataGroupHashes.keys where dataGroups[number] == nil {
            hashStatuses["DG\(number)"] = .notRead
        }
        let signer = sod.signedData.signerInfo
        var result = PassiveAuthenticationResult(
            status: .invalid, detail: "", signature: .invalid, signatureDetail: "", chain: .notChecked, chainDetail: "",
            dataGroups: hashStatuses, documentSigner: nil, csca: nil, digestAlgorithm: signer?.digestAlgorithm,
            signatureAlgorithm: signer?.signatureAlgorithm, signingTime: signer?.signingTime)

        // 1. The CMS signature (also checks the message-digest attribute against the content).
        let documentSigner: Certificate
        do {
            documentSigner = try sod.signedData.verifySignature(extraCertificates: trustStore.certificates)
            result.signature = .valid
            result.signatureDetail = "EF.SOD signature verifies (\(signer?.signatureAlgorithm ?? "?"))"
            result.documentSigner = documentSigner.subject
        } catch {
            result.signature = .invalid
            result.signatureDetail = "EF.SOD signature does not verify: \(error.reason)"
            result.detail = result.signatureDetail
            return result
        }

        // 2. The document signer's chain.
        let signingInstant = signer?.signingTime.flatMap(parseASN1Time) ?? documentSigner.notBefore ?? now.timeIntervalSince1970
        (result.chain, result.chainDetail, result.csca) = chain(documentSigner, trustStore: trustStore, at: signingInstant)

        // 3. Overall. EF.SOD must hold the hash of every data group present (ICAO 9303-10 §4.6.2):
        // one it leaves out is not protected by the signature, whatever else verifies.
        let uncovered = ordered(hashStatuses.filter { $0.value == .notCovered }.keys)
        if !mismatched.isEmpty {
            result.status = .invalid
            result.detail = "hash mismatch for \(ordered(mismatched).joined(separator: ", ")): the data was altered"
        } else if !uncovered.isEmpty {
            result.status = .invalid
            result.detail = "\(uncovered.joined(separator: ", ")) \(uncovered.count == 1 ? "is" : "are") present but not covered by EF.SOD: not part of the signed document, \(uncovered.count == 1 ? "its" : "their") contents are withheld"
        } else if result.chain == .revoked {
            result.status = .invalid
            result.detail = result.chainDetail
        } else if result.chain != .trusted {
            result.status = .untrusted
            result.detail = "signature and hashes are valid, but \(result.chainDetail)"
        } else {
            result.status = .valid
            let covered = ordered(hashStatuses.filter { $0.value == .matched }.keys)
            result.detail = "signed by a trusted document signer; hashes match for \(covered.joined(separator: ", "))"
        }
        return result
    }

    /// Data-group names in number order (DG2 before DG11).
    static func ordered(_ names: some Sequence<String>) -> [String] {
        names.sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }
    }

    static func chain(_ documentSigner: Certificate, trustStore: TrustStore, at instant: Double)
        -> (PassiveAuthenticationResult.Chain, String, String?)
    {
        let candidates = trustStore.issuers(of: documentSigner)
        guard !candidates.isEmpty else {
            return (.untrusted, "no CSCA in the trust store issued the document signer (\(documentSigner.issuer))", nil)
        }
        guard let csca = candidates.first(where: { documentSigner.isSignatureValid(issuer: $0) }) else {
            return (.untrusted, "no CSCA named \(documentSigner.issuer) in the trust store verifies the document signer's signature", nil)
        }
        if trustStore.revocationLists.contains(where: { $0.isIssued(by: csca) && $0.revokes(documentSigner) }) {
            return (.revoked, "the document signer \(documentSigner.serialNumber) is revoked by its CSCA's CRL", csca.subject)
        }
        guard documentSigner.isValid(at: instant) else {
            return (.expiredAtSigning, "the document signer was not valid when EF.SOD was signed", csca.subject)
        }
        if let issued = documentSigner.notBefore, !csca.isValid(at: issued) {
            // A CSCA may expire after issuing, but must have been valid when it issued the signer.
            return (.expiredAtSigning, "the CSCA was not valid when it issued the document signer", csca.subject)
        }
        return (.trusted, "document signer chains to CSCA \(csca.subject)", csca.subject)
    }

    /// Seconds since 1970 of an ASN.1 UTCTime (`YYMMDDhhmmssZ`) or GeneralizedTime
    /// (`YYYYMMDDhhmmss[.f]Z`); `nil` for anything else. Digits are ASCII digits only.
    static func parseASN1Time(_ text: String) -> Double? {
        var digits = Array(text.utf8.prefix { ASCII.isDigit($0) })
        if digits.count == 12 {
            guard let year = ASCII.number(digits[0..<2]) else { return nil }
            digits = Array((year >= 50 ? "19" : "20").utf8) + digits
        }
        guard digits.count >= 14 else { return nil }
        var values: [Int] = []
        var index = 0
        for length in [4, 2, 2, 2, 2, 2] {
            guard let value = ASCII.number(digits[index..<(index + length)]) else { return nil }
            values.append(value)
            index += length
        }
        var components = DateComponents()
        (components.year, components.month, components.day, components.hour, components.minute, components.second) =
            (values[0], values[1], values[2], values[3], values[4], values[5])
        components.timeZone = TimeZone(identifier: "UTC")
        return Calendar(identifier: .gregorian).date(from: components)?.timeIntervalSince1970
    }
}
