import Foundation
import MRTD
import MRTDCrypto
import SmartCardCore
import Synchronization

/// An ICAO 9303 LDS1 chip that answers APDUs like a real passport: MF and eMRTD application,
/// SELECT by file id and SFI, READ BINARY (short, extended, odd INS B1), GET CHALLENGE, BAC
/// (EXTERNAL/MUTUAL AUTHENTICATE) and 3DES secure messaging with a MAC check on every command.
/// Before BAC only SELECT of the application, GET CHALLENGE and the MF's public files work.
///
/// Thread-safe: transports may call `process` from any thread; calls are serialised.
public final class VirtualPassportChip: Sendable {
    /// What the chip did with an APDU.
    public enum Output: Sendable, Hashable {
        case response([UInt8])
        /// The card left the field (fault injection); nothing was answered.
        case removed
    }

    /// Counters a test can inspect.
    public struct Statistics: Sendable, Hashable {
        public var apdus = 0
        public var readBinaryCommands = 0
        public var bytesRead = 0
        public var bacSuccesses = 0
        public var bacFailures = 0
        public var secureMessagingFailures = 0
        public var paceSuccesses = 0
        public var paceFailures = 0
        public var activeAuthentications = 0
        public var chipAuthentications = 0
    }

    enum DF { case master, application }

    struct State {
        var df: DF = .master
        var selectedFile: UInt16?
        var challenge: [UInt8]?
        var sm: SecureMessaging?
        var pace: ChipPACESession?
        var chipAuthenticationSelected = false
        /// Keys that replace the session once the current answer is out (Chip Authentication).
        var pendingSession: SecureMessaging?
        var authenticated = false
        var faults = ChipFaults()
        var apdusSinceFaults = 0
        /// APDUs since power-on (for the tag-loss quirk).
        var apdusSincePowerOn = 0
        var removed = false
        /// When a card that left by the tag-loss quirk is back in the field.
        var returnsAt: ContinuousClock.Instant?
        /// The tag-loss quirk strikes once per chip.
        var tagLossDone = false
        /// The broken-answer quirk strikes once per chip.
        var brokenAnswerDone = false
        /// What GET RESPONSE still has to hand over (`getResponseAnswers`).
        var pendingAnswer: [UInt8] = []
        var statistics = Statistics()
    }

    public let passport: EmulatedPassport
    public let atr: [UInt8]
    private let bacKeys: BAC.Keys
    private let state = Mutex(State())
    /// The field behaviours this chip reproduces (`passport.quirks`, checked when it was loaded).
    let quirks: ChipQuirks.Resolved

    public init(passport: EmulatedPassport) {
        self.passport = passport
        self.quirks = (try? passport.quirks.resolved()) ?? ChipQuirks.Resolved()
        self.bacKeys = BAC.Keys(keySeed: KeyDerivation.bacKeySeed(mrzInformation: passport.mrzKeyInformation))
        self.atr = Self.contactlessATR(historicalBytes: Array("GBGeMRTD".utf8))
    }

    /// A PC/SC part 3 style ATR for a contactless card: 3B 8n 80 01, historical bytes, TCK.
    static func contactlessATR(historicalBytes: [UInt8]) -> [UInt8] {
        let body: [UInt8] = [0x80 | UInt8(historicalBytes.count), 0x80, 0x01] + historicalBytes
        return [0x3B] + body + [body.reduce(0, ^)]
    }

    /// Sets the faults to inject from now on (the APDU count for `removeAfterAPDUs` restarts).
    public func setFaults(_ faults: ChipFaults) {
        state.withLock {
            $0.faults = faults
            $0.apdusSinceFaults = 0
        }
    }

    public var faults: ChipFaults { state.withLock { $0.faults } }
    public var statistics: Statistics { state.withLock { $0.statistics } }
    /// Whether the card is out of the field (`removeAfterAPDUs`, or the tag-loss quirk until it
    /// comes back by itself).
    public var isRemoved: Bool {
        state.withLock { state in
            if state.removed, let back = state.returnsAt, ContinuousClock.now >= back {
                Self.powerOn(&state)
            }
            return state.removed
        }
    }

