import CBORCoding
import COSE
import MRTDCrypto
import Mdoc

extension MdocHolder {
    /// The DeviceResponse to a DeviceRequest: the requested elements it holds, issuerAuth, and
    /// device authentication over this session's transcript (as the hostile modes bend them).
    func answer(request plaintext: [UInt8], transcript: SessionTranscript, readerKey: COSEKey, _ state: inout State) -> [UInt8] {
        guard let request = try? DeviceRequest(bytes: plaintext) else { return DeviceResponse(documents: [], status: 11).encoded }
        var documents: [MdocDocument] = []
        var documentErrors: [(docType: String, code: Int)] = []
        for doc in request.docRequests {
            state.requests.append(doc.request)
            if let auth = doc.readerAuth {
                let payload = ReaderAuthentication.payload(transcript: transcript, itemsRequestBytes: doc.itemsRequestBytes)
                let verified = (try? auth.headers.x5chain().first).flatMap { $0 }
                    .flatMap { try? Certificate(bytes: $0) }
                    .flatMap { try? PublicKey(subjectPublicKeyInfo: $0.subjectPublicKeyInfo) }
                    .map { key in (try? auth.verify(key: key, detachedPayload: payload)) != nil } ?? false
                state.readerAuthenticated.append(verified)
            }
            guard doc.request.docType == credential.docType else {
                documentErrors.append((doc.request.docType, 0))
                continue
            }
            if let document = try? document(for: doc.request, transcript: transcript, readerKey: readerKey) { documents.append(document) }
        }
        return DeviceResponse(documents: documents, documentErrors: documentErrors, status: 0).encoded
    }

    func document(for request: MdocRequest, transcript: SessionTranscript, readerKey: COSEKey) throws -> MdocDocument {
        var namespaces: [(namespace: String, items: [IssuerSignedItem])] = []
        var errors: [(namespace: String, element: String, code: Int)] = []
        var nextID = UInt64(credential.items.reduce(0) { $0 + $1.items.count })
        for (namespace, items) in credential.items {
            var chosen = items.filter { hostile.contains(.unrequestedElements) || request.contains(namespace: namespace, identifier: $0.elementIdentifier) }
            if hostile.contains(.badDigest), let first = chosen.first {
                // The value changed after the issuer signed: same digestID and salt, other bytes.
                let changed: CBOR = first.elementValue.textValue.map { .text($0 + "X") } ?? .text("changed")
                chosen[0] = IssuerSignedItem(digestID: first.digestID, random: first.random, elementIdentifier: first.elementIdentifier, elementValue: changed)
            }
            if namespace == MdocDocType.namespace(of: credential.docType) {
                if hostile.contains(.hugeElement) {
                    chosen.append(IssuerSignedItem(digestID: nextID, random: secureRandomBytes(16), elementIdentifier: "portrait",
                                                   elementValue: .bytes([UInt8](repeating: 0xFF, count: 20 << 20))))
                    nextID += 1
                }
                if hostile.contains(.deepCBOR) {
                    chosen.append(IssuerSignedItem(taggedBytes: EmbeddedCBOR(wrapping: Self.rawItem(id: nextID, identifier: "family_name",
                                                                                                   value: [UInt8](repeating: 0x81, count: 100_000) + [0x00])),
                                                   digestID: nextID, elementIdentifier: "family_name"))
                    nextID += 1
                }
                if hostile.contains(.indefiniteBomb) {
                    let bomb = Self.indefiniteBomb
                    chosen.append(IssuerSignedItem(taggedBytes: EmbeddedCBOR(wrapping: Self.rawItem(id: nextID, identifier: "portrait", value: bomb)),
                                                   digestID: nextID, elementIdentifier: "portrait"))
                    nextID += 1
                }
            }
            for element in request.elements where element.namespace == namespace && !items.contains(where: { $0.elementIdentifier == element.identifier }) {
                errors.append((namespace, element.identifier, 0))
            }
            if !chosen.isEmpty { namespaces.append((namespace, chosen)) }
        }
        var issuerAuth = credential.issuerAuth
        if hostile.contains(.expiredSigner), let certificate = expiredSigner { issuerAuth = try credential.withSignerCertificate(certificate) }
        if hostile.contains(.untrustedIACA), let certificate = untrustedSigner { issuerAuth = try credential.withSignerCertificate(certificate) }
        let deviceNamespaces = EmbeddedCBOR(encoding: .map([:]))
        var payload = transcript.deviceAuthenticationBytes(docType: credential.docType, deviceNamespaces: deviceNamespaces)
        let auth: DeviceAuthentication
        switch deviceAuth {
        case .signature:
            if hostile.contains(.wrongDeviceSignature) { payload += [0x00] }
            auth = .signature(try COSESign1.sign(payload: payload, detached: true, key: credential.deviceKey, algorithm: .es256))
        case .mac:
            if hostile.contains(.wrongMAC) { payload += [0x00] }
            guard let device = credential.deviceKey.ecKey else { throw MdocError(.unsupported, "the device key is not EC") }
            let key = try transcript.eMacKey(curve: device.curve, privateScalar: device.scalar, peerKey: readerKey)
            auth = .mac(try COSEMac0.mac(payload: payload, detached: true, key: key))
        }
        return MdocDocument(docType: credential.docType, issuerNamespaces: namespaces, issuerAuth: issuerAuth,
                            deviceNamespacesBytes: deviceNamespaces, deviceAuth: auth, errors: errors)
    }

    /// An indefinite-length byte string of a million one-byte chunks (made once).
    static let indefiniteBomb: [UInt8] = {
        var bytes = [UInt8](repeating: 0x00, count: 2_000_002)
        bytes[0] = 0x5F
        var index = 1
        while index < 2_000_001 {
            bytes[index] = 0x41
            index += 2
        }
        bytes[2_000_001] = 0xFF
        return bytes
    }()

    /// An IssuerSignedItem's encoding with `value` spliced in as raw bytes.
    static func rawItem(id: UInt64, identifier: String, value: [UInt8]) -> [UInt8] {
        var encoder = CBOREncoder()
        encoder.encode(.map(["digestID": .unsigned(id), "random": .bytes(secureRandomBytes(16)), "elementIdentifier": .text(identifier)]))
        var bytes = encoder.bytes
        bytes[0] = 0xA4
        bytes += CBOR.text("elementValue").encoded() + value
        return bytes
    }
}
