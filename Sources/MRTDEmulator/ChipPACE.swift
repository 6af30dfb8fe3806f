import MRTD
import MRTDCrypto
import SmartCardCore

/// The chip's side of PACE (ECDH generic mapping).
struct ChipPACESession {
    let info: PACEInfo
    let domain: PACEDomain
    let passwordKey: [UInt8]
    var nonce: [UInt8]?
    var mapPrivate: [UInt8]?
    var generator: [UInt8]?
    var ephemeralPrivate: [UInt8]?
    var ephemeralPublic: [UInt8]?
    var terminalEphemeral: [UInt8]?
    var sharedSecret: [UInt8]?
}

extension VirtualPassportChip {
    /// MSE:Set AT — choose the PACE protocol, the password (01 MRZ, 02 CAN) and the parameters.
    func mseSetAT(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        if command.p1 == 0x41, command.p2 == 0xA4 { return chipAuthenticationSetAT(command, &state) }
        if command.p1 == 0x41, command.p2 == 0xA6 { return chipAuthenticationSetKAT(command, &state) }
        if command.p1 == 0x81, command.p2 == 0xB6 { return terminalSetDST(command, &state) }
        if command.p1 == 0x81, command.p2 == 0xA4 { return terminalSetAT(command, &state) }
        guard command.p1 == 0xC1, command.p2 == 0xA4 else { return ResponseAPDU(statusWord: .incorrectP1P2) }
        guard passport.pace != nil else { return ResponseAPDU(statusWord: .functionNotSupported) }
        guard let objects = try? BERTLV.parseAll(command.data) else { return ResponseAPDU(statusWord: .wrongData) }
        var fields: [UInt32: [UInt8]] = [:]
        for object in objects { fields[object.tag] = object.value }
        guard let oidBytes = fields[0x80], let offered = passport.paceOffers.first(where: { DER.oidString(oidBytes) == $0.protocolID.oid }) else {
            return ResponseAPDU(statusWord: .referencedDataNotFound)
        }
        switch quirks.paceParameterId {
        case .required? where fields[0x84] == nil: return ResponseAPDU(statusWord: .lcInconsistentWithP1P2)  // 6A87, as such chips answer
        case .refused? where fields[0x84] != nil: return ResponseAPDU(statusWord: .wrongData)
        default: break
        }
        if let parameter = fields[0x84], parameter.reduce(0, { $0 << 8 | Int($1) }) != offered.parameterId {
            return ResponseAPDU(statusWord: .referencedDataNotFound)
        }
        let password: [UInt8]
        switch fields[0x83] {
        case [0x01]?:
            password = DigestAlgorithm.sha1.hash(Array(passport.mrzKeyInformation.utf8))
        case [0x02]?:
            guard let can = passport.can else { return ResponseAPDU(statusWord: .referencedDataNotFound) }
            password = Array(can.utf8)
        default:
            return ResponseAPDU(statusWord: .referencedDataNotFound)
        }
        guard let domain = offered.domain else { return ResponseAPDU(statusWord: .wrongData) }
        state.pace = ChipPACESession(info: offered, domain: domain,
                                     passwordKey: KeyDerivation.derive(password, purpose: .password, type: offered.protocolID.keyType))
        return ResponseAPDU(statusWord: .success)
    }

    /// MSE:Set AT for Chip Authentication (after access control, under secure messaging).
    func chipAuthenticationSetAT(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard state.authenticated, state.sm != nil else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        guard let id = passport.chipAuthenticationProtocol else { return ResponseAPDU(statusWord: .referencedDataNotFound) }
        guard let objects = try? BERTLV.parseAll(command.data), let oid = objects.first(where: { $0.tag == 0x80 }),
              DER.oidString(oid.value) == id.oid else { return ResponseAPDU(statusWord: .referencedDataNotFound) }
        state.chipAuthenticationSelected = true
        return ResponseAPDU(statusWord: .success)
    }