    /// Whether the card, once out of the field, comes back by itself (the tag-loss quirk).
    public var returnsByItself: Bool { state.withLock { $0.returnsAt != nil } }
    /// Whether BAC has been completed in this session.
    public var isAuthenticated: Bool { state.withLock { $0.authenticated } }

    /// Power-on or warm reset: back to the MF, no session. A removed card is put back.
    public func reset() {
        state.withLock { Self.powerOn(&$0) }
    }

    private static func powerOn(_ state: inout State) {
        let faults = state.faults
        let statistics = state.statistics
        let tagLossDone = state.tagLossDone
        state = State()
        state.faults = faults
        state.statistics = statistics
        state.tagLossDone = tagLossDone
    }

    /// Puts a removed card back into the field (it starts unauthenticated).
    public func reinsert() {
        reset()
        state.withLock { $0.faults.removeAfterAPDUs = nil }
    }

    /// Processes one command APDU. Latency faults are the transport's job (it knows whether it
    /// may block its thread): see `faults.latencyPerAPDU`.
    public func process(_ command: [UInt8]) -> Output {
        state.withLock { state -> Output in
            if state.removed { return .removed }
            if let limit = state.faults.removeAfterAPDUs, state.apdusSinceFaults >= limit {
                state.removed = true
                state.sm = nil
                state.authenticated = false
                return .removed
            }
            if let loss = quirks.tagLoss, !quirks.tagLossAfterAnswer, !state.tagLossDone, state.apdusSincePowerOn >= loss.afterAPDUs {
                // The document moved on the reader: gone, and back in a moment.
                state.tagLossDone = true
                state.removed = true
                state.returnsAt = ContinuousClock.now + .milliseconds(loss.returnAfterMilliseconds)
                return .removed
            }
            state.apdusSinceFaults += 1
            state.apdusSincePowerOn += 1
            state.statistics.apdus += 1
            if quirks.getResponseAnswers, let fetched = getResponse(command, &state) { return .response(fetched) }
            var answer = handle(command, &state)
            if quirks.getResponseAnswers, answer.count > 2 {
                state.pendingAnswer = answer
                answer = announce(state)
            }
            if let loss = quirks.tagLoss, quirks.tagLossAfterAnswer, !state.tagLossDone, state.apdusSincePowerOn >= loss.afterAPDUs {
                // Answered, then gone: the link closes before the next command.
                state.tagLossDone = true
                state.removed = true
                state.returnsAt = ContinuousClock.now + .milliseconds(loss.returnAfterMilliseconds)
            }
            if let at = quirks.brokenAnswerAt, !state.brokenAnswerDone, state.apdusSincePowerOn >= at {
                // The chip did its work; one byte of the answer reaches the reader.
                state.brokenAnswerDone = true
                return .response(Array(answer.prefix(1)))
            }
            return .response(answer)
        }
    }

    // MARK: Dispatch

    /// `getResponseAnswers`: GET RESPONSE (00 C0 00 00 Le) hands over the next part of the held
    /// answer; `nil` for any other command (which drops what was held).
    private func getResponse(_ raw: [UInt8], _ state: inout State) -> [UInt8]? {
        guard raw.count >= 4, raw[1] == 0xC0, raw[0] & 0x80 == 0 else {
            state.pendingAnswer = []
            return nil
        }
        guard !state.pendingAnswer.isEmpty else { return StatusWord.conditionsOfUseNotSatisfied.bytes }
        let ne = raw.count == 5 ? Int(raw[4]) : 0
        return nextChunk(ne: ne, &state)
    }

    /// The held answer announced: 61xx with how many bytes follow (xx = 00 for 256 or more).
    private func announce(_ state: State) -> [UInt8] {
        [0x61, UInt8(min(state.pendingAnswer.count - 2, 256) & 0xFF)]
    }

