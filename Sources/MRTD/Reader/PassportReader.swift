import Foundation
import MRTDCrypto
import SmartCardCore

/// Reads an eMRTD over an established card connection: access control, then EF.COM, EF.SOD and
/// the data groups with as few APDUs as the chip allows, then verification.
///
/// Adaptive reading: extended-length READ BINARY when EF.ATR/INFO or an extended GET CHALLENGE
/// says the chip takes it, otherwise the largest short Le secure messaging allows (0xE7 with
/// 3DES, 0xDF with AES); on 6700 / 6Cxx the size steps down, and where the chip drops secure
/// messaging the reader re-authenticates and continues at the same offset. A response whose MAC
/// does not verify aborts the read.
///
/// Tag loss: given a `reconnect` closure, a card that leaves the field mid-read does not end the
/// read. The reader reports `waitingForCard` (reason `cardRemoved`), gets a new connection from
/// the closure (which waits for the card, within the caller's timeout), opens the chip again with
/// the same access control, repeats Chip Authentication when it had been done (the chip that came
/// back must hold the same key), and continues from the file and offset where it stopped. Without
/// the closure, or when it gives up, the read fails with `cardRemoved`: never a half-read document.
public final class PassportReader {
    public typealias ProgressHandler = @Sendable (ReadProgress) -> Void
    /// Gives a new connection to the card once it is back in the field; throws when it does not
    /// come back in time (`SmartCardError.timeout`) or the read is cancelled.
    public typealias Reconnect = @Sendable () async throws -> any CardConnection

    static let eMRTDApplication: [UInt8] = [0xA0, 0x00, 0x00, 0x02, 0x47, 0x10, 0x01]
    /// Read sizes to fall back through, largest first.
    static let readSizeLadder = [32_768, 16_384, 8_192, 4_096, 2_048, 1_024, 512, 0xE7, 0xDF, 0xC0, 0xA0, 0x80, 0x60, 0x40, 0x20, 0x10, 0x08]
    static let maxReauthentications = 3
    /// How often a read survives the card leaving the field.
    static let maxReconnections = 8

    let channel: SecureChannel
    let accessKey: AccessKey
    let options: ReadOptions
    let progress: ProgressHandler?
    let reconnect: Reconnect?

    var readSize = 0xE7
    var reauthentications = 0
    var accessControl = "BAC"
    /// The PACE protocol in use, when PACE opened the chip.
    var pace: PACEInfo?
    /// Why PACE was not used although the chip offers it (reported, never silent).
    var accessControlNote: String?
    /// What the EF.CardAccess read said about extended length (nil: not probed yet).
    var probedExtendedLength: Bool?
    var cardAccess: [UInt8]?
    var cardSecurity: [UInt8]?
    /// The largest short READ BINARY whose protected answer fits 256 bytes: 0xE7 with 3DES
    /// secure messaging, 0xDF with AES (16-byte padding) — whatever the session now is.
    var shortLimit: Int { channel.session?.largestShortReadLength ?? 0xE7 }
    /// Whether Chip Authentication replaced the session keys.
    var chipAuthenticated = false
    /// Whether the Chip Authentication key came from EF.CardSecurity rather than DG14.
    var chipKeyFromCardSecurity = false
    var chipOutcome: VerificationOutcome?
    /// Whether the chip supports READ BINARY with a short EF identifier (`nil`: not learnt yet).
    var shortFileIdentifiers: Bool?
    /// Whether the chip wants an Le on SELECT (`nil`: not learnt yet; none is sent first).
    var selectWithLe: Bool?
    /// Whether MSE:Set AT for PACE carries the parameter id (`nil`: not learnt yet; sent first).
    var mseWithParameterId: Bool?
    /// EF.CardAccess answered 6A82 to a read by short EF identifier (absent, or no SFI support).
    var cardAccessNotFound = false
    /// Why EF.CardAccess gave no PACE offers although it seems to be there.
    var cardAccessNote: String?
    /// `lookAgainForPACE` ran (once per read).
    var lookedAgainForPACE = false
    var lookingAgainForPACE = false
    var lastPercent = 0
    var bytesOfFiles = 0
    /// Whether access control has opened the chip (tag loss after this re-opens it in place).
    var accessEstablished = false
    /// The Chip Authentication that succeeded: repeated when the card comes back after tag loss.
    var completedChipAuthentication: (offer: ChipAuthentication.Offer, source: String)?
    /// Tag-loss recoveries begun, and those that got the chip open again.
    var reconnectionAttempts = 0
    var reconnections = 0
    /// A new connection after tag loss, the chip not yet opened on it.
    var linkUnsettled = false
    /// A tag-loss recovery is under way (a second loss inside it goes to the recovery's loop).
    var recovering = false

