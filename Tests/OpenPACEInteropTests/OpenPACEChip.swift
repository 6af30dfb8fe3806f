import CVCertificates
import Foundation
import MRTDEmulator
import SmartCard
import Synchronization

/// An in-process eMRTD whose PACE, Chip Authentication and secure messaging are all OpenPACE's:
/// the files come from an emulated passport, every computation on them from libeac. Our reader
/// reads it as it would a card.
final class OpenPACEChip: CardConnection, @unchecked Sendable {  // state behind `lock`
    let readerName = "OpenPACE chip (in-process)"
    let atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01]
    var supportsExtendedLength: Bool { false }
    /// In-process: its time is this process's CPU, not a card's.
    var exchangeTimeLimit: Duration? { nil }

    private let passport: EmulatedPassport
    private let password: OpenPACE.Password
    private let integratedMapping: Bool
    private let lock = NSLock()

    private enum DF { case master, application }
    private var df = DF.master
    private var selected: UInt16?
    private var pace: OpenPACE?
    private var paceStep = 0
    private var terminalKey: [UInt8] = []
    private var secureMessaging: OpenPACESecureMessaging?
    private var chipAuthentication: OpenPACE?
    /// Keys that take over once the current answer has gone out (after Chip Authentication).
    private var nextSecureMessaging: OpenPACESecureMessaging?
    private(set) var paceCompleted = false
    private(set) var chipAuthenticationCompleted = false
    /// Terminal Authentication, OpenPACE's card side: the chip's ephemeral PACE key (for ID_PICC),
    /// the terminal's CA key (for Comp(PK_PCD)), whether TA began and succeeded.
    private var chipPACEKey: [UInt8] = []
    private var terminalChipAuthenticationKey: [UInt8] = []
    private var terminalAuthenticationStarted = false
    private(set) var terminalAuthenticated = false
    private(set) var certificatesImported = 0
    /// What went wrong inside, for the test's message.
    private(set) var problems: [String] = []

    init(passport: EmulatedPassport, password: OpenPACE.Password, integratedMapping: Bool) {
        self.passport = passport
        self.password = password
        self.integratedMapping = integratedMapping
    }

    func transmit(raw: [UInt8]) async throws -> [UInt8] { lock.withLock { handle(raw) } }
    func isCardPresent() async -> Bool { true }
    func presence() async -> CardPresence { .present }
    func capabilities() async -> ReaderCapabilities { ReaderCapabilities() }
    func disconnect() async {}

    var problemsSoFar: [String] { lock.withLock { problems } }

    private func handle(_ raw: [UInt8]) -> [UInt8] {
        guard let outer = try? CommandAPDU(bytes: raw) else { return [0x67, 0x00] }
        let protected = outer.cla & 0x0C == 0x0C
        var command = outer
        if protected {
            guard let secureMessaging else { return [0x69, 0x88] }
            do {
                command = try secureMessaging.unprotect(outer)
            } catch {
                problems.append("\(error)")
                self.secureMessaging = nil
                return [0x69, 0x88]
            }
        } else if secureMessaging != nil {
            secureMessaging = nil
        }
        var response = execute(command)
        if protected, let secureMessaging {
            if response.data.count > 0xDF { response.data = Array(response.data.prefix(0xDF)) }
            do {
                response = try secureMessaging.protect(response, oddINS: command.ins & 1 == 1)
            } catch {
                problems.append("\(error)")
                return [0x6F, 0x00]
            }
        }
        if let next = nextSecureMessaging {
            secureMessaging = next
            nextSecureMessaging = nil
        }
        return response.bytes
    }

    private func execute(_ command: CommandAPDU) -> ResponseAPDU {
        switch command.ins {
        case 0xA4: return select(command)
        case 0xB0: return readBinary(command)
        case 0x22: return manageSecurityEnvironment(command)
        case 0x86: return generalAuthenticate(command)
        case 0x2A: return verifyCertificate(command)
        case 0x84: return getChallenge(command)
        case 0x82: return externalAuthenticate(command)
        default: return ResponseAPDU(statusWord: .insNotSupported)
        }
    }

    /// The files of `df`; in the application also EF.CVCA of an EAC chip.
    private func files(_ df: DF) -> [UInt16: [UInt8]] {
        guard df == .application else { return passport.masterFiles }
        var files = passport.applicationFiles
        if let eac = passport.eac { files[0x011C] = eac.cvcaFile }
        return files
    }

    private func select(_ command: CommandAPDU) -> ResponseAPDU {
        switch command.p1 {
        case 0x00 where command.data.isEmpty || command.data == [0x3F, 0x00]:
            df = .master
            selected = nil
        case 0x04 where command.data == CardSessionAID.eMRTD:
            guard secureMessaging != nil || paceCompleted else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
            df = .application
            selected = nil
        case 0x02, 0x00 where command.data.count == 2:
            let fid = UInt16(command.data[0]) << 8 | UInt16(command.data[1])
            guard files(df)[fid] != nil else { return ResponseAPDU(statusWord: .fileNotFound) }
            selected = fid
        default:
            return ResponseAPDU(statusWord: .fileNotFound)
        }
        return ResponseAPDU(statusWord: .success)
    }

    private func readBinary(_ command: CommandAPDU) -> ResponseAPDU {
        var offset = Int(command.p1) << 8 | Int(command.p2)
        if command.p1 & 0x80 != 0 {
            let sfi = command.p1 & 0x1F
            let fid: UInt16 = 0x0100 | UInt16(sfi)
            guard files(df)[fid] != nil else { return ResponseAPDU(statusWord: .fileNotFound) }
            selected = fid
            offset = Int(command.p2)
        }
        guard let fid = selected, let content = files(df)[fid] else { return ResponseAPDU(statusWord: .commandNotAllowedNoEF) }
        if df == .application, secureMessaging == nil { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        if df == .application, fid == 0x0103 || fid == 0x0104, passport.eac != nil, !terminalAuthenticated {
            return ResponseAPDU(statusWord: .securityStatusNotSatisfied)
        }
        guard offset <= content.count else { return ResponseAPDU(statusWord: .wrongP1P2) }
        let end = min(content.count, offset + (command.ne ?? 256))
        return ResponseAPDU(data: Array(content[offset..<end]), statusWord: .success)
    }

    private func manageSecurityEnvironment(_ command: CommandAPDU) -> ResponseAPDU {
        guard let objects = try? OpenPACESecureMessaging.objects(command.data) else { return ResponseAPDU(statusWord: .wrongData) }
        let value = { (tag: UInt8) in objects.first { $0.tag == tag }?.value }
        do {
            switch (command.p1, command.p2) {
            case (0xC1, 0xA4):
                guard let oid = value(0x80), let cardAccess = passport.masterFiles[0x011C] else { return ResponseAPDU(statusWord: .wrongData) }
                let eac = try OpenPACE(securityInfos: cardAccess, forIntegratedMapping: integratedMapping)
                guard let index = try (0..<eac.paceCount).first(where: { try eac.selectPACE($0) == oid }) else {
                    return ResponseAPDU(statusWord: .referencedDataNotFound)
                }
                try eac.selectPACE(index)
                try eac.setPassword(password)
                pace = eac
                paceStep = 1
                return ResponseAPDU(statusWord: .success)
            case (0x41, 0xA4):
                guard let oid = value(0x80) else { return ResponseAPDU(statusWord: .wrongData) }
                let eac = try chipAuthenticationContext(oid: oid)
                chipAuthentication = eac
                return ResponseAPDU(statusWord: .success)
            case (0x41, 0xA6):
                // MSE:Set KAT (3DES Chip Authentication): the key agreement happens now.
                guard let key = value(0x91) else { return ResponseAPDU(statusWord: .wrongData) }
                let eac = try chipAuthenticationContext(oid: nil)
                try eac.chipAgree(terminalKey: key)
                terminalChipAuthenticationKey = key
                try finishChipAuthentication(eac)
                return ResponseAPDU(statusWord: .success)
            case (0x81, 0xB6), (0x81, 0xA4):
                // MSE:Set DST (the key the next certificate is checked with) and MSE:Set AT for TA:
                // OpenPACE follows the chain itself from its trust anchor and the CARs.
                guard let eac = chipAuthentication, chipAuthenticationCompleted, value(0x83) != nil else {
                    return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
                }
                if !terminalAuthenticationStarted {
                    guard let cvca = passport.eac?.trustPoints.first else { return ResponseAPDU(statusWord: .functionNotSupported) }
                    try eac.trust(cvca: cvca.encoded)
                    terminalAuthenticationStarted = true
                }
                return ResponseAPDU(statusWord: .success)
            default:
                return ResponseAPDU(statusWord: .incorrectP1P2)
            }
        } catch {
            problems.append("\(error)")
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
    }

    /// PSO:Verify Certificate: the body and signature as a certificate (7F21) into TA_STEP2.
    private func verifyCertificate(_ command: CommandAPDU) -> ResponseAPDU {
        guard let eac = chipAuthentication, terminalAuthenticationStarted, command.p1 == 0x00, command.p2 == 0xBE else {
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
        let count = command.data.count
        let length: [UInt8] = count < 0x80 ? [UInt8(count)] : count < 0x100 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
        do {
            try eac.importCertificate([0x7F, 0x21] + length + command.data)
            certificatesImported += 1
            return ResponseAPDU(statusWord: .success)
        } catch {
            problems.append("\(error)")
            return ResponseAPDU(statusWord: .wrongData)
        }
    }

    /// GET CHALLENGE after Chip Authentication: r_PICC from TA_STEP4.
    private func getChallenge(_ command: CommandAPDU) -> ResponseAPDU {
        guard let eac = chipAuthentication, terminalAuthenticationStarted else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        do {
            return ResponseAPDU(data: try eac.terminalAuthenticationNonce(), statusWord: .success)
        } catch {
            problems.append("\(error)")
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
    }

    /// EXTERNAL AUTHENTICATE: TA_STEP6 checks the signature over ID_PICC ‖ r_PICC ‖ Comp(PK_PCD),
    /// both compressed by OpenPACE from the keys of PACE and Chip Authentication.
    private func externalAuthenticate(_ command: CommandAPDU) -> ResponseAPDU {
        guard let eac = chipAuthentication, let paceContext = pace, terminalAuthenticationStarted else {
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
        do {
            // ID_PICC as TR-03110-3 A.2.2.3 and TR-03111's FE2OS make it: the x coordinate at the
            // field's length. OpenPACE's Comp drops its leading zero bytes; once in 256 PACE keys
            // that made this chip check our signature over a shorter ID_PICC than the reader
            // signed (CI, AES-128 brainpoolP256r1). Comp(PK_PCD) needs no such care: the reader
            // draws its Chip Authentication key again when its x coordinate starts with zero.
            var chipIdentifier = try paceContext.compressed(chipPACEKey, .pace)
            if chipPACEKey.first == 0x04, chipPACEKey.count % 2 == 1, chipIdentifier.count < chipPACEKey.count / 2 {
                chipIdentifier = [UInt8](repeating: 0, count: chipPACEKey.count / 2 - chipIdentifier.count) + chipIdentifier
            }
            let terminalKey = try eac.compressed(terminalChipAuthenticationKey, .chipAuthentication)
            try eac.verifyTerminal(compressedTerminalKey: terminalKey, chipIdentifier: chipIdentifier, signature: command.data)
            terminalAuthenticated = true
            return ResponseAPDU(statusWord: .success)
        } catch {
            problems.append("\(error)")
            return ResponseAPDU(statusWord: StatusWord(sw1: 0x63, sw2: 0x00))
        }
    }

    /// OpenPACE's context over DG14's SecurityInfos with the chip's key pair set.
    private func chipAuthenticationContext(oid: [UInt8]?) throws -> OpenPACE {
        guard let dg14 = passport.applicationFiles[0x010E], let template = try OpenPACESecureMessaging.objects(dg14).first,
              let key = passport.chipAuthenticationKey else { throw OpenPACESecureMessaging.Failure("no Chip Authentication on this chip") }
        let eac = try OpenPACE(securityInfos: template.value)
        if let oid {
            guard let index = try (0..<eac.chipAuthenticationCount).first(where: { try eac.selectChipAuthentication($0).oid == oid }) else {
                throw OpenPACESecureMessaging.Failure("OpenPACE has no ChipAuthenticationInfo for the OID asked for")
            }
            try eac.selectChipAuthentication(index)
        } else {
            try eac.selectChipAuthentication(0)
        }
        switch key {
        case .ec(let privateKey):
            guard let (_, scalar, point) = privateKey.ecKey else { throw OpenPACESecureMessaging.Failure("no EC key") }
            try eac.setChipKeyPair(privateKey: scalar, publicKey: point)
        case .dh(_, let privateKey, let publicKey):
            try eac.setChipKeyPair(privateKey: privateKey, publicKey: publicKey)
        }
        return eac
    }

    private func finishChipAuthentication(_ eac: OpenPACE) throws {
        try eac.startSecureMessaging(.chipAuthentication)
        // This answer still goes out under the PACE keys; the next command comes under CA's.
        nextSecureMessaging = OpenPACESecureMessaging(eac: eac)
        chipAuthentication = eac
        chipAuthenticationCompleted = true
    }

    private func generalAuthenticate(_ command: CommandAPDU) -> ResponseAPDU {
        guard let outer = try? OpenPACESecureMessaging.objects(command.data), let template = outer.first, template.tag == 0x7C,
              let objects = try? OpenPACESecureMessaging.objects(template.value) else { return ResponseAPDU(statusWord: .wrongData) }
        let value = { (tag: UInt8) in objects.first { $0.tag == tag }?.value }
        func answer(_ tag: UInt8, _ data: [UInt8]) -> ResponseAPDU {
            ResponseAPDU(data: OpenPACESecureMessaging.object(0x7C, OpenPACESecureMessaging.object(tag, data)), statusWord: .success)
        }
        do {
            if let eac = chipAuthentication, !chipAuthenticationCompleted, let key = value(0x80) {
                try eac.chipAgree(terminalKey: key)
                terminalChipAuthenticationKey = key
                try finishChipAuthentication(eac)
                return ResponseAPDU(data: [0x7C, 0x00], statusWord: .success)
            }
            guard let eac = pace else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
            switch paceStep {
            case 1:
                paceStep = 2
                return answer(0x80, try eac.encryptedNonce())
            case 2:
                // GM: the chip's own mapping key goes back; IM: the terminal's nonce alone maps.
                let mine = integratedMapping ? [] : try eac.mappingData()
                try eac.map(peer: value(0x81) ?? [])
                paceStep = 3
                return answer(0x82, mine)
            case 3:
                guard let theirs = value(0x83) else { return ResponseAPDU(statusWord: .wrongData) }
                let mine = try eac.ephemeralKey()
                chipPACEKey = mine
                try eac.sharedSecret(peer: theirs)
                try eac.deriveKeys()
                terminalKey = theirs
                paceStep = 4
                return answer(0x84, mine)
            case 4:
                guard let token = value(0x85) else { return ResponseAPDU(statusWord: .wrongData) }
                paceStep = 0
                do {
                    try eac.verifyToken(token)
                } catch {
                    problems.append("\(error)")
                    return ResponseAPDU(statusWord: StatusWord(sw1: 0x63, sw2: 0x00))
                }
                let mine = try eac.token(peerKey: terminalKey)
                try eac.startSecureMessaging(.pace)
                nextSecureMessaging = OpenPACESecureMessaging(eac: eac)
                paceCompleted = true
                return answer(0x86, mine)
            default:
                return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
            }
        } catch {
            problems.append("\(error)")
            paceStep = 0
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
    }
}

enum CardSessionAID {
    static let eMRTD: [UInt8] = [0xA0, 0x00, 0x00, 0x02, 0x47, 0x10, 0x01]
}
