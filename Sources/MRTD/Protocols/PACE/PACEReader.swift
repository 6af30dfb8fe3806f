import MRTDCrypto
import SmartCardCore

extension PassportReader {
    /// What this reader can run: generic and chip authentication mapping on the standardised
    /// curves and MODP groups, integrated mapping on the curves and cipher it is implemented for.
    static func canPerform(_ info: PACEInfo) -> Bool {
        guard let domain = info.domain, domain.keyAgreement == info.protocolID.keyAgreement else { return false }
        if info.protocolID.mapping == .integratedMapping { return domain.supportsIntegratedMapping(info.protocolID.keyType) }
        return true
    }

    /// Reads EF.CardAccess (plain, on the MF) and returns its PACE offers; empty when there is none.
    /// The read doubles as the extended-length probe. On chips without short-EF-identifier support
    /// (6986, 6A86, 6D00, 6E00 …) the file is selected by its identifier instead; 6A82, the normal
    /// answer of a BAC-only chip, costs nothing more (`cardAccessNotFound` lets a chip that then
    /// refuses BAC be looked at again by file identifier).
    func readCardAccess() async throws(MRTDError) -> [PACEInfo] {
        channel.traceContext.file = LDSFile.cardAccess.name
        var response = try await readCardAccessFirstChunk()
        if [.incorrectP1P2, .commandNotAllowedNoEF, .securityStatusNotSatisfied].contains(response.statusWord) {
            // The chip may still be inside an application from an earlier session: back to the MF.
            // (Some chips answer SELECT of the MF with 6A82, 6A86 or 6D00: then the read decides.)
            let mf = try await select(CommandAPDU(ins: 0xA4, p1: 0x00, p2: 0x0C, data: [0x3F, 0x00]), secure: false)
            if mf.statusWord == .success { response = try await readCardAccessFirstChunk() }
        }
        if Self.noShortFileIdentifierAnswers.contains(response.statusWord) {
            return try await readCardAccessBySelect()
        }
        return try await cardAccessOffers(response)
    }

    /// Answers to a READ BINARY by short EF identifier that mean the chip does not support it.
    static let noShortFileIdentifierAnswers: Set<StatusWord> = [
        .commandNotAllowedNoEF, .incorrectP1P2, .insNotSupported, .claNotSupported, .functionNotSupported, .wrongP1P2,
    ]

    /// EF.CardAccess selected by its identifier (011C) and read with plain READ BINARY.
    func readCardAccessBySelect() async throws(MRTDError) -> [PACEInfo] {
        channel.traceContext.file = LDSFile.cardAccess.name
        cardAccessNotFound = false
        // EF.CardAccess lives under the MF; the chip may be inside the application by now.
        _ = try await select(CommandAPDU(ins: 0xA4, p1: 0x00, p2: 0x0C, data: [0x3F, 0x00]), secure: false)
        let selected = try await select(.selectFile(LDSFile.cardAccess.fid), secure: false)
        guard selected.statusWord == .success else { return try await cardAccessOffers(selected) }
        var response = ResponseAPDU(data: [], statusWord: .wrongLength)
        for length in [0xDF, 0x80, 0x40, 0x20] {
            response = try await channel.plain(.readBinary(offset: 0, length: length))
            if response.statusWord.sw1 == 0x6C, response.statusWord.sw2 > 0 {
                response = try await channel.plain(.readBinary(offset: 0, length: Int(response.statusWord.sw2)))
            }
            if response.statusWord != .wrongLength { break }
        }
        return try await cardAccessOffers(response)
    }