    /// Up to `ne` (0 = 256) bytes of the held answer's data; 61xx while more remain, the answer's
    /// own status word with the last part.
    private func nextChunk(ne: Int, _ state: inout State) -> [UInt8] {
        let data = Array(state.pendingAnswer.dropLast(2))
        let status = Array(state.pendingAnswer.suffix(2))
        let take = min(ne == 0 ? 256 : ne, data.count)
        let rest = Array(data.dropFirst(take))
        if rest.isEmpty {
            state.pendingAnswer = []
            return Array(data.prefix(take)) + status
        }
        state.pendingAnswer = rest + status
        return Array(data.prefix(take)) + announce(state)
    }

    private func handle(_ raw: [UInt8], _ state: inout State) -> [UInt8] {
        guard let outer = try? CommandAPDU(bytes: raw) else { return StatusWord.wrongLength.bytes }
        // Proprietary and reader-level classes (b8 set, e.g. PC/SC's FF CA) are not this chip's:
        // refused in plain as real chips do, the secure-messaging session untouched.
        if outer.cla & 0x80 != 0 { return StatusWord.claNotSupported.bytes }
        if outer.isExtended && !passport.extendedLength {
            dropSession(&state)
            return StatusWord.wrongLength.bytes
        }
        let protected = outer.cla & 0x0C == 0x0C
        var command = outer
        if protected {
            guard var sm = state.sm else {
                // Secure messaging without a session.
                return StatusWord.smDataObjectsIncorrect.bytes
            }
            do {
                command = try sm.unprotectCommand(outer)
                state.sm = sm
            } catch {
                state.statistics.secureMessagingFailures += 1
                dropSession(&state)
                return (error.statusWord ?? .smDataObjectsIncorrect).bytes
            }
        } else if state.sm != nil {
            // A plain command ends the secure-messaging session, as on real chips.
            dropSession(&state)
        }
        let response: ResponseAPDU
        if let index = state.faults.statusOverrides.firstIndex(where: { $0.matches(command) }) {
            let override = state.faults.statusOverrides[index]
            if override.once { state.faults.statusOverrides.remove(at: index) }
            if override.plain {
                dropSession(&state)
                return override.statusWord.bytes
            }
            response = ResponseAPDU(statusWord: override.statusWord)
        } else {
            response = execute(command, &state)
        }
        // Only answers to protected commands are protected (BAC's own answer goes out plain).
        guard protected, state.sm != nil else {
            if !command.isExtended, response.data.count > 256 { return StatusWord.wrongLength.bytes }
            return response.bytes
        }
        if quirks.noStatusObject, response.statusWord != .success, response.data.isEmpty {
            // As vsmartcard's ePass: an error answer carries no MAC, and the counter does not move.
            return response.statusWord.bytes
        }
        if quirks.plainErrors, response.data.isEmpty, response.statusWord != .success {
            // An error answered without secure messaging, as some chips do.
            if quirks.plainErrorsCountInSSC { state.sm?.countUnprotectedAnswer() }
            if quirks.plainErrorsEndSession { dropSession(&state) }
            return response.statusWord.bytes
        }
        let wrapped = wrap(response, for: command, &state)
        if let next = state.pendingSession {
            state.pendingSession = nil
            state.sm = next
        }
        return wrapped
    }

