import CBORCoding
import COSE
import MRTDCrypto

/// Verifies returned documents: issuer data authentication (the MSO's COSE_Sign1, its document
/// signer chained to a trusted IACA, validity, docType, every element's digest) and mdoc
/// authentication (deviceSignature or deviceMac over DeviceAuthenticationBytes with the MSO's device key).
public struct MdocVerifier: Sendable {
    /// Trusted IACA root certificates.
    public var trustAnchors: [Certificate]
    public var revocationLists: [RevocationList]
    /// The time the read is judged at, seconds since 1970 (now, or `--at`).
    public var time: Double

    /// The largest document signer certificate looked at.
    static let maximumCertificateBytes = 16 << 10
    /// The most certificates taken from one x5chain.
    static let maximumChainLength = 4

    public init(trustAnchors: [Certificate], revocationLists: [RevocationList] = [], time: Double) {
        self.trustAnchors = trustAnchors
        self.revocationLists = revocationLists
        self.time = time
    }

    /// The reader's ephemeral private key, which deviceMac needs (EMacKey is ECDH of it with the device key).
    public struct ReaderEphemeralKey: Sendable {
        public let curve: EllipticCurve
        public let scalar: [UInt8]
        public init(curve: EllipticCurve, scalar: [UInt8]) {
            self.curve = curve
            self.scalar = scalar
        }
    }

    public func verify(_ document: MdocDocument, transcript: SessionTranscript, request: MdocRequest?, readerKey: ReaderEphemeralKey?) -> MdocVerification {
        var result = MdocVerification(docType: document.docType, issuer: .invalid, issuerReason: nil, device: .invalid, deviceReason: nil,
                                      deviceAuthentication: document.deviceAuth.method, elements: [], withheld: [], notReturned: [])
        let mso: MobileSecurityObject
        switch issuerCheck(document, request: request, into: &result) {
        case .some(let parsed): mso = parsed
        case .none:
            for (namespace, items) in document.issuerNamespaces {
                for item in items { result.withheld.append(.init(namespace: namespace, identifier: item.elementIdentifier, reason: .issuerInvalid)) }
            }
            result.deviceReason = "the device key comes from the MSO, which cannot be trusted: \(result.issuerReason ?? "issuer invalid")"
            noteMissing(document, request: request, into: &result)
            return result
        }
        elements(document, mso: mso, request: request, into: &result)
        deviceCheck(document, mso: mso, transcript: transcript, readerKey: readerKey, into: &result)
        noteMissing(document, request: request, into: &result)
        return result
    }

    /// The MSO when its signature verifies (the verdict set to valid, untrusted or expired), or nil (invalid).
    func issuerCheck(_ document: MdocDocument, request: MdocRequest?, into result: inout MdocVerification) -> MobileSecurityObject? {
        func invalid(_ reason: String) -> MobileSecurityObject? {
            result.issuer = .invalid
            result.issuerReason = reason
            return nil
        }
        let chainBytes: [[UInt8]]
        do { chainBytes = try document.issuerAuth.headers.x5chain() } catch { return invalid("issuerAuth's x5chain: \(error.reason)") }
        guard let leafBytes = chainBytes.first else { return invalid("issuerAuth carries no document signer certificate (x5chain)") }
        guard chainBytes.count <= Self.maximumChainLength, chainBytes.allSatisfy({ $0.count <= Self.maximumCertificateBytes }) else {
            return invalid("issuerAuth's x5chain is longer or larger than this reader takes")
        }
        let signer: Certificate
        let key: PublicKey
        do {
            signer = try Certificate(bytes: leafBytes)
            key = try PublicKey(subjectPublicKeyInfo: signer.subjectPublicKeyInfo)
        } catch { return invalid("the document signer certificate: \(error.reason)") }
        result.documentSigner = signer.subject
        do { try document.issuerAuth.verify(key: key) } catch { return invalid("the MSO's signature: \(error.reason)") }
        guard let payload = document.issuerAuth.payload else { return invalid("issuerAuth's payload (the MSO) is detached") }
        let mso: MobileSecurityObject
        do { mso = try MobileSecurityObject(payload: payload) } catch { return invalid("the MSO: \(error.reason)") }
        result.signed = mso.signed
        result.validFrom = mso.validFrom
        result.validUntil = mso.validUntil
        guard mso.docType == document.docType else { return invalid("the MSO is for \(mso.docType), the document says \(document.docType)") }
        if let request, request.docType != document.docType { return invalid("\(document.docType) returned, \(request.docType) asked for") }

        // Chain: the signer, any intermediates from x5chain, up to a trust anchor.
        let intermediates = chainBytes.dropFirst().compactMap { try? Certificate(bytes: $0) }
        var current = signer
        var path = [signer]
        var anchor: Certificate?
        for _ in 0...intermediates.count {
            if let root = trustAnchors.first(where: { current.isIssued(byNameOf: $0) && current.isSignatureValid(issuer: $0) }) {
                anchor = root
                break
            }
            guard let next = intermediates.first(where: { candidate in
                current.isIssued(byNameOf: candidate) && current.isSignatureValid(issuer: candidate) && !path.contains { $0 === candidate }
            }) else { break }
            path.append(next)
            current = next
        }
        result.issuer = .valid
        guard let anchor else {
            result.issuer = .untrusted
            result.issuerReason = "no trusted IACA issued the document signer \(signer.subject) (issuer \(signer.issuer)); import the IACA with gbgbridge trust import"
            return mso
        }
        result.issuingAuthority = anchor.subject
        if let revoked = path.first(where: { certificate in revocationLists.contains { $0.revokes(certificate) && $0.isIssued(by: anchor) } }) {
            result.issuer = .untrusted
            result.issuerReason = "\(revoked.subject) is revoked by its IACA's revocation list"
            return mso
        }
        var expired: [String] = []
        for certificate in path + [anchor] where !certificate.isValid(at: time) {
            expired.append("\(certificate.subject) is valid \(Self.span(certificate.notBefore, certificate.notAfter))")
        }
        if time < mso.validFrom || time > mso.validUntil {
            expired.append("the MSO is valid \(MdocTime.dateTime(mso.validFrom)) to \(MdocTime.dateTime(mso.validUntil))")
        }
        if !signer.isValid(at: mso.signed) { expired.append("the MSO was signed \(MdocTime.dateTime(mso.signed)), outside its signer's validity") }
        if !expired.isEmpty {
            result.issuer = .expired
            result.issuerReason = "at \(MdocTime.dateTime(time)): " + expired.joined(separator: "; ")
        }
        return mso
    }