    /// The PACE offers of EF.CardAccess, given the answer to its first READ BINARY (or SELECT).
    func cardAccessOffers(_ response: ResponseAPDU) async throws(MRTDError) -> [PACEInfo] {
        switch response.statusWord {
        case .success, .endOfFileReached:
            break
        case .fileNotFound:
            cardAccessNotFound = true
            return []
        case .securityStatusNotSatisfied, .conditionsOfUseNotSatisfied:
            cardAccessNote = "EF.CardAccess is on the chip but could not be read (\(response.statusWord.meaning))"
            return []
        default:
            cardAccessNote = "EF.CardAccess could not be read (\(response.statusWord.meaning))"
            return []
        }
        guard !response.data.isEmpty else { return [] }
        var content = response.data
        // A long EF.CardAccess under short APDUs: read the rest.
        if let total = try? BERTLV.header(content).totalLength {
            while content.count < total {
                let more = try await channel.plain(.readBinary(offset: content.count, length: min(0x80, total - content.count)))
                guard more.statusWord == .success || more.statusWord == .endOfFileReached, !more.data.isEmpty else { break }
                content += more.data
            }
        }
        cardAccess = content
        guard let infos = try? SecurityInfos(bytes: content) else {
            cardAccessNote = "EF.CardAccess could not be parsed"
            return []
        }
        return PACEInfo.all(in: infos)
    }

    /// READ BINARY of EF.CardAccess by SFI: extended first (the extended-length probe), then
    /// short, stepping down for chips that cap reads below 256 bytes.
    func readCardAccessFirstChunk() async throws(MRTDError) -> ResponseAPDU {
        var response = probedExtendedLength == false
            ? ResponseAPDU(data: [], statusWord: .wrongLength)  // the transport cannot carry it: go straight to short reads
            : try await channel.plain(CommandAPDU(ins: 0xB0, p1: 0x80 | LDSFile.cardAccess.sfi, p2: 0, ne: 65_536,
                                                  forceExtended: true))
        if response.statusWord == .wrongLength || response.statusWord.sw1 == 0x6D || response.statusWord == .wrongP1P2 {
            probedExtendedLength = false
            for length in [256, 0xDF, 0x80, 0x40, 0x20] {
                response = try await channel.plain(.readBinary(sfi: LDSFile.cardAccess.sfi, offset: 0, length: length))
                if response.statusWord.sw1 == 0x6C, response.statusWord.sw2 > 0 {
                    response = try await channel.plain(.readBinary(sfi: LDSFile.cardAccess.sfi, offset: 0, length: Int(response.statusWord.sw2)))
                }
                if response.statusWord != .wrongLength { break }
            }
        } else if response.statusWord == .success || response.statusWord == .endOfFileReached {
            probedExtendedLength = true
        }
        return response
    }