    /// Protects `response` in the active session; enforces the short-APDU response size.
    private func wrap(_ response: ResponseAPDU, for command: CommandAPDU, _ state: inout State) -> [UInt8] {
        guard var sm = state.sm else { return response.bytes }
        do {
            let before = sm
            let oddINS = command.ins & 1 == 1 && !response.data.isEmpty
            var protected = quirks.noStatusObject ? try sm.protectResponseWithoutStatus(response, oddINS: oddINS)
                                                  : try sm.protectResponse(response, oddINS: oddINS)
            if !command.isExtended, protected.data.count > 256 {
                // The protected answer would not fit a short response. A READ BINARY asking for up
                // to 256 bytes (Le = 00) gets as many as fit — 223 under AES, 231 under 3DES — as
                // real chips answer it (ISO 7816-4: Le = 00 means "up to 256"); an explicit Le that does
                // not fit (E8–FF under 3DES) and any other answer: 6700.
                sm = before
                let fits = command.ins == 0xB0 && command.ne == 256 && response.statusWord == .success
                let shorter = fits ? ResponseAPDU(data: Array(response.data.prefix(sm.largestShortReadLength)), statusWord: .success)
                                   : ResponseAPDU(statusWord: .wrongLength)
                protected = quirks.noStatusObject && fits ? try sm.protectResponseWithoutStatus(shorter, oddINS: oddINS)
                                                          : try sm.protectResponse(shorter, oddINS: oddINS)
            }
            if state.faults.corruptNextResponseMAC, protected.data.count >= 8 {
                state.faults.corruptNextResponseMAC = false
                protected.data[protected.data.count - 1] ^= 0x5A
            }
            state.sm = sm
            return protected.bytes
        } catch {
            dropSession(&state)
            return StatusWord.noPreciseDiagnosis.bytes
        }
    }

    private func dropSession(_ state: inout State) {
        state.sm = nil
        state.pendingSession = nil
        state.chipAuthenticationSelected = false
        state.authenticated = false
        state.challenge = nil
    }

    private func execute(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard command.cla & 0xE0 == 0x00 else { return ResponseAPDU(statusWord: .claNotSupported) }
        switch command.ins {
        case 0xA4: return select(command, &state)
        case 0xB0, 0xB1: return readBinary(command, &state)
        case 0x84: return getChallenge(command, &state)
        case 0x82: return externalAuthenticate(command, &state)
        case 0x22: return mseSetAT(command, &state)
        case 0x88: return internalAuthenticate(command, &state)
        case 0x86: return generalAuthenticate(command, &state)
        default: return ResponseAPDU(statusWord: .insNotSupported)
        }
    }

    // MARK: Files

    private func file(_ fid: UInt16, in df: DF) -> [UInt8]? {
        switch df {
        case .master: return passport.masterFiles[fid]
        case .application: return passport.applicationFiles[fid]
        }
    }

    /// Before access control only the MF's public files (EF.CardAccess, EF.ATR/INFO) are readable;
    /// EF.CardSecurity and the application need PACE or BAC.
    private func mayAccess(_ df: DF, _ state: State, fid: UInt16? = nil) -> Bool {
        if state.authenticated { return true }
        return df == .master && fid != 0x011D
    }

    private func sfiToFID(_ sfi: UInt8, in df: DF) -> UInt16? {
        switch df {
        case .master:
            switch sfi {
            case 0x1C: return EmulatedPassport.efCardAccess
            case 0x1D: return 0x011D
            case 0x01: return EmulatedPassport.efATRInfo
            default: return nil
            }
        case .application:
            switch sfi {
            case 0x1E: return EmulatedPassport.efCOM
            case 0x1D: return EmulatedPassport.efSOD
            case 0x01...0x10: return EmulatedPassport.dataGroupFID(Int(sfi))
            default: return nil
            }
        }
    }

    private func select(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        switch quirks.selectLe {
        case .refused? where command.ne != nil: return ResponseAPDU(statusWord: .wrongLength)
        case .required? where command.ne == nil: return ResponseAPDU(statusWord: .wrongLength)
        default: break
        }
        switch command.p1 {
        case 0x04:
            guard command.data == EmulatedPassport.eMRTDApplicationID else { return ResponseAPDU(statusWord: .fileNotFound) }
            state.df = .application
            state.selectedFile = nil
            return ResponseAPDU(statusWord: .success)
        case 0x00 where command.data.isEmpty || command.data == [0x3F, 0x00]:
            if let answer = quirks.selectMasterFile { return ResponseAPDU(statusWord: answer) }
            state.df = .master
            state.selectedFile = nil
            return ResponseAPDU(statusWord: .success)
        case 0x00, 0x02:
            guard command.data.count == 2 else { return ResponseAPDU(statusWord: .lcInconsistentWithP1P2) }
            let fid = UInt16(command.data[0]) << 8 | UInt16(command.data[1])
            guard mayAccess(state.df, state, fid: fid) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
            guard let content = file(fid, in: state.df) else { return ResponseAPDU(statusWord: .fileNotFound) }
            state.selectedFile = fid
            if command.p2 & 0x0C == 0x0C { return ResponseAPDU(statusWord: .success) }
            // FCP: file size and id.
            let fcp = BERTLV.encode(tag: 0x62, value: BERTLV.encode(tag: 0x80, value: [UInt8(content.count >> 8 & 0xFF), UInt8(content.count & 0xFF)])
                + BERTLV.encode(tag: 0x82, value: [0x01]) + BERTLV.encode(tag: 0x83, value: command.data))
            return ResponseAPDU(data: fcp, statusWord: .success)
        default:
            return ResponseAPDU(statusWord: .incorrectP1P2)
        }
    }

