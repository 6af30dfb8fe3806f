import CBORCoding
import COSE
import MRTDCrypto
import Mdoc
import SmartCardCore

/// How a read is done and what it may cost.
public struct MdocReadOptions: Sendable {
    public enum Handover: String, Sendable, CaseIterable {
        /// Whichever the holder offers: a Handover Select in the NDEF file, else TNEP.
        case automatic, `static`, negotiated
    }

    public var requests: [MdocRequest]
    public var readerKey: ReaderAuthenticationKey?
    /// The whole read, from the first APDU to the decrypted response.
    public var timeout: Duration
    public var handover: Handover
    /// The most APDUs one read may take (a holder answering 61XX forever is stopped here).
    public var maximumExchanges: Int
    public var responseLimits: CBORLimits
    /// Which carrier moves the session: `auto` follows the holder (NFC when it offers NFC, else
    /// `alternative` when it offers that), `nfc` or `ble` insist.
    public var transport: Transport = .auto
    /// Over BLE, whether a holder's L2CAP channel is used when its service offers one (else GATT).
    public var l2cap = true
    /// A carrier other than NFC this kiosk can use now (BLE with a powered adapter), or nil.
    public var alternative: MdocAlternativeCarrier?

    public enum Transport: String, Sendable, CaseIterable {
        case auto, nfc, ble
    }

    /// The limits of a session message (the response's, and room for SessionData around it).
    var sessionLimits: CBORLimits {
        var limits = responseLimits
        limits.maximumBytes += 64
        return limits
    }

    public init(requests: [MdocRequest], readerKey: ReaderAuthenticationKey? = nil, timeout: Duration = .seconds(30),
                handover: Handover = .automatic, maximumExchanges: Int = 4096, responseLimits: CBORLimits = DeviceResponse.limits) {
        self.requests = requests
        self.readerKey = readerKey
        self.timeout = timeout
        self.handover = handover
        self.maximumExchanges = maximumExchanges
        self.responseLimits = responseLimits
    }
}

/// What one read brought back, before verification: everything `mdoc verify` needs to check it
/// again elsewhere (the transcript, the plaintext response, the reader's ephemeral key).
public struct MdocReadOutcome: Sendable {
    /// "static" or "negotiated" (NFC), or "qr".
    public let handover: String
    public let engagement: DeviceEngagement
    public let transcript: SessionTranscript
    public let request: DeviceRequest
    /// The DeviceResponse as decrypted, byte for byte.
    public let responseBytes: [UInt8]
    public let response: DeviceResponse
    public let readerEphemeralKey: MdocVerifier.ReaderEphemeralKey
    public let exchanges: Int
    /// The ENVELOPE limits in use (command, response data field).
    public let commandLength: Int
    public let responseLength: Int
    /// "nfc", or the alternative carrier's name ("ble").
    public var carrier: String = "nfc"
    /// Seconds: `engagement` (NFC), then the carrier's own phases (`scan`, `connect`, `transfer`).
    public var timings: [String: Double] = [:]
    /// How the BLE link ran (nil for NFC).
    public var link: MdocCarrierLink?
}

