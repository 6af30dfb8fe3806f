import MRTDCrypto
import SmartCardCore

/// What PACE established: the protocol run and, for Chip Authentication Mapping, what the chip
/// sent to prove its static key (checked against EF.CardSecurity's key by `verifyMapping`).
package struct PACEResult: Sendable {
    package let info: PACEInfo
    package var mapping: PACE.Mapping { info.protocolID.mapping }
    /// PACE-CAM only: A_IC (tag 8A), the chip's mapping key, and what decrypts A_IC.
    package let chipAuthenticationMapping: ChipAuthenticationMappingProof?
    /// Comp(PK_IC): the chip's ephemeral PACE key compressed (x coordinate, or SHA-1 of a DH value) —
    /// Terminal Authentication's ID_PICC after PACE.
    package var chipIdentifier: [UInt8] = []
    /// Comp(PK_PCD): the terminal's ephemeral PACE key compressed — what Terminal Authentication
    /// signs after PACE-CAM on a chip that offers no Chip Authentication to run.
    package var terminalKey: [UInt8] = []

    /// The proof a PACE-CAM chip gives inside PACE (ICAO 9303-11 §4.4.3.5).
    package struct ChipAuthenticationMappingProof: Sendable {
        let encryptedData: [UInt8]?
        let chipMapKey: [UInt8]
        let curve: EllipticCurve
        let encryptionKey: [UInt8]
        let type: KeyDerivation.KeyType

        /// PK_Map,IC = CA_IC · PK_IC with PK_IC from EF.CardSecurity.
        package func verify(cardSecurity: [UInt8]?) -> VerificationOutcome {
            guard let encryptedData else {
                return VerificationOutcome(status: .invalid, detail: "PACE-CAM: the chip sent no chip authentication data")
            }
            guard let cardSecurity else {
                return VerificationOutcome(status: .invalid, detail: "PACE-CAM: EF.CardSecurity is missing")
            }
            return PACE.verifyChipAuthenticationMapping(encryptedData: encryptedData, chipMapKey: chipMapKey, cardSecurity: cardSecurity,
                                                        curve: curve, encryptionKey: encryptionKey, type: type)
        }
    }
}