    /// - Parameters:
    ///   - reconnect: how to get the card back after it left the field (see the type's notes);
    ///     `nil` makes tag loss end the read with `cardRemoved`.
    public init(connection: any CardConnection, accessKey: AccessKey, options: ReadOptions = ReadOptions(),
                progress: ProgressHandler? = nil, reconnect: Reconnect? = nil) {
        self.channel = SecureChannel(connection: connection, trace: options.trace)
        if !connection.supportsExtendedLength { probedExtendedLength = false }
        self.accessKey = accessKey
        self.options = options
        self.progress = progress
        self.reconnect = reconnect
    }

    /// The connection in use: the one given to `init`, or the one `reconnect` gave after tag loss.
    /// The caller disconnects it when the read is over.
    public var connection: any CardConnection { channel.connection }

    func report(_ phase: ReadProgress.Phase, file: String? = nil, bytesRead: Int? = nil, bytesTotal: Int? = nil, percent: Int,
                reason: String? = nil, message: String? = nil) {
        lastPercent = max(lastPercent, min(100, percent))
        progress?(ReadProgress(phase: phase, file: file, bytesRead: bytesRead, bytesTotal: bytesTotal, percent: lastPercent,
                               reason: reason, message: message))
    }

    /// Reads and verifies. Throws `accessDenied` for a wrong key, `cardRemoved`,
    /// `communicationFailure`, `secureMessagingFailure`, `cancelled` …; never returns a
    /// half-read file.
    public func read() async throws(MRTDError) -> PassportReadResult {
        let started = ContinuousClock.now
        report(.authenticating, percent: 2)
        while true {
            do {
                try await authenticate()
                settleAfterTagLoss()
                break
            } catch where isTagLoss(error) && reconnect != nil {
                // Gone before the chip was open: open it from the start once it is back.
                try await awaitCardAfterTagLoss(error)
                report(.authenticating, percent: 2)
            }
        }
        accessEstablished = true
        report(.reading, percent: 10)

        var files: [LDSFile: [UInt8]] = [:]
        var skipped: [LDSFile: FileAbsence] = [:]
        var parseErrors: [LDSFile: String] = [:]

        // EF.COM and EF.SOD first: together they say which data groups exist.
        for file in [LDSFile.com, .sod] {
            switch try await readFile(file, index: file == .com ? 0 : 1, of: 4) {
            case .content(let bytes): files[file] = bytes
            case .absent(let reason): skipped[file] = reason
            }
            try await surviveTagLoss { () async throws(MRTDError) in try await lookAgainForPACE() }
        }
        var com: EFCOM?
        var sod: SecurityObject?
        if let bytes = files[.com] {
            do { com = try EFCOM(bytes: bytes) } catch { parseErrors[.com] = error.reason }
        }
        if let bytes = files[.sod] {
            do { sod = try SecurityObject(bytes: bytes) } catch { parseErrors[.sod] = error.reason }
        }
        let listed = Set(com?.dataGroups ?? []).union(sod?.dataGroupHashes.keys ?? [:].keys)
        var wanted = options.dataGroups.map { Set($0) } ?? listed
        if options.dataGroups == nil, wanted.isEmpty { wanted = [1, 2] }
        // Verification needs its own files: the chip key (DG14) and the Active Authentication key (DG15).
        if options.verifyChip, listed.contains(14) { wanted.insert(14) }
        if options.verifyActive, listed.contains(15) { wanted.insert(15) }
        var order = wanted.sorted()
        // DG14 first: Chip Authentication replaces the session keys before the other groups are read.
        if options.verifyChip, let position = order.firstIndex(of: 14) {
            order.remove(at: position)
            order.insert(14, at: 0)
        }
        for (index, number) in order.enumerated() {
            let file = LDSFile.dataGroup(number)
            switch try await readFile(file, index: index + 2, of: order.count + 2) {
            case .content(let bytes):
                files[file] = bytes
                if number == 14, options.verifyChip, chipOutcome == nil {
                    chipOutcome = try await surviveTagLoss { () async throws(MRTDError) in try await performChipAuthentication(dg14: bytes) }
                    if chipOutcome?.status == .invalid { try await surviveTagLoss { () async throws(MRTDError) in try await reauthenticate() } }
                }
            case .absent(let reason): skipped[file] = reason
            }
        }

        let readingDone = ContinuousClock.now
        // Parse what was read.
        var result = PassportReadResult(accessControl: accessControl, files: files, absent: skipped, com: com, sod: sod,
                                        parseErrors: parseErrors)
        result.paceMapping = pace?.protocolID.mapping.rawValue
        result.paceProtocol = pace?.protocolID.description
        result.accessControlNote = accessControlNote
        if let cardAccess { result.files[.cardAccess] = cardAccess }
        if let cardSecurity { result.files[.cardSecurity] = cardSecurity }
        ReadVerification.parse(into: &result)
        if chipOutcome?.status == .valid, channel.chipAuthenticationRefuted {
            // MSE and GENERAL AUTHENTICATE went through, but the chip could not go on with the keys.
            chipOutcome = VerificationOutcome(status: .invalid, detail: "the chip answered Chip Authentication but could not continue secure messaging with the agreed keys: it does not hold the \(completedChipAuthentication?.source ?? "DG14") chip key (it may be a copy)")
        }
        if let chipOutcome {
            result.chip = chipOutcome
            result.chipAuthenticationPerformed = true
            result.chipKeySource = chipKeyFromCardSecurity || pace?.protocolID.mapping == .chipAuthenticationMapping ? "EF.CardSecurity" : "DG14"
        }

        report(.verifying, percent: 92)
        try await surviveTagLoss { () async throws(MRTDError) in try await performActiveAuthentication(&result) }
        ReadVerification.verify(&result, passive: options.verifyPassive, chip: options.verifyChip, active: options.verifyActive,
                                trustStore: options.trustStore)
        report(.verifying, percent: 100)
        result.statistics = ReadStatistics(
            apdus: channel.apduCount, bytesSent: channel.bytesSent, bytesReceived: channel.bytesReceived,
            fileBytes: bytesOfFiles, cardTime: channel.cardTime, totalTime: ContinuousClock.now - started,
            readingTime: readingDone - started, verificationTime: ContinuousClock.now - readingDone, readSize: readSize,
            extendedLength: channel.extendedLength, reauthentications: reauthentications, reconnections: reconnections)
        return result
    }