/// Reads an mdoc presented over NFC (ISO 18013-5): engagement through the Type 4 Tag (static or
/// negotiated handover), then session establishment and data retrieval with ENVELOPE.
public enum MdocNFCReader {
    public static func read(connection: any CardConnection, options: MdocReadOptions) async throws(MdocError) -> MdocReadOutcome {
        guard !options.requests.isEmpty else { throw MdocError(.invalidRequest, "nothing to request") }
        let capabilities = await connection.capabilities()
        let extended = capabilities.extendedLength ?? connection.supportsExtendedLength
        let channel = HolderChannel(connection: connection, deadline: .now + options.timeout, extendedLength: extended,
                                    maximumExchanges: options.maximumExchanges)
        let started = ContinuousClock.now
        let (handover, select, requestMessage) = try await engage(channel, mode: options.handover, alternative: options.alternative)
        let engagement = select.deviceEngagement

        // The NFC carrier: from the Handover Select, else from the DeviceEngagement.
        var limits: (command: Int, response: Int)?
        for carrier in select.carriers {
            if case .nfc(let command, let response) = carrier { limits = (command, response) }
        }
        if limits == nil {
            for method in engagement.retrievalMethods {
                if case .nfc(let command, let response) = method { limits = (command, response) }
            }
        }
        let offered = Set(select.carriers.map(\.name) + engagement.retrievalMethods.map(\.name)).sorted()
        let alternative = options.alternative.flatMap { $0.offered(engagement, select) ? $0 : nil }
        let useAlternative: Bool
        switch options.transport {
        case .nfc:
            useAlternative = false
        case .ble:
            guard let alternative, alternative.name == "ble" else {
                throw MdocError(.unsupported, offered.contains("ble")
                    ? (options.alternative == nil ? "the holder offers BLE, but this kiosk cannot use it now (doctor's bluetooth check says why)"
                                                  : "the holder's BLE offer names no mode and service UUID this reader can use")
                    : "the holder offers data retrieval over \(offered.isEmpty ? "no carrier" : offered.joined(separator: ", ")), not BLE")
            }
            useAlternative = true
        case .auto:
            useAlternative = limits == nil && alternative != nil
        }
        if !useAlternative, limits == nil {
            let carriers = offered.isEmpty ? "no carrier" : offered.joined(separator: ", ")
            if options.transport == .nfc {
                throw MdocError(.unsupported, "the holder offers data retrieval over \(carriers), not NFC, and the read was limited to NFC (transport nfc)")
            }
            let why = !offered.contains("ble") ? ""
                : options.alternative == nil ? "; BLE needs a powered Bluetooth adapter (doctor's bluetooth check says why)"
                : "; its BLE offer names no mode and service UUID this reader can use"
            throw MdocError(.unsupported, "the holder offers data retrieval over \(carriers), not NFC\(why)")
        }
        let engaged = ContinuousClock.now
        let established = try await establish(engagement: engagement, handover: .array([.bytes(select.bytes), requestMessage.map(CBOR.bytes) ?? .null]),
                                              options: options)

        // Data retrieval: over the alternative carrier, or ENVELOPE on this NFC connection.
        if useAlternative, let alternative {
            return try await retrieve(over: alternative, established, engagement: engagement, select: select, handover: handover,
                                      deadline: channel.deadline, options: options, engagementSeconds: Self.seconds(engaged - started),
                                      exchanges: channel.exchanges)
        }
        let transport = EnvelopeTransport(channel: channel, holderCommandLength: limits?.command ?? 255, holderResponseLength: limits?.response ?? 256,
                                          maximumMessage: options.responseLimits.maximumBytes + 64, readerDataLimit: capabilities.maxAPDUDataSize)
        try await transport.selectApplication()
        let transferStarted = ContinuousClock.now
        let answer = try await transport.exchange(established.message)
        var encryption = established.encryption
        let (responseBytes, response) = try Self.open(answer, session: &encryption, limits: options.sessionLimits, options: options)

        // SessionTermination: best effort; whatever the holder answers to it changes nothing read.
        _ = try? await transport.exchange(SessionMessage.data(nil, status: SessionMessage.statusTermination))

        var outcome = MdocReadOutcome(handover: handover, engagement: engagement, transcript: established.transcript, request: established.request,
                                      responseBytes: responseBytes, response: response, readerEphemeralKey: established.readerKey,
                                      exchanges: channel.exchanges, commandLength: transport.commandLength, responseLength: transport.responseLength)
        outcome.timings = ["engagement": Self.seconds(engaged - started), "transfer": Self.seconds(ContinuousClock.now - transferStarted)]
        return outcome
    }

    /// The session set up for an engagement (ISO 18013-5 §9.1.1): our ephemeral key on the
    /// holder's curve, the transcript with `handover` (the NFC handover messages, or null after
    /// a QR engagement), the session keys and the SessionEstablishment carrying the request.
    struct Established {
        let transcript: SessionTranscript
        let encryption: SessionEncryption
        let request: DeviceRequest
        let message: [UInt8]
        let readerKey: MdocVerifier.ReaderEphemeralKey
    }

