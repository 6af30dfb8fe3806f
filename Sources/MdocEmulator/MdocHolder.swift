import CBORCoding
import COSE
import MRTDCrypto
import MRTDEmulator
import Mdoc
import MdocNFC
import SmartCardCore
import Synchronization

/// An emulated phone wallet (or mdoc card applet) at an NFC reader: an NFC Forum Type 4 Tag with
/// the engagement (static handover, or negotiated through TNEP), then the ISO 18013-5 NFC data
/// transfer application answering ENVELOPE and GET RESPONSE. Put into a real pcscd with `VPCDClient`.
public final class MdocHolder: VirtualCard {
    /// `qr`: the holder shows a QR code (`engageByQR`) instead of an NFC engagement; with BLE only.
    public enum Handover: String, Sendable, CaseIterable { case `static`, negotiated, qr }
    public enum DeviceAuth: String, Sendable, CaseIterable { case signature, mac }

    public let credential: MdocCredential
    public let handover: Handover
    public let deviceAuth: DeviceAuth
    public let hostile: Set<MdocHostileMode>
    /// Certificates hostile modes put into issuerAuth instead of the real signer's.
    let expiredSigner: [UInt8]?
    let untrustedSigner: [UInt8]?
    /// The data field limits announced in the NFC carrier record.
    public let commandLength: Int
    public let responseLength: Int
    /// With a service UUID (16 bytes) the holder behaves as the phone wallets do: its engagement
    /// and Handover Select offer BLE alone (mdoc peripheral server mode, LE role peripheral), and
    /// the session runs over GATT (`MdocBLEHolder` in MdocBLE serves it through BlueZ, calling
    /// `respondOverBLE`). Nil: NFC data transfer, as before.
    public let bleServiceUUID: [UInt8]?