    // MARK: Access control

    func authenticate() async throws(MRTDError) {
        var offers = options.accessControl == .bacOnly ? [] : try await readCardAccess()
        let bacImpossible: Bool
        if case .can = accessKey { bacImpossible = true } else { bacImpossible = options.accessControl == .paceOnly }
        if offers.isEmpty, cardAccessNotFound, bacImpossible {
            // Only PACE can open this chip: a 6A82 to the read by short EF identifier may mean
            // the chip does not support them. Look for EF.CardAccess by file identifier.
            offers = try await readCardAccessBySelect()
        }
        if try await openWithPACE(offers) { return }
        switch (options.accessControl, accessKey) {
        case (.paceOnly, _):
            throw MRTDError(.notSupported, offers.isEmpty ? "the chip does not offer PACE" + (cardAccessNote.map { " (\($0))" } ?? "")
                                                          : (accessControlNote ?? "PACE is not possible"))
        case (_, .can):
            throw MRTDError(.notSupported, "a CAN needs PACE, and \(offers.isEmpty ? "the chip does not offer PACE" : (accessControlNote ?? "PACE was not possible"))")
        default:
            break
        }
        do {
            try await selectApplication()
            try await basicAccessControl()
        } catch where error.code == .notSupported && cardAccessNotFound && options.accessControl != .bacOnly {
            // A chip that opens with PACE only, whose EF.CardAccess was not found by short EF
            // identifier: it may not support them. Look for it by file identifier.
            let again = try await readCardAccessBySelect()
            guard try await openWithPACE(again) else { throw error }
            return
        }
        if accessControlNote == nil, let cardAccessNote { accessControlNote = cardAccessNote + "; used BAC" }
        accessControl = "BAC"
    }