    /// Runs PACE with `info` and starts secure messaging with its session keys.
    func performPACE(_ info: PACEInfo) async throws(MRTDError) {
        guard let domain = info.domain, domain.keyAgreement == info.protocolID.keyAgreement else {
            throw MRTDError(.notSupported, "PACE parameters \(info.parameterId.map(String.init) ?? "?") are not supported")
        }
        let id = info.protocolID
        let type = id.keyType
        channel.session = nil
        channel.traceContext.step = "PACE"
        channel.traceContext.detail = nil
        // MSE:Set AT — protocol, password reference (01 MRZ, 02 CAN), parameter id.
        var setAT = DER.oid(id.oid)
        setAT[0] = 0x80  // the OID's content under tag 80
        let reference: UInt8
        if case .can = accessKey { reference = 0x02 } else { reference = 0x01 }
        setAT += [0x83, 0x01, reference]
        // The parameter id (tag 84): most chips take it, some require it (6A87 without), some refuse
        // it (6A80): the other form is tried once, and what worked is kept for the read.
        let parameterObject: [UInt8] = info.parameterId.map { [0x84, 0x01, UInt8($0)] } ?? []
        func setATCommand(withParameter: Bool) -> CommandAPDU {
            CommandAPDU(ins: 0x22, p1: 0xC1, p2: 0xA4, data: setAT + (withParameter ? parameterObject : []))
        }
        let withParameter = mseWithParameterId ?? !parameterObject.isEmpty
        var mse = try await channel.plain(setATCommand(withParameter: withParameter))
        if mseWithParameterId == nil, !parameterObject.isEmpty,
           [.wrongData, .lcInconsistentWithP1P2, .referencedDataNotFound, .wrongP1P2, .incorrectP1P2].contains(mse.statusWord) {
            let other = try await channel.plain(setATCommand(withParameter: !withParameter))
            if other.statusWord == .success || other.statusWord.sw1 == 0x63 {
                mseWithParameterId = !withParameter
                mse = other
            }
        } else if mse.statusWord == .success || mse.statusWord.sw1 == 0x63 {
            mseWithParameterId = withParameter
        }
        guard mse.statusWord == .success || mse.statusWord.sw1 == 0x63 else {
            throw MRTDError(.notSupported, "the chip refused \(id) (MSE:Set AT: \(mse.statusWord.meaning))", statusWord: mse.statusWord)
        }

        // 1. Encrypted nonce (16 or 32 bytes for Integrated Mapping, a cipher block otherwise).
        let nonceAnswer = try await generalAuthenticate(step: "encrypted nonce", [], last: false)
        guard let encrypted = nonceAnswer[0x80] else { throw MRTDError(.unexpectedStatus, "PACE: the chip sent no nonce") }
        let s = try PACE.decryptNonce(encrypted, passwordKey: PACE.passwordKey(accessKey, type: type), type: type)

        let generator: [UInt8]
        var chipMapKey: [UInt8] = []
        if id.mapping == .integratedMapping {
            // 2. Integrated mapping: the terminal's nonce t goes to the chip in the clear;
            // G' = f_G(R(s, t)) on both sides (ICAO 9303-11 §4.4.3.3.2, Appendix B).
            let t = secureRandomBytes(type.keyLength)
            _ = try await generalAuthenticate(step: "mapping", BERTLV.encode(tag: 0x81, value: t), last: false)
            generator = try crypto { () throws(CryptoError) in try domain.mapIntegrated(chipNonce: s, terminalNonce: t, type: type) }
        } else {
            // 2. Generic mapping: H = SK_map · PK_map(IC), G' = s·G + H (g' = g^s · h for DH).
            let mapKeys = try crypto { () throws(CryptoError) in try domain.generateKeyPair() }
            let mapAnswer = try await generalAuthenticate(step: "mapping", BERTLV.encode(tag: 0x81, value: mapKeys.publicKey), last: false)
            guard let key = mapAnswer[0x82], domain.isValidPublicKey(key) else {
                throw MRTDError(.cryptoFailure, "PACE: the chip's mapping key is not valid in \(domain)")
            }
            chipMapKey = key
            generator = try crypto { () throws(CryptoError) in
                try domain.mapGeneric(nonce: s, shared: try domain.agree(privateKey: mapKeys.privateKey, peer: key))
            }
        }

        // 3. Key agreement on the mapped generator.
        let ephemeral = try crypto { () throws(CryptoError) in try domain.generateKeyPair(generator: generator) }
        let keyAnswer = try await generalAuthenticate(step: "key agreement", BERTLV.encode(tag: 0x83, value: ephemeral.publicKey), last: false)
        guard let chipKey = keyAnswer[0x84], domain.isValidPublicKey(chipKey), chipKey != ephemeral.publicKey else {
            throw MRTDError(.cryptoFailure, "PACE: the chip's ephemeral key is not acceptable")
        }
        let shared = try crypto { () throws(CryptoError) in
            try domain.sharedSecret(privateKey: ephemeral.privateKey, peer: chipKey, generator: generator)
        }
        let keys = PACE.sessionKeys(sharedSecret: shared, type: type)

        // 4. Mutual authentication with tokens.
        let token = try crypto { () throws(CryptoError) in
            try PACE.authenticationToken(macKey: keys.mac, type: type, oid: id.oid, otherPublicKey: chipKey, keyAgreement: domain.keyAgreement)
        }
        let tokenAnswer: [UInt32: [UInt8]]
        do {
            tokenAnswer = try await generalAuthenticate(step: "token", BERTLV.encode(tag: 0x85, value: token), last: true)
        } catch {
            // A wrong password shows only here: the chip's token check fails (63xx / 6982).
            if error.code == .unexpectedStatus, let sw = error.statusWord, sw.sw1 == 0x63 || sw == .securityStatusNotSatisfied {
                throw MRTDError(.accessDenied, "the chip refused the access key (PACE)", statusWord: sw)
            }
            throw error
        }
        let expected = try crypto { () throws(CryptoError) in
            try PACE.authenticationToken(macKey: keys.mac, type: type, oid: id.oid, otherPublicKey: ephemeral.publicKey,
                                         keyAgreement: domain.keyAgreement)
        }
        guard let chipToken = tokenAnswer[0x86], constantTimeEqual(chipToken, expected) else {
            throw MRTDError(.accessDenied, "the chip's PACE token does not verify (wrong access key, or not the chip it claims)")
        }
        channel.session = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: type)
        if id.mapping == .chipAuthenticationMapping, case .ec(let curve) = domain {
            chipOutcome = try await verifyChipAuthenticationMapping(encryptedData: tokenAnswer[0x8A], chipMapKey: chipMapKey,
                                                                    curve: curve, parameterId: info.parameterId, encryptionKey: keys.encryption,
                                                                    type: type)
            chipAuthenticated = chipOutcome?.status == .valid
        }
    }

    /// PACE-CAM (ICAO 9303-11 §4.4.3.5): decrypt A_IC to CA_IC and check PK_Map,IC = CA_IC · PK_IC,
    /// with PK_IC from EF.CardSecurity (read now, under the new secure messaging, and verified
    /// with passive authentication later).
    func verifyChipAuthenticationMapping(encryptedData: [UInt8]?, chipMapKey: [UInt8], curve: EllipticCurve, parameterId: Int?,
                                         encryptionKey: [UInt8], type: KeyDerivation.KeyType) async throws(MRTDError) -> VerificationOutcome {
        guard let encryptedData else {
            return VerificationOutcome(status: .invalid, detail: "PACE-CAM: the chip sent no chip authentication data")
        }
        guard case .content(let security) = try await readFile(.cardSecurity, index: 0, of: 1) else {
            return VerificationOutcome(status: .invalid, detail: "PACE-CAM: EF.CardSecurity is missing")
        }
        cardSecurity = security
        return PACE.verifyChipAuthenticationMapping(encryptedData: encryptedData, chipMapKey: chipMapKey, cardSecurity: security,
                                                    curve: curve, encryptionKey: encryptionKey, type: type)
    }

    /// Runs a cryptographic step, reporting a failure as an `MRTDError`.
    func crypto<T>(_ body: () throws(CryptoError) -> T) throws(MRTDError) -> T {
        do {
            return try body()
        } catch {
            throw MRTDError(.cryptoFailure, "PACE: \(error.reason)")
        }
    }

    /// One GENERAL AUTHENTICATE exchange: `7C { data }` out (chained unless `last`), the dynamic
    /// authentication data objects of the answer back.
    func generalAuthenticate(step: String, _ data: [UInt8], last: Bool) async throws(MRTDError) -> [UInt32: [UInt8]] {
        channel.traceContext.detail = step
        let command = CommandAPDU(cla: last ? 0x00 : 0x10, ins: 0x86, p1: 0, p2: 0, data: BERTLV.encode(tag: 0x7C, value: data), ne: 256)
        let response = try await channel.plain(command)
        guard response.statusWord == .success else {
            throw MRTDError(.unexpectedStatus, "PACE \(step): \(response.statusWord.meaning)", statusWord: response.statusWord)
        }
        guard let outer = try? BERTLV.parseSingle(response.data), outer.tag == 0x7C, let objects = try? outer.children() else {
            throw MRTDError(.malformedData, "PACE \(step): the chip's answer is not dynamic authentication data")
        }
        var result: [UInt32: [UInt8]] = [:]
        for object in objects { result[object.tag] = object.value }
        return result
    }
}
