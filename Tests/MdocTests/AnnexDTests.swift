import CBORCoding
import COSE
import Foundation
import MRTDCrypto
import Mdoc
import TestSupport
import TestTraits
import Testing

/// ISO/IEC 18013-5:2021 Annex D, byte for byte: one negotiated-handover session's transcript,
/// session keys, the encrypted request and response, issuer data authentication, the element
/// digests, EMacKey and deviceMac, reader authentication.
@Suite(.needsSharedFixtures)
struct AnnexDTests {
    let vectors: [String: [UInt8]]

    init() throws {
        let data = try Data(contentsOf: TestFixtures.sharedURL("mdoc-annex-d/vectors.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        vectors = json.compactMapValues(hexBytes)
    }

    func vector(_ name: String) throws -> [UInt8] { try #require(vectors[name], "no \(name) in vectors.json") }

    /// Inside the DS certificate's validity (2020-10-01 … 2021-10-01) and the MSO's.
    static let readTime = MdocTime.seconds(dateTime: "2020-10-01T14:00:00Z") ?? 0

    var transcript: SessionTranscript { get throws { try SessionTranscript(bytes: try vector("SESSION_TRANSCRIPT_BYTES")) } }

    var readerScalar: [UInt8] { get throws { try vector("EPHEMERAL_READER_KEY_D") } }

    @Test func sessionTranscriptHoldsTheEngagementAndBothHandoverMessages() throws {
        let transcript = try self.transcript
        #expect(transcript.bytes.taggedBytes == (try vector("SESSION_TRANSCRIPT_BYTES")))
        let engagement = try DeviceEngagement(bytes: try #require(transcript.deviceEngagementBytes))
        #expect(engagement.deviceKey.publicKey == [0x04] + (try vector("EPHEMERAL_DEVICE_KEY_X")) + (try vector("EPHEMERAL_DEVICE_KEY_Y")))
        #expect(engagement.deviceKeyBytes.taggedBytes == (try vector("E_DEVICE_KEY_BYTES")))
        let handover = try #require(transcript.item.arrayValue?[2].arrayValue)
        #expect(handover.count == 2)
        #expect(handover[0].bytesValue?.prefix(4) == [0x91, 0x02, 0x0F, 0x48])
    }

    @Test func readerDecryptsTheRequestTheDeviceDecryptsIt() throws {
        let transcript = try self.transcript
        let engagement = try DeviceEngagement(bytes: try #require(transcript.deviceEngagementBytes))
        let (readerKeyBytes, readerKey, data) = try SessionMessage.parseEstablishment(try vector("SESSION_ESTABLISHMENT"), limits: .default)
        #expect(readerKeyBytes == transcript.readerKeyBytes)
        // The device side: its ephemeral private key with the reader's key.
        var device = try SessionEncryption(role: .device, curve: .nistP256, privateScalar: try vector("EPHEMERAL_DEVICE_KEY_D"),
                                           peerKey: readerKey, transcript: transcript)
        #expect(try device.decrypt(data) == (try vector("DEVICE_REQUEST")))
        // The reader side encrypts the same request to the same bytes (same key, same counter).
        var reader = try SessionEncryption(role: .reader, curve: .nistP256, privateScalar: try readerScalar,
                                           peerKey: engagement.deviceKey, transcript: transcript)
        #expect(try reader.encrypt(try vector("DEVICE_REQUEST")) == data)
        // The response the other way.
        let (sessionData, status) = try SessionMessage.parseData(try vector("SESSION_DATA"), limits: .default)
        #expect(status == nil)
        #expect(try reader.decrypt(try #require(sessionData)) == (try vector("DEVICE_RESPONSE")))
        // The same message again is a replay: counter 2 does not open counter 1's ciphertext.
        #expect(throws: MdocError.self) { try reader.decrypt(try #require(sessionData)) }
        let termination = try SessionMessage.parseData(try vector("SESSION_TERMINATION"), limits: .default)
        #expect(termination.status == 20 && termination.data == nil)
    }

    @Test func theRequestParsesAndItsReaderAuthenticationVerifies() throws {
        let request = try DeviceRequest(bytes: try vector("DEVICE_REQUEST"))
        let doc = try #require(request.docRequests.first)
        #expect(doc.request.docType == MdocDocType.mDL)
        #expect(doc.itemsRequestBytes.content == (try vector("ITEMS_REQUEST")))
        #expect(doc.request.contains(namespace: "org.iso.18013.5.1", identifier: "family_name"))
        let readerAuth = try #require(doc.readerAuth)
        #expect(try readerAuth.headers.x5chain() == [try vector("READER_CERT")])
        let certificate = try Certificate(bytes: try vector("READER_CERT"))
        let key = try PublicKey(subjectPublicKeyInfo: certificate.subjectPublicKeyInfo)
        let payload = try ReaderAuthentication.payload(transcript: transcript, itemsRequestBytes: doc.itemsRequestBytes)
        try readerAuth.verify(key: key, detachedPayload: payload)
        #expect(certificate.isSignatureValid(issuer: try Certificate(bytes: try vector("READER_ROOT_CERT"))))
        // Any other payload fails.
        #expect(throws: COSEError.self) { try readerAuth.verify(key: key, detachedPayload: payload + [0]) }
    }

    func verifier(at time: Double = AnnexDTests.readTime, anchors: [String] = ["IACA_CERT"]) throws -> MdocVerifier {
        MdocVerifier(trustAnchors: try anchors.map { try Certificate(bytes: try vector($0)) }, time: time)
    }

    func document(_ response: [UInt8]? = nil) throws -> MdocDocument {
        let parsed = try DeviceResponse(bytes: try response ?? vector("DEVICE_RESPONSE"))
        #expect(parsed.status == 0)
        return try #require(parsed.documents.first)
    }

    @Test func issuerAndDeviceAreValidInsideTheSignersValidity() throws {
        let document = try self.document()
        let request = try DeviceRequest(bytes: try vector("DEVICE_REQUEST")).docRequests[0].request
        let result = try verifier().verify(document, transcript: try transcript, request: request,
                                           readerKey: .init(curve: .nistP256, scalar: try readerScalar))
        #expect(result.issuer == .valid, "\(result.issuerReason ?? "")")
        #expect(result.device == .valid, "\(result.deviceReason ?? "")")
        #expect(result.deviceAuthentication == "mac")
        #expect(result.withheld.isEmpty)
        #expect(result.value("family_name") == .text("Doe"))
        #expect(result.value("portrait")?.bytesValue == (try vector("DEVICE_RESPONSE_PORTRAIT_DATA")))
        #expect(result.documentSigner?.contains("utopia") == true)
    }

    @Test func afterTheSignerExpiredTheIssuerIsExpiredNotValid() throws {
        let result = try verifier(at: MdocTime.seconds(dateTime: "2026-11-27T12:00:00Z") ?? 0)
            .verify(try document(), transcript: try transcript, request: nil, readerKey: .init(curve: .nistP256, scalar: try readerScalar))
        #expect(result.issuer == .expired)
        #expect(result.device == .valid)
    }

    @Test func withoutTheIACAItIsUntrusted() throws {
        let result = try verifier(anchors: ["READER_ROOT_CERT"])
            .verify(try document(), transcript: try transcript, request: nil, readerKey: .init(curve: .nistP256, scalar: try readerScalar))
        #expect(result.issuer == .untrusted)
    }

    @Test func withoutTheReaderKeyTheMACCannotBeChecked() throws {
        let result = try verifier().verify(try document(), transcript: try transcript, request: nil, readerKey: nil)
        #expect(result.device == .invalid)
        #expect(result.deviceReason?.contains("ephemeral") == true)
    }

    @Test func anotherSessionsTranscriptFailsTheMAC() throws {
        let other = SessionTranscript(deviceEngagement: try #require(try transcript.deviceEngagementBytes),
                                      readerKey: try #require(try transcript.readerKeyBytes), handover: .null)
        let result = try verifier().verify(try document(), transcript: other, request: nil, readerKey: .init(curve: .nistP256, scalar: try readerScalar))
        #expect(result.issuer == .valid)
        #expect(result.device == .invalid)
    }

    /// One changed byte inside one element: that element is withheld, the issuer stays valid for the rest.
    @Test func oneChangedByteInAnElementWithholdsThatElement() throws {
        var response = try vector("DEVICE_RESPONSE")
        let needle = Array("Doe".utf8)
        let at = try #require(response.firstRange(of: needle))
        response[at.lowerBound] = UInt8(ascii: "M")
        let result = try verifier().verify(try document(response), transcript: try transcript, request: nil,
                                           readerKey: .init(curve: .nistP256, scalar: try readerScalar))
        #expect(result.issuer == .valid)
        #expect(result.device == .valid)
        #expect(result.value("family_name") == nil)
        #expect(result.withheld.contains { $0.identifier == "family_name" && $0.reason == .digestMismatch })
        #expect(result.elements.count >= 2)
    }

    @Test func aChangedMSOMakesTheIssuerInvalidAndWithholdsEverything() throws {
        var response = try vector("DEVICE_RESPONSE")
        let needle = Array("validUntil".utf8)
        let at = try #require(response.firstRange(of: needle))
        response[at.upperBound + 10] ^= 0x01
        let result = try verifier().verify(try document(response), transcript: try transcript, request: nil,
                                           readerKey: .init(curve: .nistP256, scalar: try readerScalar))
        #expect(result.issuer == .invalid)
        #expect(result.elements.isEmpty)
        #expect(result.device == .invalid)
    }

    @Test func elementsNotRequestedAreWithheld() throws {
        let request = try MdocRequest(docType: MdocDocType.mDL, elements: [.init(namespace: "org.iso.18013.5.1", identifier: "family_name")])
        let result = try verifier().verify(try document(), transcript: try transcript, request: request,
                                           readerKey: .init(curve: .nistP256, scalar: try readerScalar))
        #expect(result.elements.map(\.identifier) == ["family_name"])
        #expect(result.withheld.contains { $0.reason == .notRequested })
    }

    @Test func encodingTheParsedResponseGivesTheSameBytes() throws {
        let response = try DeviceResponse(bytes: try vector("DEVICE_RESPONSE"))
        #expect(response.encoded == (try vector("DEVICE_RESPONSE")))
    }
}

/// Bytes of a hex string (nil for anything else).
func hexBytes(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count.isMultiple(of: 2) else { return nil }
    var result: [UInt8] = []
    result.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[index...(index + 1)], as: UTF8.self), radix: 16) else { return nil }
        result.append(byte)
    }
    return result
}