    /// A chip opened with BAC because EF.CardAccess answered 6A82 to the read by short EF
    /// identifier, which turned out not to be supported (learnt from the first file): EF.CardAccess
    /// may be there after all. Looked for by file identifier, once; when it offers PACE, the chip
    /// is opened again with PACE (PACE is the stronger protocol, and what the signed files
    /// promise). Costs nothing on chips with short-EF-identifier support.
    func lookAgainForPACE() async throws(MRTDError) {
        guard accessControl == "BAC", pace == nil, cardAccessNotFound || lookingAgainForPACE, shortFileIdentifiers == false,
              options.accessControl == .automatic, !lookedAgainForPACE else { return }
        // Marked done only at the end: the card leaving half-way makes it run again once back.
        lookingAgainForPACE = true
        let offers = try await readCardAccessBySelect()
        // The plain SELECTs ended the BAC session: PACE, or BAC again.
        if try await openWithPACE(offers) {
            accessControlNote = "EF.CardAccess was found by file identifier after BAC (the chip reads no short EF identifiers); re-opened with PACE"
        } else {
            try await selectApplication()
            try await basicAccessControl()
        }
        lookedAgainForPACE = true
        lookingAgainForPACE = false
    }

    /// Opens the chip with the best PACE offer this reader performs. Returns false (with a note
    /// why) when there is none or PACE failed for a reason that BAC may get around.
    func openWithPACE(_ offers: [PACEInfo]) async throws(MRTDError) -> Bool {
        let usable = offers.filter(Self.canPerform).sorted { $0.preference > $1.preference }
        guard let best = usable.first else {
            if !offers.isEmpty {
                accessControlNote = "the chip offers \(offers.map(\.description).joined(separator: ", ")), which this reader does not perform; used BAC"
            }
            return false
        }
        do {
            try await performPACE(best)
            // A card whose EF.CardAccess announces Chip Authentication keeps the key in
            // EF.CardSecurity (on the MF, readable now): authenticate the chip before the
            // application is selected and any data group is read.
            if options.verifyChip, chipOutcome == nil, cardAccessOffersChipAuthentication {
                chipOutcome = try await chipAuthenticationFromCardSecurity()
                // A failed CA leaves no usable session on the chip: open it again.
                if chipOutcome?.status == .invalid { try await performPACE(best) }
            }
            try await selectApplicationSecurely()
            pace = best
            accessControl = "PACE"
            adoptExtendedLength()
            return true
        } catch {
            // A wrong key, a departed card or a cancellation ends here; PACE broken for another
            // reason (an unsupported step, a chip quirk) falls back to BAC, and the result says so.
            let fatal: Set<MRTDError.Code> = [.accessDenied, .cardRemoved, .cancelled, .communicationFailure]
            if fatal.contains(error.code) || options.accessControl == .paceOnly { throw error }
            accessControlNote = "PACE (\(best.protocolID)) failed: \(error.reason); used BAC"
            return false
        }
    }

    /// After PACE: SELECT the eMRTD application under secure messaging.
    func selectApplicationSecurely() async throws(MRTDError) {
        let response = try await selectSecurely(.selectApplication(Self.eMRTDApplication))
        guard response.statusWord == .success else {
            throw MRTDError(.notSupported, "the card has no eMRTD application: \(response.statusWord.meaning)", statusWord: response.statusWord)
        }
    }

    /// Uses what the EF.CardAccess probe learnt about extended length.
    func adoptExtendedLength() {
        if probedExtendedLength == true {
            channel.extendedLength = true
            readSize = 32_768
        } else {
            readSize = shortLimit
        }
    }

    func selectApplication() async throws(MRTDError) {
        let response = try await select(.selectApplication(Self.eMRTDApplication), secure: false)
        guard response.statusWord == .success else {
            throw MRTDError(.notSupported, "the card has no eMRTD application: \(response.statusWord.meaning)",
                            statusWord: response.statusWord)
        }
    }