/// PACE run on a card session (ICAO 9303-11 §4.4, BSI TR-03110-2 §3.2): MSE:Set AT, then four
/// GENERAL AUTHENTICATE steps — the encrypted nonce, the mapping (generic, integrated, or chip
/// authentication mapping), key agreement on the mapped generator, mutual authentication with
/// tokens — leaving the session under the new secure messaging. ECDH and DH, AES and 3DES, the
/// MRZ or the CAN.
package struct PACEProtocol {
    package let info: PACEInfo
    package let key: AccessKey

    package init(info: PACEInfo, key: AccessKey) {
        self.info = info
        self.key = key
    }

    /// Whether this reader can run `info`: generic and chip authentication mapping on every
    /// standardised or explicit curve and MODP group, integrated mapping where implemented.
    package static func canPerform(_ info: PACEInfo) -> Bool {
        guard let domain = info.domain, domain.keyAgreement == info.protocolID.keyAgreement else { return false }
        if info.protocolID.mapping == .integratedMapping { return domain.supportsIntegratedMapping(info.protocolID.keyType) }
        return true
    }

    package func run(on session: CardSession) async throws(MRTDError) -> PACEResult {
        guard let domain = info.domain, domain.keyAgreement == info.protocolID.keyAgreement else {
            throw MRTDError(.notSupported, "PACE parameters \(info.parameterId.map(String.init) ?? "?") are not supported")
        }
        let id = info.protocolID
        let type = id.keyType
        session.secureMessaging = nil
        session.traceContext.step = "PACE"
        session.traceContext.detail = nil
        try await setAuthenticationTemplate(on: session)

        // 1. The chip's nonce, encrypted with the password key.
        let nonceAnswer = try await step(session, "encrypted nonce", [], last: false)
        guard let encrypted = nonceAnswer[0x80] else { throw MRTDError(.unexpectedStatus, "PACE: the chip sent no nonce") }
        let s = try PACE.decryptNonce(encrypted, passwordKey: PACE.passwordKey(key, type: type), type: type)

        // 2. The mapping.
        let generator: [UInt8]
        var chipMapKey: [UInt8] = []
        if id.mapping == .integratedMapping {
            // The terminal's nonce t goes to the chip in the clear; G' = f_G(R(s, t)) on both sides
            // (ICAO 9303-11 §4.4.3.3.2, Appendix B).
            let t = secureRandomBytes(type.keyLength)
            _ = try await step(session, "mapping", BERTLV.encode(tag: 0x81, value: t), last: false)
            generator = try crypto { () throws(CryptoError) in try domain.mapIntegrated(chipNonce: s, terminalNonce: t, type: type) }
        } else {
            // Generic mapping (and CAM): H = SK_map · PK_map(IC), G' = s·G + H (g' = g^s · h for DH).
            let mapKeys = try crypto { () throws(CryptoError) in try domain.generateKeyPair() }
            let mapAnswer = try await step(session, "mapping", BERTLV.encode(tag: 0x81, value: mapKeys.publicKey), last: false)
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
        let keyAnswer = try await step(session, "key agreement", BERTLV.encode(tag: 0x83, value: ephemeral.publicKey), last: false)
        guard let chipKey = keyAnswer[0x84], domain.isValidPublicKey(chipKey), chipKey != ephemeral.publicKey else {
            throw MRTDError(.cryptoFailure, "PACE: the chip's ephemeral key is not acceptable")
        }
        let shared = try crypto { () throws(CryptoError) in
            try domain.sharedSecret(privateKey: ephemeral.privateKey, peer: chipKey, generator: generator)
        }
        let keys = PACE.sessionKeys(sharedSecret: shared, type: type)

        // 4. Mutual authentication with tokens. A wrong password shows only here: the chip's token
        // check fails (63xx / 6982).
        let token = try crypto { () throws(CryptoError) in
            try PACE.authenticationToken(macKey: keys.mac, type: type, oid: id.oid, otherPublicKey: chipKey, keyAgreement: domain.keyAgreement)
        }
        let tokenAnswer: [UInt32: [UInt8]]
        switch try await session.generalAuthenticate(BERTLV.encode(tag: 0x85, value: token), last: true, step: "token", .plain) {
        case .objects(let objects): tokenAnswer = objects
        case .refused(let answer) where answer.status == .verificationFailed || answer.status == .protected:
            throw MRTDError(.accessDenied, "the chip refused the access key (PACE)", statusWord: answer.statusWord)
        case .refused(let answer):
            throw MRTDError(.unexpectedStatus, "PACE token: \(answer.statusWord.meaning)", statusWord: answer.statusWord)
        }
        let expected = try crypto { () throws(CryptoError) in
            try PACE.authenticationToken(macKey: keys.mac, type: type, oid: id.oid, otherPublicKey: ephemeral.publicKey,
                                         keyAgreement: domain.keyAgreement)
        }
        guard let chipToken = tokenAnswer[0x86], constantTimeEqual(chipToken, expected) else {
            throw MRTDError(.accessDenied, "the chip's PACE token does not verify (wrong access key, or not the chip it claims)")
        }
        session.secureMessaging = PACE.secureMessaging(encryptionKey: keys.encryption, macKey: keys.mac, type: type)
        var proof: PACEResult.ChipAuthenticationMappingProof?
        if id.mapping == .chipAuthenticationMapping, case .ec(let curve) = domain {
            proof = .init(encryptedData: tokenAnswer[0x8A], chipMapKey: chipMapKey, curve: curve, encryptionKey: keys.encryption, type: type)
        }
        var result = PACEResult(info: info, chipAuthenticationMapping: proof)
        result.chipIdentifier = PACE.compressed(chipKey, domain: domain)
        result.terminalKey = PACE.compressed(ephemeral.publicKey, domain: domain)
        return result
    }

    /// MSE:Set AT — the protocol, the password reference (01 MRZ, 02 CAN), the parameter id
    /// (84). Most chips take the parameter id, some require it (6A87 without), some refuse it
    /// (6A80): the other form is tried once, and what worked is kept for the read.
    private func setAuthenticationTemplate(on session: CardSession) async throws(MRTDError) {
        let base = CardSession.mechanismReference(info.protocolID.oid) + [0x83, 0x01, key.pacePasswordReference]
        let parameter: [UInt8] = info.parameterId.map { [0x84, 0x01, UInt8(truncatingIfNeeded: $0)] } ?? []
        func accepted(_ answer: CardAnswer) -> Bool { answer.status == .ok || answer.status == .verificationFailed }
        let withParameter = session.limits.mseWithParameterId ?? !parameter.isEmpty
        var answer = try await session.manageSecurityEnvironment(.pace, base + (withParameter ? parameter : []), .plain)
        if session.limits.mseWithParameterId == nil, !parameter.isEmpty,
           answer.status == .dataRefused || answer.status == .incorrectParameters || answer.status == .beyondEnd {
            let other = try await session.manageSecurityEnvironment(.pace, base + (withParameter ? [] : parameter), .plain)
            if accepted(other) {
                session.limits.mseWithParameterId = !withParameter
                answer = other
            }
        } else if accepted(answer) {
            session.limits.mseWithParameterId = withParameter
        }
        guard accepted(answer) else {
            throw MRTDError(.notSupported, "the chip refused \(info.protocolID) (MSE:Set AT: \(answer.statusWord.meaning))",
                            statusWord: answer.statusWord)
        }
    }

    private func step(_ session: CardSession, _ name: String, _ objects: [UInt8], last: Bool) async throws(MRTDError) -> [UInt32: [UInt8]] {
        switch try await session.generalAuthenticate(objects, last: last, step: name, .plain) {
        case .objects(let objects): return objects
        case .refused(let answer):
            throw MRTDError(.unexpectedStatus, "PACE \(name): \(answer.statusWord.meaning)", statusWord: answer.statusWord)
        }
    }

    private func crypto<T>(_ body: () throws(CryptoError) -> T) throws(MRTDError) -> T {
        do {
            return try body()
        } catch {
            throw MRTDError(.cryptoFailure, "PACE: \(error.reason)")
        }
    }
}