    /// GENERAL AUTHENTICATE for Chip Authentication: agree new keys with the terminal's
    /// ephemeral key; they take effect after this answer (which still uses the old keys).
    func chipAuthenticationKeyAgreement(_ objects: [TLV], _ state: inout State) -> ResponseAPDU {
        state.chipAuthenticationSelected = false
        guard let terminalKey = objects.first(where: { $0.tag == 0x80 })?.value, agreeChipAuthentication(terminalKey, &state) else {
            return ResponseAPDU(statusWord: .wrongData)
        }
        return ResponseAPDU(data: BERTLV.encode(tag: 0x7C, value: []), statusWord: .success)
    }

    /// MSE:Set KAT (Chip Authentication version 1, 3DES): the terminal's ephemeral key in tag 91,
    /// optionally the key id in 84. The new keys take effect after this answer.
    func chipAuthenticationSetKAT(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard state.authenticated, state.sm != nil else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        guard let id = passport.chipAuthenticationProtocol, id.usesKeyAgreementTemplate else {
            return ResponseAPDU(statusWord: .referencedDataNotFound)
        }
        guard let objects = try? BERTLV.parseAll(command.data), let terminalKey = objects.first(where: { $0.tag == 0x91 })?.value else {
            return ResponseAPDU(statusWord: .wrongData)
        }
        if let keyId = objects.first(where: { $0.tag == 0x84 })?.value, keyId != [0x01] {
            return ResponseAPDU(statusWord: .referencedDataNotFound)
        }
        guard agreeChipAuthentication(terminalKey, &state) else { return ResponseAPDU(statusWord: .wrongData) }
        return ResponseAPDU(statusWord: .success)
    }