    public let atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01]

    struct State {
        var application: [UInt8] = []
        var file: [UInt8] = []
        var ndefFile: [UInt8] = []
        var tnep: TNEPPhase = .idle
        var writeBuffer: [UInt8]?
        var handoverSelect: [UInt8]?
        var handoverRequest: [UInt8]?
        var engagement: DeviceEngagement?
        var ephemeral: (scalar: [UInt8], point: [UInt8])?
        var envelope: [UInt8] = []
        var pending: [UInt8] = []
        /// How much of `pending` was sent (an index, not removal: a 20 MB answer goes out in hundreds of chunks).
        var sent = 0
        var session: SessionEncryption?
        var transcript: SessionTranscript?
        var terminated = false
        var apdus = 0
        /// Requests answered, and what each asked for (for tests).
        var requests: [MdocRequest] = []
        var readerAuthenticated: [Bool] = []

        /// A new engagement's state: everything of the last one gone but what readers asked for.
        mutating func restart() {
            self = State(requests: requests, readerAuthenticated: readerAuthenticated)
        }
    }

    enum TNEPPhase { case idle, awaitingSelect, awaitingRequest, done }

    private let state = Mutex(State())

    public init(credential: MdocCredential, handover: Handover = .static, deviceAuth: DeviceAuth = .signature, hostile: Set<MdocHostileMode> = [],
                expiredSignerCertificate: [UInt8]? = nil, untrustedSignerCertificate: [UInt8]? = nil,
                commandLength: Int = 0xFFFF, responseLength: Int = 0x10000, bleServiceUUID: [UInt8]? = nil) {
        self.credential = credential
        self.handover = handover
        self.deviceAuth = deviceAuth
        self.hostile = hostile
        self.expiredSigner = expiredSignerCertificate
        self.untrustedSigner = untrustedSignerCertificate
        self.commandLength = commandLength
        self.responseLength = responseLength
        self.bleServiceUUID = bleServiceUUID?.count == 16 ? bleServiceUUID : nil
        reset()
    }

    // MARK: VirtualCard

    public var isRemoved: Bool { false }
    public var returnsByItself: Bool { false }

    public func reset() {
        state.withLock { $0.restart() }
    }

    public func reinsert() { reset() }

    public func answerDelay(commandBytes: Int, responseBytes: Int) -> Duration {
        hostile.contains(.slowAPDU) ? .seconds(1) : .zero
    }

    /// What readers asked for so far.
    public var requests: [MdocRequest] { state.withLock { $0.requests } }
    /// Per request, whether its readerAuth verified with the certificate it carried.
    public var readerAuthentication: [Bool] { state.withLock { $0.readerAuthenticated } }

    /// The engagement of the reader's last tap (nil before one): the BLE side serves the session
    /// it began (its Ident derives from the engagement's device key).
    public var currentEngagement: DeviceEngagement? { state.withLock { $0.engagement } }

    /// A QR engagement (ISO 18013-5 §8.2.2.3; `handover` `.qr` with a BLE service UUID): a fresh
    /// ephemeral key and DeviceEngagement, whose QR code's text (`mdoc:…`) is returned for the
    /// phone's screen; the session that follows has a null handover in its transcript. Nil for a
    /// holder engaged over NFC.
    public func engageByQR() -> String? {
        guard handover == .qr, bleServiceUUID != nil else { return nil }
        return state.withLock { state in
            state.restart()
            startEngagement(&state)
            return state.engagement?.qrCode
        }
    }

    /// The answer to a session message that arrived over BLE (empty: none to send).
    public func respondOverBLE(_ message: [UInt8]) -> [UInt8] {
        state.withLock { state in respond(to: message, &state) }
    }

    public func process(_ command: [UInt8]) -> VirtualCardOutput {
        .response(state.withLock { state in
            state.apdus += 1
            guard let apdu = try? CommandAPDU(bytes: command) else { return [0x67, 0x00] }
            return handle(apdu, &state)
        })
    }

    static let ok: [UInt8] = [0x90, 0x00]

    func handle(_ apdu: CommandAPDU, _ state: inout State) -> [UInt8] {
        switch (apdu.cla & 0xEF, apdu.ins) {
        case (0x00, 0xA4): return select(apdu, &state)
        case (0x00, 0xB0): return readBinary(apdu, &state)
        case (0x00, 0xD6): return updateBinary(apdu, &state)
        case (0x00, 0xC3): return envelope(apdu, &state)
        case (0x00, 0xC0): return getResponse(apdu, &state)
        default: return [0x6D, 0x00]
        }
    }

    // MARK: Type 4 Tag

    func select(_ apdu: CommandAPDU, _ state: inout State) -> [UInt8] {
        if apdu.p1 == 0x04 {
            if apdu.data == [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01] {
                state.restart()
                state.application = apdu.data
                startEngagement(&state)
                return Self.ok
            }
            if apdu.data == [0xA0, 0x00, 0x00, 0x02, 0x48, 0x04, 0x00] {
                guard state.handoverSelect != nil else { return [0x69, 0x85] }
                state.application = apdu.data
                return Self.ok
            }
            return [0x6A, 0x82]
        }
        guard apdu.p1 == 0x00, apdu.p2 == 0x0C, state.application.first == 0xD2 else { return [0x6A, 0x86] }
        guard apdu.data == [0xE1, 0x03] || apdu.data == [0xE1, 0x04] else { return [0x6A, 0x82] }
        state.file = apdu.data
        return Self.ok
    }

    var capabilityContainer: [UInt8] {
        let size = 0x7FFF
        return [0x00, 0x0F, 0x20, 0x00, 0xFF, 0x00, 0xFF, 0x04, 0x06, 0xE1, 0x04, UInt8(size >> 8), UInt8(size & 0xFF), 0x00,
                handover == .negotiated ? 0x00 : 0xFF]
    }

    func startEngagement(_ state: inout State) {
        guard let pair = try? EllipticCurve.nistP256.generateKeyPair(),
              let engagement = DeviceEngagement.make(deviceKey: COSEKey(curve: .p256, publicKey: pair.publicKey),
                                                     retrievalMethods: bleServiceUUID.map { [.ble(peripheralServer: true, centralClient: false, peripheralUUID: $0,
                                                                                                   centralUUID: nil, address: nil)] } ?? []) else { return }
        state.ephemeral = (pair.privateKey, pair.publicKey)
        state.engagement = engagement
        switch handover {
        case .static:
            let select = handoverSelect(engagement)
            state.handoverSelect = select
            state.ndefFile = Self.withLength(select)
        case .negotiated:
            let service = Array("urn:nfc:sn:handover".utf8)
            let parameter = NDEFRecord(format: .wellKnown, type: "Tp", payload: [0x10, UInt8(service.count)] + service + [0x00, 0x00, 0x0F, 0x7F, 0xFF])
            state.ndefFile = Self.withLength(NDEFMessage(records: [parameter]).encoded)
            state.tnep = .awaitingSelect
        case .qr:
            break
        }
        if hostile.contains(.ndefLengthLies) { state.ndefFile[0] = 0x20; state.ndefFile[1] = 0x00 }
    }

    /// Hs with the NFC carrier ("nfc", auxiliary "mdoc") and the DeviceEngagement record; with
    /// BLE, the BLE carrier alone (LE role peripheral only, the service UUID as a 128-bit AD).
    func handoverSelect(_ engagement: DeviceEngagement) -> [UInt8] {
        if let uuid = bleServiceUUID {
            let alternative = NDEFRecord(format: .wellKnown, type: "ac", payload: [0x01, 0x01] + Array("0".utf8) + [0x01, 0x04] + Array("mdoc".utf8))
            let select = NDEFRecord(format: .wellKnown, type: "Hs", payload: [0x15] + NDEFMessage(records: [alternative]).encoded)
            let carrier = NDEFRecord(format: .media, type: "application/vnd.bluetooth.le.oob", identifier: "0",
                                     payload: [0x02, 0x1C, 0x00, 0x11, 0x07] + uuid.reversed())
            let engagementRecord = NDEFRecord(format: .external, type: "iso.org:18013:deviceengagement", identifier: "mdoc", payload: engagement.bytes)
            return NDEFMessage(records: [select, carrier, engagementRecord]).encoded
        }
        let alternative = NDEFRecord(format: .wellKnown, type: "ac", payload: [0x01, 0x03] + Array("nfc".utf8) + [0x01, 0x04] + Array("mdoc".utf8))
        let select = NDEFRecord(format: .wellKnown, type: "Hs", payload: [0x15] + NDEFMessage(records: [alternative]).encoded)
        func field(_ type: UInt8, _ value: Int) -> [UInt8] {
            let bytes: [UInt8] = value < 0x100 ? [UInt8(value)] : value < 0x10000 ? [UInt8(value >> 8), UInt8(value & 0xFF)] : [UInt8(value >> 16), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
            return [UInt8(bytes.count + 1), type] + bytes
        }
        let carrier = NDEFRecord(format: .external, type: "iso.org:18013:nfc", identifier: "nfc",
                                 payload: [0x01] + field(0x01, commandLength) + field(0x02, responseLength))
        let engagementRecord = NDEFRecord(format: .external, type: "iso.org:18013:deviceengagement", identifier: "mdoc", payload: engagement.bytes)
        return NDEFMessage(records: [select, carrier, engagementRecord]).encoded
    }

    static func withLength(_ message: [UInt8]) -> [UInt8] { [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message }

    func readBinary(_ apdu: CommandAPDU, _ state: inout State) -> [UInt8] {
        let content: [UInt8]
        switch state.file {
        case [0xE1, 0x03]: content = capabilityContainer
        case [0xE1, 0x04]: content = state.ndefFile
        default: return [0x69, 0x86]
        }
        let offset = Int(apdu.p1) << 8 | Int(apdu.p2)
        guard offset <= content.count else { return [0x6B, 0x00] }
        let count = min(apdu.ne ?? 256, content.count - offset)
        return Array(content[offset..<(offset + count)]) + Self.ok
    }

    func updateBinary(_ apdu: CommandAPDU, _ state: inout State) -> [UInt8] {
        guard handover == .negotiated, state.file == [0xE1, 0x04] else { return [0x69, 0x86] }
        let offset = Int(apdu.p1) << 8 | Int(apdu.p2)
        if offset == 0, apdu.data.count == 2 {
            let length = Int(apdu.data[0]) << 8 | Int(apdu.data[1])
            if length == 0 {
                state.writeBuffer = []
                state.ndefFile = [0, 0]
                return Self.ok
            }
            guard let written = state.writeBuffer, written.count == length else { return [0x67, 0x00] }
            state.writeBuffer = nil
            return completeWrite(written, &state)
        }
        guard var buffer = state.writeBuffer, offset == buffer.count + 2, buffer.count + apdu.data.count <= 0x7FFD else { return [0x6A, 0x86] }
        buffer += apdu.data
        state.writeBuffer = buffer
        return Self.ok
    }

    func completeWrite(_ message: [UInt8], _ state: inout State) -> [UInt8] {
        guard let parsed = try? NDEFMessage(bytes: message) else { return [0x6A, 0x80] }
        switch state.tnep {
        case .awaitingSelect:
            guard let select = parsed.first(.wellKnown, "Ts"), select.payload.dropFirst() == ArraySlice("urn:nfc:sn:handover".utf8) else {
                state.ndefFile = Self.withLength(NDEFMessage(records: [NDEFRecord(format: .wellKnown, type: "Te", payload: [0x01])]).encoded)
                return Self.ok
            }
            state.tnep = .awaitingRequest
            state.ndefFile = Self.withLength(NDEFMessage(records: [NDEFRecord(format: .wellKnown, type: "Te", payload: [0x00])]).encoded)
        case .awaitingRequest:
            guard parsed.first(.wellKnown, "Hr") != nil, let engagement = state.engagement else { return [0x6A, 0x80] }
            let select = handoverSelect(engagement)
            state.handoverRequest = message
            state.handoverSelect = select
            state.ndefFile = Self.withLength(select)
            state.tnep = .done
        case .idle, .done:
            return [0x69, 0x85]
        }
        return Self.ok
    }

    // MARK: Data transfer

    func envelope(_ apdu: CommandAPDU, _ state: inout State) -> [UInt8] {
        guard state.application == [0xA0, 0x00, 0x00, 0x02, 0x48, 0x04, 0x00] else { return [0x69, 0x85] }
        guard state.envelope.count + apdu.data.count <= 1 << 20 else { return [0x6A, 0x84] }
        state.envelope += apdu.data
        if apdu.cla & 0x10 != 0 { return Self.ok }
        let wrapped = state.envelope
        state.envelope = []
        guard let message = try? EnvelopeTransport.unwrap(wrapped) else { return [0x6A, 0x80] }
        let answer = respond(to: message, &state)
        if answer.isEmpty { return Self.ok }
        state.pending = EnvelopeTransport.wrap(answer)
        state.sent = 0
        return nextChunk(ne: apdu.ne ?? 256, &state)
    }

    func getResponse(_ apdu: CommandAPDU, _ state: inout State) -> [UInt8] {
        if hostile.contains(.getResponseForever) { return [UInt8](repeating: 0x5A, count: min(apdu.ne ?? 256, 0xFFFD)) + [0x61, 0x00] }
        guard state.sent < state.pending.count else { return [0x69, 0x85] }
        return nextChunk(ne: apdu.ne ?? 256, &state)
    }

    /// ISO 18013-5 §8.3.3.1.2: Le bytes, then 61 XX (XX the bytes left, when at most Le + 255) or 61 00.
    func nextChunk(ne: Int, _ state: inout State) -> [UInt8] {
        // vpcd carries at most 65,535 bytes an answer: data and status word.
        let end = min(state.pending.count, state.sent + min(ne, 0xFFFD))
        let chunk = Array(state.pending[state.sent..<end])
        state.sent = end
        let left = state.pending.count - end
        if hostile.contains(.getResponseForever) { return chunk + [UInt8](repeating: 0x5A, count: min(ne, 0xFFFD) - chunk.count) + [0x61, 0x00] }
        if left == 0 {
            state.pending = []
            state.sent = 0
            return chunk + Self.ok
        }
        return chunk + [0x61, left <= 255 ? UInt8(left) : 0x00]
    }

    /// The answer to one session message (SessionEstablishment or SessionData), or nothing.
    func respond(to message: [UInt8], _ state: inout State) -> [UInt8] {
        if state.session == nil {
            guard let (readerKeyBytes, readerKey, data) = try? SessionMessage.parseEstablishment(message, limits: DeviceRequest.limits),
                  let engagement = state.engagement, let ephemeral = state.ephemeral, handover == .qr || state.handoverSelect != nil else {
                return SessionMessage.data(nil, status: SessionMessage.statusDecodingError)
            }
            // After a QR engagement the handover is null (§9.1.5.1).
            let transcript = handover == .qr
                ? SessionTranscript(deviceEngagement: engagement.bytes, readerKey: readerKeyBytes, handover: .null)
                : SessionTranscript(deviceEngagement: engagement.bytes, readerKey: readerKeyBytes,
                                    handoverSelect: state.handoverSelect ?? [], handoverRequest: state.handoverRequest)
            guard var session = try? SessionEncryption(role: .device, curve: .nistP256, privateScalar: ephemeral.scalar, peerKey: readerKey, transcript: transcript) else {
                return SessionMessage.data(nil, status: SessionMessage.statusEncryptionError)
            }
            state.transcript = transcript
            guard let plaintext = try? session.decrypt(data) else {
                state.session = session
                return SessionMessage.data(nil, status: SessionMessage.statusEncryptionError)
            }
            if hostile.contains(.decline) {
                state.session = session
                return SessionMessage.data(nil, status: SessionMessage.statusTermination)
            }
            let response = answer(request: plaintext, transcript: transcript, readerKey: readerKey, &state)
            if hostile.contains(.reusedIV) {
                // Encrypted as if by the reader, whose counter 1 is spent: the reader must refuse it.
                var reader = (try? SessionEncryption(role: .reader, curve: .nistP256, privateScalar: ephemeral.scalar, peerKey: readerKey, transcript: transcript))
                let sealed = (try? reader?.encrypt(response)) ?? []
                state.session = session
                return SessionMessage.data(sealed)
            }
            let sealed = (try? session.encrypt(response)) ?? []
            state.session = session
            return SessionMessage.data(sealed)
        }
        // A later SessionData: termination, or another request.
        guard let parsed = try? SessionMessage.parseData(message, limits: DeviceRequest.limits) else {
            return SessionMessage.data(nil, status: SessionMessage.statusDecodingError)
        }
        if parsed.status == SessionMessage.statusTermination {
            state.terminated = true
            state.session = nil
            return hostile.contains(.garbageAfterSession) ? [0xDE, 0xAD, 0xBE, 0xEF, 0xFF, 0x00, 0x13, 0x37] : []
        }
        guard var session = state.session, let data = parsed.data, let transcript = state.transcript,
              let readerKeyItem = transcript.readerKeyBytes, let readerKeyCBOR = try? readerKeyItem.decoded(), let readerKey = try? COSEKey(cbor: readerKeyCBOR),
              let plaintext = try? session.decrypt(data) else {
            return SessionMessage.data(nil, status: SessionMessage.statusEncryptionError)
        }
        let response = answer(request: plaintext, transcript: transcript, readerKey: readerKey, &state)
        let sealed = (try? session.encrypt(response)) ?? []
        state.session = session
        return SessionMessage.data(sealed)
    }
}
