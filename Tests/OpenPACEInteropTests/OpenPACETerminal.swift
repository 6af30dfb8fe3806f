import LDS
import SmartCard

/// A terminal whose PACE, Chip Authentication and secure messaging are OpenPACE's, sending
/// ICAO 9303-11 APDUs it builds itself over any card connection (pcscd + vpcd in the tests).
final class OpenPACETerminal {
    let connection: any CardConnection
    private var secureMessaging: OpenPACESecureMessaging?
    /// The context whose session keys protect the link (PACE's, then Chip Authentication's).
    private var keys: OpenPACE?
    /// For Terminal Authentication: PACE's context and the chip's ephemeral PACE key (ID_PICC),
    /// and the terminal's ephemeral Chip Authentication key (Comp(PK_PCD)).
    private var paceContext: OpenPACE?
    private var chipPACEKey: [UInt8] = []
    private var chipAuthenticationKey: [UInt8] = []

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    init(connection: any CardConnection) {
        self.connection = connection
    }

    func send(_ command: CommandAPDU) async throws -> ResponseAPDU {
        guard let secureMessaging else { return try ResponseAPDU(bytes: try await connection.transmit(raw: command.encoded())) }
        let response = try ResponseAPDU(bytes: try await connection.transmit(raw: try secureMessaging.protect(command).encoded()))
        guard !response.data.isEmpty else {
            // A plain error status ends secure messaging on the chip's side (ICAO 9303-11 §9.8.7).
            throw Failure("\(command.ins.hex) answered \(response.statusWord) without secure messaging")
        }
        return try secureMessaging.unprotect(response)
    }

    @discardableResult
    func expectSuccess(_ command: CommandAPDU, _ what: String) async throws -> [UInt8] {
        let response = try await send(command)
        guard response.statusWord == .success else { throw Failure("\(what): \(response.statusWord)") }
        return response.data
    }

    /// SELECT by file identifier, then READ BINARY with Le = 00 until the file ends.
    func readFile(_ fid: UInt16) async throws -> [UInt8] {
        try await expectSuccess(CommandAPDU(ins: 0xA4, p1: 0x02, p2: 0x0C, data: [UInt8(fid >> 8), UInt8(fid & 0xFF)]),
                                "SELECT \(String(fid, radix: 16))")
        var content: [UInt8] = []
        while content.count < 0x8000 {
            let response = try await send(CommandAPDU(ins: 0xB0, p1: UInt8(content.count >> 8), p2: UInt8(content.count & 0xFF), ne: 256))
            guard response.statusWord == .success || response.statusWord == .endOfFileReached else {
                if content.isEmpty || response.statusWord.sw1 == 0x6B { break }
                throw Failure("READ BINARY at \(content.count): \(response.statusWord)")
            }
            content += response.data
            if response.data.isEmpty || response.statusWord == .endOfFileReached { break }
        }
        return content
    }