    func basicAccessControl() async throws(MRTDError) {
        guard let information = accessKey.mrzInformation else {
            throw MRTDError(.notSupported, "BAC needs the MRZ key, not a CAN")
        }
        let keys = BAC.Keys(keySeed: KeyDerivation.bacKeySeed(mrzInformation: information))
        channel.session = nil
        // GET CHALLENGE doubles as the extended-length probe when EF.ATR/INFO said nothing.
        var challenge: ResponseAPDU
        if probedExtendedLength == true {
            channel.extendedLength = true
            readSize = 32_768
            challenge = try await channel.plain(.getChallenge())
        } else if probedExtendedLength == nil && !channel.extendedLength && readSize == 0xE7 && reauthentications == 0 {
            challenge = try await channel.plain(CommandAPDU(ins: 0x84, p1: 0, p2: 0, ne: 8, forceExtended: true))
            if challenge.statusWord == .success, challenge.data.count == 8 {
                channel.extendedLength = true
                readSize = 32_768
            } else {
                challenge = try await channel.plain(.getChallenge())
            }
        } else {
            challenge = try await channel.plain(.getChallenge())
        }
        guard challenge.statusWord == .success, challenge.data.count == 8 else {
            if [.conditionsOfUseNotSatisfied, .securityStatusNotSatisfied, .insNotSupported].contains(challenge.statusWord) {
                throw MRTDError(.notSupported, "the chip refuses BAC (it opens with PACE only)", statusWord: challenge.statusWord)
            }
            throw MRTDError(.unexpectedStatus, "GET CHALLENGE failed: \(challenge.statusWord.meaning)", statusWord: challenge.statusWord)
        }
        let rndIFD = secureRandomBytes(8)
        let kIFD = secureRandomBytes(16)
        let data: [UInt8]
        do {
            data = try BAC.authenticationData(keys: keys, rndIFD: rndIFD, rndIC: challenge.data, kIFD: kIFD)
        } catch {
            throw MRTDError(.cryptoFailure, "BAC: \(error.reason)")
        }
        let answer = try await channel.plain(CommandAPDU(ins: 0x82, p1: 0, p2: 0, data: data, ne: 40))
        guard answer.statusWord == .success else {
            throw MRTDError(.accessDenied, "the chip refused the access key (BAC): \(answer.statusWord.meaning)",
                            statusWord: answer.statusWord)
        }
        let r = try BAC.verifyChipResponse(keys: keys, response: answer.data, rndIFD: rndIFD, rndIC: challenge.data)
        channel.session = BAC.session(kIFD: kIFD, kIC: Array(r[16..<32]), rndIC: challenge.data, rndIFD: rndIFD)
    }

    /// Runs the access control that opened the chip again (after it dropped secure messaging).
    func reauthenticate() async throws(MRTDError) {
        chipAuthenticated = false
        if let pace {
            try await performPACE(pace)
            try await selectApplicationSecurely()
        } else {
            try await selectApplication()
            try await basicAccessControl()
        }
    }

    /// Re-establishes secure messaging after the chip dropped it, and re-selects `file`.
    func reestablish(reselecting file: LDSFile) async throws(MRTDError) {
        reauthentications += 1
        guard reauthentications <= Self.maxReauthentications * 8 else {
            throw MRTDError(.communicationFailure, "the chip keeps dropping secure messaging")
        }
        try await reauthenticate()
        let response = try await selectSecurely(.selectFile(file.fid))
        guard response.statusWord == .success else {
            throw MRTDError(.unexpectedStatus, "re-selecting \(file) failed: \(response.statusWord.meaning)", statusWord: response.statusWord)
        }
    }

    // MARK: Files

    enum FileOutcome {
        case content([UInt8])
        case absent(FileAbsence)
    }