    static func span(_ from: Double?, _ to: Double?) -> String {
        "\(from.map(MdocTime.dateTime) ?? "?") to \(to.map(MdocTime.dateTime) ?? "?")"
    }

    /// Hands over each returned element whose digest matches and that was asked for; withholds the rest.
    func elements(_ document: MdocDocument, mso: MobileSecurityObject, request: MdocRequest?, into result: inout MdocVerification) {
        for (namespace, items) in document.issuerNamespaces {
            var seen = Set<String>()
            var usedIDs = Set<UInt64>()
            for item in items {
                let identifier = item.elementIdentifier
                func withhold(_ reason: MdocVerification.WithholdReason) {
                    result.withheld.append(.init(namespace: namespace, identifier: identifier, reason: reason))
                }
                guard seen.insert(identifier).inserted else { withhold(.duplicate); continue }
                guard usedIDs.insert(item.digestID).inserted else { withhold(.reusedDigestID); continue }
                guard let expected = mso.valueDigests[namespace]?[item.digestID] else { withhold(.noDigest); continue }
                guard KeyedHash.constantTimeEqual(mso.digestAlgorithm.hash(item.bytes.taggedBytes), expected) else { withhold(.digestMismatch); continue }
                if let request, !request.contains(namespace: namespace, identifier: identifier) { withhold(.notRequested); continue }
                result.elements.append(.init(namespace: namespace, identifier: identifier, value: item.elementValue))
            }
        }
        if let deviceNamespaces = try? CBOR.decode(document.deviceNamespacesBytes.content, limits: DeviceResponse.limits).mapValue {
            for entry in deviceNamespaces.entries {
                guard let namespace = entry.key.textValue, let items = entry.value.mapValue else { continue }
                for item in items.keys.compactMap(\.textValue) {
                    result.withheld.append(.init(namespace: namespace, identifier: item, reason: .deviceSignedOnly))
                }
            }
        }
    }

    /// Requested elements that are neither handed over nor withheld: the holder did not return them.
    func noteMissing(_ document: MdocDocument, request: MdocRequest?, into result: inout MdocVerification) {
        guard let request else { return }
        for element in request.elements where !result.elements.contains(where: { $0.namespace == element.namespace && $0.identifier == element.identifier })
            && !result.withheld.contains(where: { $0.namespace == element.namespace && $0.identifier == element.identifier }) {
            result.notReturned.append(.init(namespace: element.namespace, identifier: element.identifier, reason: .notRequested))
        }
    }

    func deviceCheck(_ document: MdocDocument, mso: MobileSecurityObject, transcript: SessionTranscript, readerKey: ReaderEphemeralKey?,
                     into result: inout MdocVerification) {
        let payload = transcript.deviceAuthenticationBytes(docType: document.docType, deviceNamespaces: document.deviceNamespacesBytes)
        switch document.deviceAuth {
        case .signature(let signature):
            do {
                try signature.verify(key: try mso.deviceKey.verificationKey(), detachedPayload: payload)
                result.device = .valid
            } catch {
                result.deviceReason = "deviceSignature: \(error.reason)"
            }
        case .mac(let mac):
            guard let readerKey else {
                result.deviceReason = "deviceMac needs the reader's ephemeral key (--ephemeral-reader-key) to derive EMacKey"
                return
            }
            do {
                let key = try transcript.eMacKey(curve: readerKey.curve, privateScalar: readerKey.scalar, peerKey: mso.deviceKey)
                try mac.verify(key: key, detachedPayload: payload)
                result.device = .valid
            } catch let error as COSEError {
                result.deviceReason = "deviceMac: \(error.reason)"
            } catch let error as MdocError {
                result.deviceReason = "deviceMac: \(error.reason)"
            } catch {
                result.deviceReason = "deviceMac: \(error)"
            }
        }
    }
}