    private func readBinary(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        var offset: Int
        if command.ins == 0xB1 {
            guard let object = try? BERTLV.parseSingle(command.data), object.tag == 0x54, (1...3).contains(object.value.count) else {
                return ResponseAPDU(statusWord: .wrongData)
            }
            offset = object.value.reduce(0) { $0 << 8 | Int($1) }
            if command.p1 != 0 || command.p2 != 0 {
                // P1-P2 may carry a file id (00 = current EF).
                let fid = UInt16(command.p1) << 8 | UInt16(command.p2)
                guard mayAccess(state.df, state) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
                guard file(fid, in: state.df) != nil else { return ResponseAPDU(statusWord: .fileNotFound) }
                state.selectedFile = fid
            }
        } else if command.p1 & 0x80 != 0 {
            if let answer = quirks.noShortFileIdentifier { return ResponseAPDU(statusWord: answer) }
            guard command.p1 & 0x60 == 0, let fid = sfiToFID(command.p1 & 0x1F, in: state.df) else {
                return ResponseAPDU(statusWord: .incorrectP1P2)
            }
            guard mayAccess(state.df, state, fid: fid) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
            guard file(fid, in: state.df) != nil else { return ResponseAPDU(statusWord: .fileNotFound) }
            state.selectedFile = fid
            offset = Int(command.p2)
        } else {
            offset = Int(command.p1) << 8 | Int(command.p2)
        }
        guard let fid = state.selectedFile else { return ResponseAPDU(statusWord: .commandNotAllowedNoEF) }
        guard mayAccess(state.df, state, fid: fid) else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        if state.df == .application, quirks.protectedFiles.contains(fid) { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        guard let content = file(fid, in: state.df) else { return ResponseAPDU(statusWord: .fileNotFound) }
        if quirks.cardAccessUnreadable, state.df == .master, fid == EmulatedPassport.efCardAccess {
            return ResponseAPDU(statusWord: .securityStatusNotSatisfied)
        }
        let ne = command.ne ?? 256
        if quirks.refuseLe00, ne == 256, !command.isExtended { return ResponseAPDU(statusWord: .wrongLength) }
        let cap = min(passport.maxReadLength, state.faults.readLengthCap ?? Int.max)
        guard ne <= cap else {
            if quirks.exactLengthHint, cap < 256 { return ResponseAPDU(statusWord: StatusWord(sw1: 0x6C, sw2: UInt8(cap))) }
            return ResponseAPDU(statusWord: .wrongLength)
        }
        guard offset <= content.count else { return ResponseAPDU(statusWord: .wrongP1P2) }
        state.statistics.readBinaryCommands += 1
        // Le = 00 (or 0000, or none) asks for everything available up to the maximum (ISO 7816-4
        // §5.1): fewer bytes at the end of the file are a normal answer, 9000. Only an explicit Ne
        // that runs past the end gets the warning 6282.
        let upToMaximum = command.ne == nil || (ne == 256 && !command.isExtended) || (ne == 65_536 && command.isExtended)
        if command.ins == 0xB1 {
            // The answer is a discretionary-data object 53 whose whole encoding fits Ne.
            var length = min(ne, content.count - offset)
            while length > 0, BERTLV.encode(tag: 0x53, value: [UInt8](repeating: 0, count: length)).count > ne { length -= 1 }
            let chunk = Array(content[offset..<(offset + length)])
            state.statistics.bytesRead += chunk.count
            return ResponseAPDU(data: BERTLV.encode(tag: 0x53, value: chunk),
                                statusWord: length < ne && offset + length == content.count && !upToMaximum ? .endOfFileReached : .success)
        }
        let end = min(content.count, offset + ne)
        let chunk = Array(content[offset..<end])
        state.statistics.bytesRead += chunk.count
        if quirks.endOfFileWarning, end == content.count { return ResponseAPDU(data: chunk, statusWord: .endOfFileReached) }
        return ResponseAPDU(data: chunk, statusWord: chunk.count < ne && !upToMaximum ? .endOfFileReached : .success)
    }

    // MARK: Authentication

    /// Active Authentication: sign the terminal's challenge with the AA key.
    private func internalAuthenticate(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard state.authenticated else { return ResponseAPDU(statusWord: .securityStatusNotSatisfied) }
        guard let key = passport.activeAuthenticationKey else { return ResponseAPDU(statusWord: .insNotSupported) }
        guard command.data.count == 8 else { return ResponseAPDU(statusWord: .wrongLength) }
        let signature: [UInt8]?
        if let publicKey = try? PublicKey(subjectPublicKeyInfo: key.subjectPublicKeyInfo), publicKey.keyType == .rsa {
            signature = try? ActiveAuthentication.signISO9796(key: key, modulusBytes: publicKey.byteSize, challenge: command.data)
        } else {
            signature = try? key.ecdsaSignPlain(digest: passport.activeAuthenticationDigest.hash(command.data))
        }
        guard let signature else { return ResponseAPDU(statusWord: .noPreciseDiagnosis) }
        state.statistics.activeAuthentications += 1
        return ResponseAPDU(data: signature, statusWord: .success)
    }

    private func getChallenge(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard command.ne == 8, command.data.isEmpty else { return ResponseAPDU(statusWord: .wrongLength) }
        // A PACE-only chip does not do BAC: no challenge before access control.
        guard passport.bacAllowed || state.authenticated else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        let challenge = secureRandomBytes(8)
        state.challenge = challenge
        return ResponseAPDU(data: challenge, statusWord: .success)
    }

    private func externalAuthenticate(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard passport.bacAllowed else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        guard let rndIC = state.challenge else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        state.challenge = nil
        guard command.data.count == 40 else { return ResponseAPDU(statusWord: .wrongLength) }
        let encrypted = Array(command.data[0..<32])
        let checksum = Array(command.data[32..<40])
        guard let expected = try? retailMAC(key: bacKeys.mac, iso9797Pad(encrypted, blockSize: 8)), expected == checksum,
              let s = try? BlockCipher.tripleDES.cbc(encrypt: false, key: bacKeys.encryption, encrypted),
              Array(s[8..<16]) == rndIC else {
            state.statistics.bacFailures += 1
            dropSession(&state)
            return ResponseAPDU(statusWord: .verificationFailed)
        }
        let rndIFD = Array(s[0..<8])
        let kIFD = Array(s[16..<32])
        let kIC = secureRandomBytes(16)
        // R = RND.IC ‖ RND.IFD ‖ K.IC, encrypted and MACed like the reader's S.
        guard let answer = try? BAC.authenticationData(keys: bacKeys, rndIFD: rndIC, rndIC: rndIFD, kIFD: kIC) else {
            return ResponseAPDU(statusWord: .noPreciseDiagnosis)
        }
        state.sm = BAC.session(kIFD: kIFD, kIC: kIC, rndIC: rndIC, rndIFD: rndIFD)
        state.authenticated = true
        state.statistics.bacSuccesses += 1
        // The answer itself goes out unprotected (the command was): the session starts with the next command.
        return ResponseAPDU(data: answer, statusWord: .success)
    }
}

extension StatusWord {
    var bytes: [UInt8] { [sw1, sw2] }
}