    func readFile(_ file: LDSFile, index: Int, of count: Int) async throws(MRTDError) -> FileOutcome {
        func percent(_ fraction: Double) -> Int { 10 + Int(80 * (Double(index) + fraction) / Double(max(count, 1))) }
        channel.traceContext.file = file.name
        report(.reading, file: file.name, bytesRead: 0, percent: percent(0))
        var content: [UInt8] = []
        // The first chunk comes with READ BINARY by short EF identifier: select and read in one APDU.
        switch try await surviveTagLoss({ () async throws(MRTDError) in try await readFirstChunk(file) }) {
        case .absent(let reason): return .absent(reason)
        case .content(let first): content = first
        }
        var total: Int?
        var lastChunk = content.count
        while true {
            if total == nil {
                if let header = try? BERTLV.header(content) {
                    total = header.totalLength
                } else if content.count >= 6 {
                    throw MRTDError(.malformedData, "\(file) does not start with a valid TLV header")
                }
                // Indefinite length or a header not yet complete: keep reading until the chip stops.
                if total == nil && lastChunk == 0 { break }
            }
            if let total, content.count >= total { break }
            report(.reading, file: file.name, bytesRead: min(content.count, total ?? content.count), bytesTotal: total,
                   percent: percent(total.map { Double(min(content.count, $0)) / Double(max($0, 1)) } ?? 0.5))
            let offset = content.count
            let chunk = try await surviveTagLoss(reselecting: file) { () async throws(MRTDError) in
                // The size is worked out again after a recovery: the chip may have taught a smaller one.
                try await readChunk(file, offset: offset, length: total.map { min(readSize, $0 - offset) } ?? readSize)
            }
            lastChunk = chunk.count
            if chunk.isEmpty {
                if total == nil && !content.isEmpty { break }  // end of a file of unknown length
                throw MRTDError(.malformedData, "\(file) ended after \(content.count) of \(total.map(String.init) ?? "?") bytes")
            }
            content += chunk
        }
        if let total, content.count > total { content.removeLast(content.count - total) }
        report(.reading, file: file.name, bytesRead: content.count, bytesTotal: content.count, percent: percent(1))
        bytesOfFiles += content.count
        return .content(content)
    }

    /// The first chunk of `file`: READ BINARY by short EF identifier at offset 0 (selecting and
    /// reading in one APDU) while the chip supports it; SELECT by file identifier and READ BINARY
    /// on chips that do not. Which one the chip supports is learnt from the first file and kept
    /// for the session, so a chip with SFI support never costs an extra APDU.
    func readFirstChunk(_ file: LDSFile) async throws(MRTDError) -> FileOutcome {
        var length = readSize
        var recoveries = 0
        while true {
            do {
                if let outcome = try await firstChunkAttempt(file, length: &length) { return outcome }
            } catch let error where error.code == .secureMessagingDropped {
                // The chip ended secure messaging (or counts unprotected answers differently than
                // we assumed): a new session, and the file again from the start.
                recoveries += 1
                guard recoveries <= Self.maxReauthentications else { throw error }
                length = recoverLength(after: error, length: length, extended: length > 256)
                reauthentications += 1
                try await reauthenticate()
            }
        }
    }

    /// One try at the first chunk; `nil` when it should be tried again with the (smaller) `length`.
    private func firstChunkAttempt(_ file: LDSFile, length: inout Int) async throws(MRTDError) -> FileOutcome? {
        if shortFileIdentifiers == false {
            return try await selectAndReadFirstChunk(file, length: length)
        }
        let response = try await channel.secure(.readBinary(sfi: file.sfi, offset: 0, length: length))
        switch response.statusWord {
        case .success, .endOfFileReached:
            shortFileIdentifiers = true
            return .content(response.data)
        case .securityStatusNotSatisfied, .conditionsOfUseNotSatisfied:
            shortFileIdentifiers = true
            return .absent(.protected)
        case .wrongLength:
            length = stepDown(from: length, exact: nil)
            return nil
        case _ where response.statusWord.sw1 == 0x6C:
            length = stepDown(from: length, exact: Int(response.statusWord.sw2))
            return nil
        case .fileNotFound where shortFileIdentifiers == true:
            return .absent(.notPresent)
        case .fileNotFound, .commandNotAllowedNoEF, .incorrectP1P2, .insNotSupported, .claNotSupported,
             .functionNotSupported, .wrongP1P2:
            // No support for short EF identifiers (6A82 can mean either: SELECT tells which).
            let outcome = try await selectAndReadFirstChunk(file, length: length)
            if case .content = outcome { shortFileIdentifiers = false }
            return outcome
        default:
            throw MRTDError(.unexpectedStatus, "reading \(file) failed: \(response.statusWord.meaning)",
                            statusWord: response.statusWord)
        }
    }


    /// SELECT `file` by its identifier and read its first chunk.
    func selectAndReadFirstChunk(_ file: LDSFile, length: Int) async throws(MRTDError) -> FileOutcome {
        let select = try await selectSecurely(.selectFile(file.fid))
        switch select.statusWord {
        case .success: break
        case .fileNotFound: return .absent(.notPresent)
        case .securityStatusNotSatisfied, .conditionsOfUseNotSatisfied: return .absent(.protected)
        default:
            throw MRTDError(.unexpectedStatus, "selecting \(file) failed: \(select.statusWord.meaning)", statusWord: select.statusWord)
        }
        return .content(try await readChunk(file, offset: 0, length: length))
    }