    /// Dynamic authentication data (7C) with one object, and the objects of the chip's answer.
    private func generalAuthenticate(_ tag: UInt8, _ value: [UInt8], last: Bool) async throws -> [UInt8: [UInt8]] {
        let body = OpenPACESecureMessaging.object(0x7C, tag == 0 ? [] : OpenPACESecureMessaging.object(tag, value))
        let data = try await expectSuccess(CommandAPDU(cla: last ? 0x00 : 0x10, ins: 0x86, p1: 0, p2: 0, data: body, ne: 256),
                                           "GENERAL AUTHENTICATE (\(String(tag, radix: 16)))")
        guard let template = try OpenPACESecureMessaging.objects(data).first, template.tag == 0x7C else {
            throw Failure("GENERAL AUTHENTICATE answered without 7C")
        }
        let inner = try OpenPACESecureMessaging.objects(template.value)
        return Dictionary(inner.map { ($0.tag, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// PACE with EF.CardAccess's PACEInfo `index` (as OpenPACE numbers them) and `password`;
    /// secure messaging with the PACE keys afterwards. `tr0301Version201`: OpenPACE in its
    /// TR-03110 v2.01 mode, without which it refuses an EF.CardAccess that offers the IM.
    func performPACE(cardAccess: [UInt8], index: Int, parameterId: Int?, tr0301Version201: Bool,
                     password: OpenPACE.Password) async throws {
        let eac = try OpenPACE(securityInfos: cardAccess, forIntegratedMapping: tr0301Version201)
        let oid = try eac.selectPACE(index)
        try eac.setPassword(password)
        let keyReference: UInt8 = if case .mrz = password { 0x01 } else { 0x02 }
        var setAT = OpenPACESecureMessaging.object(0x80, oid) + OpenPACESecureMessaging.object(0x83, [keyReference])
        if let parameterId { setAT += OpenPACESecureMessaging.object(0x84, [UInt8(parameterId)]) }
        try await expectSuccess(CommandAPDU(ins: 0x22, p1: 0xC1, p2: 0xA4, data: setAT), "MSE:Set AT for PACE")
        let nonce = try await generalAuthenticate(0, [], last: false)
        try eac.decryptNonce(try nonce[0x80] ?? { throw Failure("no encrypted nonce (80)") }())
        let mapping = try await generalAuthenticate(0x81, try eac.mappingData(), last: false)
        try eac.map(peer: mapping[0x82] ?? [])
        let myKey = try eac.ephemeralKey()
        let chipKeyAnswer = try await generalAuthenticate(0x83, myKey, last: false)
        let chipKey = try chipKeyAnswer[0x84] ?? { throw Failure("no chip ephemeral key (84)") }()
        try eac.sharedSecret(peer: chipKey)
        try eac.deriveKeys()
        let tokenAnswer = try await generalAuthenticate(0x85, try eac.token(peerKey: chipKey), last: true)
        try eac.verifyToken(try tokenAnswer[0x86] ?? { throw Failure("no chip authentication token (86)") }())
        try eac.startSecureMessaging(.pace)
        paceContext = eac
        chipPACEKey = chipKey
        keys = eac
        secureMessaging = OpenPACESecureMessaging(eac: eac)
    }

    /// Chip Authentication with DG14's (or EF.CardSecurity's) SecurityInfos: MSE:Set AT +
    /// GENERAL AUTHENTICATE (AES) or MSE:Set KAT (3DES); secure messaging restarts with its keys.
    func performChipAuthentication(securityInfos: [UInt8]) async throws {
        let eac = try OpenPACE(securityInfos: securityInfos)
        guard eac.chipAuthenticationCount > 0 else { throw Failure("OpenPACE found no Chip Authentication in the SecurityInfos") }
        let (oid, keyId) = try eac.selectChipAuthentication(0)
        let chipKey = try Self.publicValue(try eac.chipKey())
        let myKey = try eac.terminalChipAuthenticationKey()
        let keyIdObject = keyId >= 0 ? OpenPACESecureMessaging.object(0x84, [UInt8(keyId)]) : []
        // 3DES (id-CA-*-3DES-CBC-CBC, last arc 1): MSE:Set KAT; AES: MSE:Set AT + GENERAL AUTHENTICATE.
        if oid.last == 1 {
            try await expectSuccess(CommandAPDU(ins: 0x22, p1: 0x41, p2: 0xA6, data: OpenPACESecureMessaging.object(0x91, myKey) + keyIdObject),
                                    "MSE:Set KAT")
        } else {
            try await expectSuccess(CommandAPDU(ins: 0x22, p1: 0x41, p2: 0xA4, data: OpenPACESecureMessaging.object(0x80, oid) + keyIdObject),
                                    "MSE:Set AT for CA")
            _ = try await generalAuthenticate(0x80, myKey, last: true)
        }
        try eac.terminalAgree(chipKey: chipKey)
        try eac.startSecureMessaging(.chipAuthentication)
        chipAuthenticationKey = myKey
        keys = eac
        secureMessaging = OpenPACESecureMessaging(eac: eac)
    }
}

extension OpenPACETerminal {
    /// Terminal Authentication v1 after Chip Authentication, every value OpenPACE's: for each
    /// certificate (DV, then terminal) MSE:Set DST with its CAR and PSO:Verify Certificate; MSE:Set
    /// AT with the terminal's CHR; GET CHALLENGE; EXTERNAL AUTHENTICATE with TA_STEP5's signature
    /// over ID_PICC ‖ r_PICC ‖ Comp(PK_PCD), both compressions OpenPACE's. Returns the chip's
    /// status word for EXTERNAL AUTHENTICATE.
    func performTerminalAuthentication(cvca: [UInt8], chain: [(car: [UInt8], chr: [UInt8], certificate: [UInt8])], key: [UInt8]) async throws -> StatusWord {
        guard let ca = keys, let pace = paceContext, let terminal = chain.last else { throw Failure("TA needs PACE and Chip Authentication first") }
        for link in chain {
            try await expectSuccess(CommandAPDU(ins: 0x22, p1: 0x81, p2: 0xB6, data: OpenPACESecureMessaging.object(0x83, link.car)), "MSE:Set DST")
            // PSO:Verify Certificate carries the body and signature, without the 7F21 wrapper.
            let lengthBytes = link.certificate[2] == 0x81 ? 2 : link.certificate[2] == 0x82 ? 3 : 1
            try await expectSuccess(CommandAPDU(ins: 0x2A, p1: 0x00, p2: 0xBE, data: Array(link.certificate.dropFirst(2 + lengthBytes))),
                                    "PSO:Verify Certificate")
        }
        try await expectSuccess(CommandAPDU(ins: 0x22, p1: 0x81, p2: 0xA4, data: OpenPACESecureMessaging.object(0x83, terminal.chr)), "MSE:Set AT for TA")
        let challenge = try await expectSuccess(CommandAPDU(ins: 0x84, p1: 0, p2: 0, ne: 8), "GET CHALLENGE")
        // OpenPACE's terminal context: the CVCA as anchor, the chain imported down to the terminal's
        // certificate (whose algorithm TA_STEP5 signs with), then the key.
        try ca.trust(cvca: cvca)
        for link in chain { try ca.importCertificate(link.certificate) }
        try ca.setTerminalKey(key)
        try ca.setTerminalAuthenticationNonce(challenge)
        let signature = try ca.signTerminalAuthentication(compressedTerminalKey: try ca.compressed(chipAuthenticationKey, .chipAuthentication),
                                                          chipIdentifier: try pace.compressed(chipPACEKey, .pace))
        return try await send(CommandAPDU(ins: 0x82, p1: 0, p2: 0, data: signature)).statusWord
    }

    /// The key inside OpenPACE's public key data object (7F49: 86 the EC point, 84 the DH value;
    /// TR-03110-3 D.3.4), or the bytes as they are when they are not one.
    static func publicValue(_ encoded: [UInt8]) throws -> [UInt8] {
        guard encoded.starts(with: [0x7F, 0x49]), encoded.count > 3 else { return encoded }
        let lengthBytes = encoded[2] == 0x81 ? 2 : encoded[2] == 0x82 ? 3 : 1
        let objects = try OpenPACESecureMessaging.objects(Array(encoded.dropFirst(2 + lengthBytes)))
        guard let key = objects.first(where: { $0.tag == 0x86 || $0.tag == 0x84 }) else { throw Failure("7F49 without 86 or 84") }
        return key.value
    }
}

extension UInt8 {
    var hex: String { String(self, radix: 16, uppercase: true) }
}