    static func establish(engagement: DeviceEngagement, handover: CBOR, options: MdocReadOptions) async throws(MdocError) -> Established {
        guard let curve = engagement.deviceKey.curve.ellipticCurve else {
            throw MdocError(.unsupported, "the holder's ephemeral key is on \(engagement.deviceKey.curve); this reader agrees keys on NIST and Brainpool curves")
        }
        let pair: (privateKey: [UInt8], publicKey: [UInt8])
        do { pair = try curve.generateKeyPair() } catch { throw MdocError(.sessionEncryption, "generating the reader's key: \(error.reason)") }
        guard let readerCurve = COSEKey.Curve(curve) else { throw MdocError(.unsupported, "no COSE name for \(curve.name)") }
        let readerKeyBytes = EmbeddedCBOR(encoding: COSEKey(curve: readerCurve, publicKey: pair.publicKey).cbor())
        let transcript = SessionTranscript(deviceEngagement: engagement.bytes, readerKey: readerKeyBytes, handover: handover)
        var encryption = try SessionEncryption(role: .reader, curve: curve, privateScalar: pair.privateKey, peerKey: engagement.deviceKey, transcript: transcript)
        let request = try await DeviceRequest(requests: options.requests, transcript: transcript, readerKey: options.readerKey)
        let message = SessionMessage.establishment(readerKey: readerKeyBytes, data: try encryption.encrypt(request.encoded))
        return Established(transcript: transcript, encryption: encryption, request: request, message: message,
                           readerKey: .init(curve: curve, scalar: pair.privateKey))
    }

    /// The session over a carrier other than NFC: opened inside `deadline`, the request sent, the
    /// answer decrypted, the session ended (BLE: State 0x02).
    static func retrieve(over alternative: MdocAlternativeCarrier, _ established: Established, engagement: DeviceEngagement,
                         select: HandoverSelect?, handover: String, deadline: ContinuousClock.Instant, options: MdocReadOptions,
                         engagementSeconds: Double, exchanges: Int) async throws(MdocError) -> MdocReadOutcome {
        let session: any MdocSessionChannel
        do {
            session = try await alternative.open(engagement, select, deadline)
        } catch let error as MdocError {
            throw error
        } catch {
            throw MdocError(.bleTransport, "opening \(alternative.name): \(error)")
        }
        let answer: [UInt8]
        do {
            answer = try await session.exchange(established.message)
        } catch {
            await session.end()
            throw error
        }
        await session.end()
        var encryption = established.encryption
        let responseBytes: [UInt8]
        do {
            responseBytes = try Self.unsealed(answer, session: &encryption, limits: options.sessionLimits)
        } catch where Self.looksGarbled(error, at: .envelope) {
            guard let hint = session.garbledAnswerHint else { throw error }
            throw MdocError(error.code, error.reason + " — " + hint)
        }
        // Decrypted, so authentic: what its DeviceResponse breaks is the holder's own doing.
        let response = try DeviceResponse(bytes: responseBytes, limits: options.responseLimits)
        var outcome = MdocReadOutcome(handover: handover, engagement: engagement, transcript: established.transcript, request: established.request,
                                      responseBytes: responseBytes, response: response, readerEphemeralKey: established.readerKey,
                                      exchanges: exchanges, commandLength: 0, responseLength: 0)
        outcome.carrier = session.carrier
        outcome.link = session.link
        outcome.timings = session.timings.merging(["engagement": engagementSeconds]) { $1 }
        return outcome
    }

    /// Where in the holder's answer an error arose: its envelope (SessionData parsed, its status
    /// judged, its data decrypted: `unsealed`) or the DeviceResponse decrypted from it.
    package enum AnswerStage: Sendable { case envelope, response }