    /// SELECT under secure messaging, with or without an Le as the chip wants it: some chips
    /// refuse an Le on SELECT (6700), others require one. Learnt once per session.
    func selectSecurely(_ command: CommandAPDU) async throws(MRTDError) -> ResponseAPDU {
        try await select(command, secure: true)
    }

    func select(_ command: CommandAPDU, secure: Bool) async throws(MRTDError) -> ResponseAPDU {
        func send(_ withLe: Bool) async throws(MRTDError) -> ResponseAPDU {
            var command = command
            command.ne = withLe ? 256 : nil
            return secure ? try await channel.secure(command) : try await channel.plain(command)
        }
        let first = selectWithLe ?? (command.ne != nil)
        let response = try await send(first)
        if response.statusWord == .wrongLength, selectWithLe == nil {
            let other = try await send(!first)
            if other.statusWord != .wrongLength { selectWithLe = !first }
            return other
        }
        if response.statusWord == .success, selectWithLe == nil { selectWithLe = first }
        return response
    }

    /// The read size to retry with after the chip dropped secure messaging on a read of `length`.
    func recoverLength(after error: MRTDError, length: Int, extended: Bool) -> Int {
        if extended {
            // The chip does not take extended APDUs after all: go straight to short reads.
            channel.extendedLength = false
            readSize = min(readSize, shortLimit)
            return min(length, shortLimit)
        }
        if let sw = error.statusWord, sw == .wrongLength || sw.sw1 == 0x6C {
            return stepDown(from: length, exact: sw.sw1 == 0x6C ? Int(sw.sw2) : nil)
        }
        return length
    }

    /// One READ BINARY at `offset`, stepping down on length errors and re-establishing secure
    /// messaging where the chip drops it. Returns the data (empty at the end of the file).
    func readChunk(_ file: LDSFile, offset: Int, length: Int) async throws(MRTDError) -> [UInt8] {
        var length = length
        var recoveries = 0
        while true {
            let odd = offset > 0x7FFF
            // B1 answers carry a DO53 header (up to 4 bytes) inside Ne.
            let ne = odd ? length + (length > 0xFF ? 4 : length > 0x7F ? 3 : 2) : length
            let command = CommandAPDU.readBinary(offset: offset, length: min(ne, CommandAPDU.maxExtendedNe))
            let response: ResponseAPDU
            do {
                response = try await channel.secure(command)
            } catch let error where error.code == .secureMessagingDropped {
                // The chip answered in plain and ended the session. Wrong length → smaller reads.
                recoveries += 1
                guard recoveries <= Self.maxReauthentications else { throw error }
                length = recoverLength(after: error, length: length, extended: command.isExtended)
                try await reestablish(reselecting: file)
                continue
            }
            switch response.statusWord {
            case .success, .endOfFileReached:
                if odd {
                    guard !response.data.isEmpty else { return [] }
                    guard let object = try? BERTLV.parseSingle(response.data), object.tag == 0x53 else {
                        throw MRTDError(.malformedData, "READ BINARY (B1) answer is not a DO53")
                    }
                    return object.value
                }
                return response.data
            case .wrongLength:
                length = stepDown(from: length, exact: nil)
            case _ where response.statusWord.sw1 == 0x6C:
                length = stepDown(from: length, exact: Int(response.statusWord.sw2))
            case .wrongP1P2, .incorrectP1P2:
                return []  // offset beyond the end of the file
            default:
                throw MRTDError(.unexpectedStatus, "reading \(file) at \(offset) failed: \(response.statusWord.meaning)",
                                statusWord: response.statusWord)
            }
        }
    }

    /// The next smaller read size; remembered for the rest of the session.
    func stepDown(from length: Int, exact: Int?) -> Int {
        let next: Int
        if let exact, exact > 0, exact < length {
            next = exact
        } else if let smaller = Self.readSizeLadder.first(where: { $0 < length }) {
            next = smaller
        } else {
            next = max(1, length / 2)
        }
        readSize = min(readSize, next)
        return next
    }
}