    /// Agrees the Chip Authentication keys with the terminal's ephemeral key; they replace the
    /// session once the current answer is out.
    private func agreeChipAuthentication(_ terminalKey: [UInt8], _ state: inout State) -> Bool {
        guard let key = passport.chipAuthenticationKey, let id = passport.chipAuthenticationProtocol,
              let shared = key.sharedSecret(with: terminalKey) else { return false }
        let keys = PACE.sessionKeys(sharedSecret: shared, type: id.keyType)
        state.pendingSession = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: id.keyType)
        state.statistics.chipAuthentications += 1
        state.terminal = ChipTerminalAuthentication.State(chipIdentifier: state.terminal.chipIdentifier,
                                                          ephemeralKey: key.publicKey.map { PACE.compressed(terminalKey, domain: $0.domain) })
        return true
    }

    /// GENERAL AUTHENTICATE, steps 1–4 of PACE-GM (or Chip Authentication after MSE:Set AT).
    func generalAuthenticate(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        if state.chipAuthenticationSelected {
            guard let outer = try? BERTLV.parseSingle(command.data), outer.tag == 0x7C, let objects = try? outer.children() else {
                return ResponseAPDU(statusWord: .wrongData)
            }
            return chipAuthenticationKeyAgreement(objects, &state)
        }
        guard var session = state.pace else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        guard let outer = try? BERTLV.parseSingle(command.data), outer.tag == 0x7C, let objects = try? outer.children() else {
            return ResponseAPDU(statusWord: .wrongData)
        }
        let type = session.info.protocolID.keyType
        let domain = session.domain
        func answer(_ tag: UInt32, _ value: [UInt8]) -> ResponseAPDU {
            ResponseAPDU(data: BERTLV.encode(tag: 0x7C, value: BERTLV.encode(tag: tag, value: value)), statusWord: .success)
        }
        func fail(_ sw: StatusWord) -> ResponseAPDU {
            state.pace = nil
            return ResponseAPDU(statusWord: sw)
        }
        do {
            switch (objects.first?.tag, session.nonce, session.generator, session.sharedSecret) {
            case (nil, nil, _, _):
                let isIM = session.info.protocolID.mapping == .integratedMapping
                let nonce = secureRandomBytes(isIM ? PACE.integratedMappingChipNonceLength(type) : type.cipher.blockSize)
                session.nonce = nonce
                state.pace = session
                return answer(0x80, try PACE.encryptNonce(nonce, passwordKey: session.passwordKey, type: type))
            case (0x81?, let nonce?, nil, _) where session.info.protocolID.mapping == .integratedMapping:
                let terminalNonce = objects[0].value
                guard terminalNonce.count == type.keyLength else { return fail(.wrongData) }
                session.generator = try domain.mapIntegrated(chipNonce: nonce, terminalNonce: terminalNonce, type: type)
                state.pace = session
                return answer(0x82, [])
            case (0x81?, let nonce?, nil, _):
                let terminalMapKey = objects[0].value
                guard domain.isValidPublicKey(terminalMapKey) else { return fail(.wrongData) }
                let mapKeys = try domain.generateKeyPair()
                session.mapPrivate = mapKeys.privateKey
                let sharedH = try domain.agree(privateKey: mapKeys.privateKey, peer: terminalMapKey)
                session.generator = try domain.mapGeneric(nonce: nonce, shared: sharedH)
                state.pace = session
                return answer(0x82, mapKeys.publicKey)
            case (0x83?, _?, let generator?, nil):
                let terminalKey = objects[0].value
                guard domain.isValidPublicKey(terminalKey) else { return fail(.wrongData) }
                let ephemeral = try domain.generateKeyPair(generator: generator)
                guard ephemeral.publicKey != terminalKey else { return fail(.wrongData) }
                session.ephemeralPrivate = ephemeral.privateKey
                session.ephemeralPublic = ephemeral.publicKey
                session.terminalEphemeral = terminalKey
                session.sharedSecret = try domain.sharedSecret(privateKey: ephemeral.privateKey, peer: terminalKey, generator: generator)
                state.pace = session
                return answer(0x84, ephemeral.publicKey)
            case (0x85?, _?, _?, let shared?):
                guard command.cla & 0x10 == 0 else { return fail(.conditionsOfUseNotSatisfied) }
                guard let chipEphemeral = session.ephemeralPublic, let terminalEphemeral = session.terminalEphemeral else {
                    return fail(.conditionsOfUseNotSatisfied)
                }
                let keys = PACE.sessionKeys(sharedSecret: shared, type: type)
                let oid = session.info.protocolID.oid
                let expected = try PACE.authenticationToken(macKey: keys.mac, type: type, oid: oid,
                                                            otherPublicKey: chipEphemeral, keyAgreement: domain.keyAgreement)
                guard objects[0].value == expected else {
                    // Wrong password: the tokens cannot match.
                    state.statistics.paceFailures += 1
                    state.wrongKeys += 1
                    return fail(.verificationFailed)
                }
                let token = try PACE.authenticationToken(macKey: keys.mac, type: type, oid: oid,
                                                         otherPublicKey: terminalEphemeral, keyAgreement: domain.keyAgreement)
                var objects = BERTLV.encode(tag: 0x86, value: token)
                if session.info.protocolID.mapping == .chipAuthenticationMapping {
                    // CA_IC = SK_Map,IC · SK_IC⁻¹ mod n, sent as E(KS_Enc, CA_IC) with IV = E(KS_Enc, −1).
                    guard case .ec(let curve) = domain, let staticKey = passport.chipAuthenticationMappingKey?.ecKey,
                          let mapPrivate = session.mapPrivate else { return fail(.noPreciseDiagnosis) }
                    let data = try curve.scalarDivide(mapPrivate, by: staticKey.scalar)
                    let iv = try type.cipher.ecb(encrypt: true, key: keys.encryption, [UInt8](repeating: 0xFF, count: type.cipher.blockSize))
                    let encrypted = try type.cipher.cbc(encrypt: true, key: keys.encryption, iv: iv, iso9797Pad(data, blockSize: type.cipher.blockSize))
                    objects += BERTLV.encode(tag: 0x8A, value: encrypted)
                }
                state.pace = nil
                state.terminal.chipIdentifier = session.ephemeralPublic.map { PACE.compressed($0, domain: domain) }
                if session.info.protocolID.mapping == .chipAuthenticationMapping {
                    // PACE-CAM authenticated the chip: Terminal Authentication may sign the
                    // terminal's PACE key (Chip Authentication, when run, replaces it with its own).
                    state.terminal.ephemeralKey = PACE.compressed(terminalEphemeral, domain: domain)
                }
                state.sm = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: type)
                state.authenticated = true
                state.wrongKeys = 0
                state.statistics.paceSuccesses += 1
                return ResponseAPDU(data: BERTLV.encode(tag: 0x7C, value: objects), statusWord: .success)
            default:
                return fail(.conditionsOfUseNotSatisfied)
            }
        } catch {
            return fail(.noPreciseDiagnosis)
        }
    }
}