    /// What an answer put together from pieces out of order can look like (BLE notifications over
    /// Enhanced ATT's channels), in its envelope: a tag that does not verify, CBOR that does not
    /// parse, or a SessionData whose scrambled length header claims more than the limits allow
    /// (seen in the BlueZ VM: "a string of 3263527695 bytes"). Nothing that a decrypted — authentic
    /// — DeviceResponse breaks is this: its bytes are the holder's, however many items they hold.
    package static func looksGarbled(_ error: MdocError, at stage: AnswerStage) -> Bool {
        stage == .envelope && [.sessionEncryption, .malformed, .limitExceeded].contains(error.code)
    }

    static func seconds(_ duration: Duration) -> Double {
        ((Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) * 1000).rounded() / 1000
    }

    /// The holder's SessionData: its status judged, its data decrypted and decoded.
    static func open(_ answer: [UInt8], session: inout SessionEncryption, limits: CBORLimits,
                     options: MdocReadOptions) throws(MdocError) -> ([UInt8], DeviceResponse) {
        let responseBytes = try unsealed(answer, session: &session, limits: limits)
        return (responseBytes, try DeviceResponse(bytes: responseBytes, limits: options.responseLimits))
    }

    /// The holder's SessionData's envelope: parsed, its status judged, its data decrypted (the
    /// DeviceResponse's bytes, not yet decoded).
    static func unsealed(_ answer: [UInt8], session: inout SessionEncryption, limits: CBORLimits) throws(MdocError) -> [UInt8] {
        guard !answer.isEmpty else { throw MdocError(.sessionTerminated, "the holder answered the request with nothing") }
        let (data, status) = try SessionMessage.parseData(answer, limits: limits)
        guard let data else {
            switch status {
            case SessionMessage.statusTermination: throw MdocError(.noDocument, "the holder ended the session without a response (declined)")
            case SessionMessage.statusEncryptionError: throw MdocError(.sessionEncryption, "the holder could not decrypt the request (status 10)")
            case SessionMessage.statusDecodingError: throw MdocError(.malformed, "the holder could not decode the request (status 11)")
            default: throw MdocError(.sessionTerminated, "the holder answered status \(status.map(String.init) ?? "none") without data")
            }
        }
        return try session.decrypt(data)
    }

    /// The engagement: the Handover Select read (static) or negotiated through TNEP, and the
    /// Handover Request we wrote (nil for static).
    static func engage(_ channel: HolderChannel, mode: MdocReadOptions.Handover,
                       alternative: MdocAlternativeCarrier? = nil) async throws(MdocError) -> (String, HandoverSelect, [UInt8]?) {
        let tag = try await TypeFourTag.open(channel, limits: NDEFLimits())
        try await tag.selectFile()
        let initialBytes = try await tag.readMessage()
        let initial = try NDEFMessage(bytes: initialBytes)
        if initial.records.first?.isType(.wellKnown, "Hs") == true {
            guard mode != .negotiated else { throw MdocError(.engagement, "the holder offers static handover only; negotiated was asked for") }
            return ("static", try HandoverSelect(bytes: initialBytes), nil)
        }
        guard let service = try TNEPService(initialMessage: initial) else {
            throw MdocError(.noDocument, "the NFC tag holds neither a Handover Select nor the TNEP handover service: not an mdoc")
        }
        guard mode != .static else { throw MdocError(.engagement, "the holder offers negotiated handover only; static was asked for") }
        let statusBytes = try await service.exchange(tag, TNEPService.serviceSelect())
        let status = try NDEFMessage(bytes: statusBytes)
        guard let te = status.first(.wellKnown, "Te"), te.payload.count == 1 else { throw MdocError(.engagement, "the holder answered the service select without a TNEP status") }
        guard te.payload[0] == 0x00 else { throw MdocError(.engagement, "the holder refused the handover service (TNEP status \(te.payload[0]))") }
        let request = HandoverRequest.message(random: secureRandomBytes(2), alternative: alternative?.handoverRequestRecord)
        let selectBytes = try await service.exchange(tag, request)
        return ("negotiated", try HandoverSelect(bytes: selectBytes), request)
    }
}
