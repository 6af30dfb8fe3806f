import SmartCardCore

/// What the session needs from above when a read cannot go on as it is: a new secure-messaging
/// session after the chip dropped one, and the chip opened again after the card left the field.
/// `TagLossRecovery` is the implementation; it wraps the session.
package protocol SessionRecovery: AnyObject {
    /// Opens a new secure-messaging session (the access control that opened the chip, again).
    func reestablishSecureMessaging(on session: CardSession) async throws(MRTDError)
    /// When `error` is a loss of the card this read survives now, waits for the card, opens the
    /// chip again and returns `true`; `false` when the error is to go to the caller.
    func recover(from error: MRTDError, on session: CardSession) async throws(MRTDError) -> Bool
}

/// A file read, or why it is not there.
package enum FileOutcome: Sendable {
    case content([UInt8])
    case absent(FileAbsence)
}

extension CardSession {
    /// How many times in one file a dropped session is re-established before the read gives up.
    static let maxReestablishments = 3
    /// What a header-first read asks for: a tag and a length field up to four bytes (JMRTD reads
    /// the same 8 bytes first, so chips know it).
    static let headerProbeLength = 8

    /// The READ BINARY commands one file may take: enough for the whole file at the ladder's floor,
    /// and room for a length ladder and re-established sessions; a chip that needs more is given up.
    static func readCommandBudget(total: Int?) -> Int { 64 + (total ?? 0) / 4 }

    /// How a file is looked for.
    package struct FileRequest: Sendable {
        package var file: LDSFile
        package var protection: Protection
        /// SELECT by file identifier without trying the short EF identifier first.
        package var bySelect = false
        /// 6A82 to a READ BINARY by short EF identifier is taken as "no such file" before the chip's
        /// SFI support is known (EF.CardAccess on a BAC-only chip: no further APDU).
        package var notFoundIsFinal = false
        /// The first plain read of the read: it doubles as the extended-length probe, and finds the
        /// chip perhaps still inside an application from an earlier session.
        package var isFirstContact = false

        package init(_ file: LDSFile, _ protection: Protection, bySelect: Bool = false, notFoundIsFinal: Bool = false,
                     isFirstContact: Bool = false) {
            self.file = file
            self.protection = protection
            self.bySelect = bySelect
            self.notFoundIsFinal = notFoundIsFinal
            self.isFirstContact = isFirstContact
        }
    }

    /// The largest short READ BINARY whose answer fits 256 bytes: 256 in plain, 0xE7 under 3DES
    /// secure messaging, 0xDF under AES (16-byte padding).
    func shortReadLimit(_ protection: Protection) -> Int {
        if protection == .plain || (protection == .current && secureMessaging == nil) { return 256 }
        return secureMessaging?.largestShortReadLength ?? 0xE7
    }

    /// Reads a whole file: the first chunk by short EF identifier (selecting and reading in one
    /// APDU) while the chip supports it, by SELECT and READ BINARY when it does not; then READ
    /// BINARY to the length its TLV header gives (B1 past offset 32767). Lengths come from
    /// `ChipLimits`, stepping down on 6700 / 6Cxx to a floor. A dropped session is re-established
    /// and the file selected again; a card that leaves the field is waited for (`recovery`) and
    /// the read goes on at the same offset. `progress` gets bytes read and the total once known.
    ///
    /// The chip is untrusted: a header claiming more than the file's `sizeCeiling`, an indefinite
    /// length, a header that is not BER-TLV, an answer longer than asked for, or a file that ends
    /// before its header's length is `refused` (the read goes on without it) — never returned as
    /// content. A file's bytes are returned only whole: exactly the header's length.
    package func readFile(_ request: FileRequest, recovery: SessionRecovery?,
                          progress: (Int, Int?) -> Void = { _, _ in }) async throws(MRTDError) -> FileOutcome {
        let file = request.file
        traceContext.file = file.name
        budget.readCommandsInFile = 0
        progress(0, nil)
        var content: [UInt8]
        switch try await surviving(recovery, reselect: nil, { () async throws(MRTDError) in try await firstChunk(request, recovery: recovery) }) {
        case .absent(let why): return .absent(why)
        case .content(let first): content = first
        }
        if content.isEmpty { return .absent(.refused("the chip answered its first READ BINARY with no data")) }
        var total: Int?
        var lastChunk = content.count
        while true {
            if total == nil, file.isConcatenatedObjects {
                // EF.CVCA: up to two CARs one after the other, zero-padded (36 bytes): no outer TLV
                // gives the length, so it is read until the chip has no more, up to its ceiling.
                if lastChunk == 0 { break }
                guard content.count <= file.sizeCeiling else {
                    return .absent(.refused("it did not end within its ceiling of \(file.sizeCeiling) bytes"))
                }
            } else if total == nil {
                switch Self.header(of: content) {
                case .length(let length):
                    guard length <= file.sizeCeiling else {
                        return .absent(.refused("its header claims \(length) bytes, more than the \(file.sizeCeiling) a \(file) may have"))
                    }
                    total = length
                case .indefinite:
                    return .absent(.refused("its header has an indefinite length (80): an LDS file's length is definite"))
                case .invalid(let reason):
                    return .absent(.refused("its header is not BER-TLV (\(reason))"))
                case .incomplete:
                    if lastChunk == 0 { return .absent(.refused("it ended inside its own header (\(content.count) bytes)")) }
                }
            }
            if let total, content.count >= total { break }
            guard budget.readCommandsInFile <= Self.readCommandBudget(total: total) else {
                throw MRTDError(.unexpectedStatus, "the chip needed more than \(Self.readCommandBudget(total: total)) READ BINARY commands for \(file) and was given up")
            }
            progress(min(content.count, total ?? content.count), total)
            let offset = content.count
            let chunk = try await surviving(recovery, reselect: file, { () async throws(MRTDError) -> ChunkOutcome in
                // The length is worked out again after a recovery: the chip may have taught a smaller one.
                let wanted = total.map { $0 - offset } ?? (file.isConcatenatedObjects ? file.sizeCeiling + 1 - offset : Self.headerProbeLength)
                let length = min(limits.readLength(shortLimit: shortReadLimit(request.protection)), wanted)
                return try await readChunk(file, offset: offset, length: length, total: total, request.protection, recovery: recovery)
            })
            switch chunk {
            case .data(let bytes):
                lastChunk = bytes.count
                if bytes.isEmpty {
                    // Judged at the top: the end of EF.CVCA, or a header the chip never finishes.
                    if total == nil { continue }
                    // Never a wrong file: one that ends before its header's length is not returned.
                    return .absent(.refused("the chip gave \(content.count) of the \(total.map(String.init) ?? "?") bytes its header claims"))
                }
                content += bytes
            case .protected:
                throw MRTDError(.unexpectedStatus, "\(file) became access-protected at offset \(offset)",
                                statusWord: .securityStatusNotSatisfied)
            case .overlong(let got, let asked):
                return .absent(.refused("the chip sent \(got) bytes for a READ BINARY of \(asked)"))
            }
        }
        if let total, content.count > total { content.removeLast(content.count - total) }
        progress(content.count, content.count)
        return .content(content)
    }

    /// What the first bytes of a file say of its length.
    enum HeaderReading: Equatable {
        case length(Int)
        case indefinite
        /// More bytes are needed to read the tag and length fields.
        case incomplete
        case invalid(String)
    }

    static func header(of content: [UInt8]) -> HeaderReading {
        do {
            let header = try BERTLV.header(content)
            guard let total = header.totalLength else { return .indefinite }
            return .length(total)
        } catch {
            // Too few bytes for the tag or the length field is "not yet", anything else is broken.
            // A multi-byte tag takes at most 4 bytes and a length field 5: past 9, it is broken.
            let truncated = error.reason.hasPrefix("truncated") || error.reason.hasPrefix("missing length") || error.reason.hasPrefix("empty input")
            return truncated && content.count < 9 ? .incomplete : .invalid(error.reason)
        }
    }

    /// Runs `body`; when the card leaves the field and `recovery` gets the chip open again,
    /// selects `reselect` (when given) and runs it again.
    func surviving<T>(_ recovery: SessionRecovery?, reselect file: LDSFile?,
                      _ body: () async throws(MRTDError) -> T) async throws(MRTDError) -> T {
        while true {
            do {
                return try await body()
            } catch {
                guard let recovery, try await recovery.recover(from: error, on: self) else { throw error }
                if let file {
                    let answer = try await select(.file(file.fid))
                    guard answer.status == .ok else {
                        throw MRTDError(.unexpectedStatus, "selecting \(file) again after the card came back failed: \(answer.statusWord.meaning)",
                                        statusWord: answer.statusWord)
                    }
                }
            }
        }
    }

    // MARK: The first chunk

    /// How long the first READ BINARY of a file is: as much as the chip takes, or only the header
    /// once the chip has shown it mishandles reads past the end of a file.
    private func firstLength(_ request: FileRequest) -> Int {
        let most = limits.readLength(shortLimit: shortReadLimit(request.protection))
        return limits.exactLengthReads ? min(most, Self.headerProbeLength) : most
    }

    /// The chip mishandled the first, over-long READ BINARY of a file: from now on headers first,
    /// then exact lengths (`ChipLimits.exactLengthReads`). `false` when that was already so: the
    /// chip mishandles exact reads too.
    private func learnExactLengthReads() -> Bool {
        guard !limits.exactLengthReads else { return false }
        limits.exactLengthReads = true
        return true
    }

    private func firstChunk(_ request: FileRequest, recovery: SessionRecovery?) async throws(MRTDError) -> FileOutcome {
        var length = firstLength(request)
        var reestablishments = 0
        var refusals = 0
        var masterFileSelected = false
        var probed = false
        while true {
            do throws(MRTDError) {
                if request.bySelect || limits.shortFileIdentifiers == false {
                    return try await selectAndReadFirstChunk(request, length: length, recovery: recovery)
                }
                let probing = request.isFirstContact && !probed && limits.extendedLength == nil && limits.transportCarriesExtendedLength
                let asked = probing ? 65_536 : length
                budget.readCommandsInFile += 1
                let answer = try await send(CommandAPDU(ins: 0xB0, p1: 0x80 | request.file.sfi, p2: 0, ne: asked, forceExtended: probing),
                                            request.protection)
                let status = answer.status
                if probing {
                    switch status {
                    case .ok, .endOfFile:
                        limits.extendedLength = true
                    case .wrongLength:
                        // The extended READ BINARY was refused: short APDUs from here on.
                        limits.extendedLength = false
                        length = firstLength(request)
                        continue
                    case .unsupported, .beyondEnd:
                        // Refused for its length or for its short EF identifier: a short read tells.
                        probed = true
                        continue
                    default:
                        break
                    }
                }
                if request.isFirstContact, request.file.isOnMasterFile, !masterFileSelected,
                   status == .protected || status == .incorrectParameters || status == .noCurrentFile {
                    // The chip may still be inside an application from an earlier session: back to
                    // the MF (some chips answer 6A82, 6A86 or 6D00 to that; then the read decides).
                    masterFileSelected = true
                    _ = try await select(.masterFile, .plain)
                    continue
                }
                switch status {
                case .ok, .endOfFile:
                    limits.shortFileIdentifiers = true
                    if answer.data.count > asked { return .absent(.refused("the chip sent \(answer.data.count) bytes for a READ BINARY of \(asked)")) }
                    if answer.data.isEmpty, learnExactLengthReads() {
                        // No data at the start of a file (a bare 6282 to a read past its end): the
                        // header first, then exactly what it says.
                        length = firstLength(request)
                        continue
                    }
                    return .content(answer.data)
                case .wrongLength(let exact):
                    refusals += 1
                    if exact == nil, length <= 256, learnExactLengthReads() {
                        // 6700 to a short read at the start of a file of unknown length may be the
                        // read running past its end: the header first, then exact lengths (no cap
                        // learnt). To an extended read it is the length ladder's business.
                        length = firstLength(request)
                        continue
                    }
                    length = try nextLength(after: length, exact: exact, refusals: refusals, request.file, offset: 0, total: nil)
                case .protected:
                    limits.shortFileIdentifiers = true
                    return .absent(.protected)
                case .notFound where limits.shortFileIdentifiers == true || request.notFoundIsFinal:
                    return .absent(.notPresent)
                case .notFound,
                     _ where status.meansNoShortFileIdentifiers:
                    // No support for short EF identifiers (6A82 can mean either: SELECT tells which).
                    let outcome = try await selectAndReadFirstChunk(request, length: length, recovery: recovery)
                    if case .content = outcome { limits.shortFileIdentifiers = false }
                    return outcome
                default:
                    throw MRTDError(.unexpectedStatus, "reading \(request.file) failed: \(answer.statusWord.meaning)",
                                    statusWord: answer.statusWord)
                }
            } catch where error.code == .secureMessagingDropped && request.protection != .plain {
                // The chip ended secure messaging (or counts unprotected answers differently than
                // we assumed, or answered a read past the end of the file without a MAC): a new
                // session, and the file again from the start.
                reestablishments += 1
                guard reestablishments <= Self.maxReestablishments, let recovery else { throw error }
                if error.statusWord == .endOfFileReached, learnExactLengthReads() {
                    length = firstLength(request)
                } else {
                    length = try lengthAfterDrop(error, length: length, request.file)
                }
                try await recovery.reestablishSecureMessaging(on: self)
            }
        }
    }

    /// SELECT `file` by its identifier (the MF first for a plain read, which may find the chip
    /// inside an application) and read its first chunk.
    private func selectAndReadFirstChunk(_ request: FileRequest, length: Int, recovery: SessionRecovery?) async throws(MRTDError) -> FileOutcome {
        if request.protection == .plain, request.file.isOnMasterFile {
            _ = try await select(.masterFile, .plain)
        }
        let selected = try await select(.file(request.file.fid), request.protection)
        switch selected.status {
        case .ok: break
        case .notFound: return .absent(.notPresent)
        case .protected: return .absent(.protected)
        default:
            throw MRTDError(.unexpectedStatus, "selecting \(request.file) failed: \(selected.statusWord.meaning)", statusWord: selected.statusWord)
        }
        var length = length
        while true {
            // A file that can be selected but not read (6982: behind Extended Access Control) is
            // protected, not a failure of the read.
            switch try await readChunk(request.file, offset: 0, length: length, total: nil, request.protection, recovery: recovery) {
            case .data(let bytes) where bytes.isEmpty && learnExactLengthReads():
                length = firstLength(request)  // see firstChunk: no data at the start of a file
            case .data(let bytes): return .content(bytes)
            case .protected: return .absent(.protected)
            case .overlong(let got, let asked): return .absent(.refused("the chip sent \(got) bytes for a READ BINARY of \(asked)"))
            }
        }
    }

    // MARK: Chunks

    enum ChunkOutcome {
        case data([UInt8])
        case protected
        /// The chip answered more bytes than the READ BINARY asked for.
        case overlong(got: Int, asked: Int)
    }

    /// One READ BINARY at `offset`, stepping down on length errors (to the ladder's floor) and
    /// re-establishing a dropped session (the file selected again). Empty data at the end of the file.
    private func readChunk(_ file: LDSFile, offset: Int, length: Int, total: Int?, _ protection: Protection,
                           recovery: SessionRecovery?) async throws(MRTDError) -> ChunkOutcome {
        var length = length
        var reestablishments = 0
        var refusals = 0
        while true {
            let odd = offset > 0x7FFF
            // B1 answers carry a DO53 header (up to 4 bytes) inside Ne.
            let ne = odd ? length + (length > 0xFF ? 4 : length > 0x7F ? 3 : 2) : length
            let command = CommandAPDU.readBinary(offset: offset, length: min(ne, CommandAPDU.maxExtendedNe))
            let answer: CardAnswer
            budget.readCommandsInFile += 1
            do throws(MRTDError) {
                answer = try await send(command, protection)
            } catch where error.code == .secureMessagingDropped && protection != .plain {
                // The chip answered in plain and ended the session. Wrong length → smaller reads.
                reestablishments += 1
                guard reestablishments <= Self.maxReestablishments, let recovery else { throw error }
                if command.isExtended { limits.dropExtendedLength() }
                if offset == 0, total == nil, error.statusWord == .endOfFileReached, learnExactLengthReads() {
                    length = min(length, Self.headerProbeLength)
                } else {
                    length = try lengthAfterDrop(error, length: length, file)
                }
                try await recovery.reestablishSecureMessaging(on: self)
                let again = try await select(.file(file.fid))
                guard again.status == .ok else {
                    throw MRTDError(.unexpectedStatus, "selecting \(file) again failed: \(again.statusWord.meaning)", statusWord: again.statusWord)
                }
                continue
            }
            switch answer.status {
            case .ok, .endOfFile:
                guard odd else {
                    return answer.data.count > length ? .overlong(got: answer.data.count, asked: length) : .data(answer.data)
                }
                guard !answer.data.isEmpty else { return .data([]) }
                guard let object = try? BERTLV.parseSingle(answer.data), object.tag == 0x53 else {
                    throw MRTDError(.malformedData, "READ BINARY (B1) answer is not a DO53")
                }
                return object.value.count > length ? .overlong(got: object.value.count, asked: length) : .data(object.value)
            case .wrongLength(let exact):
                refusals += 1
                if offset == 0, total == nil, exact == nil, length <= 256, learnExactLengthReads() {
                    length = min(length, Self.headerProbeLength)  // see firstChunk: 6700 at the start of a file
                    continue
                }
                let atEnd = exact.map { exact in total.map { offset + exact >= $0 } ?? false } ?? false
                length = try nextLength(after: length, exact: exact, refusals: refusals, file, offset: offset, total: total, atEnd: atEnd)
            case .beyondEnd, .incorrectParameters:
                return .data([])  // an offset past the end of the file
            case .protected where offset == 0:
                return .protected
            default:
                throw MRTDError(.unexpectedStatus, "reading \(file) at \(offset) failed: \(answer.statusWord.meaning)",
                                statusWord: answer.statusWord)
            }
        }
    }

    /// The length to ask for after `length` was refused (6700, or 6Cxx naming `exact`), or the
    /// chip given up (`CHIP_ERROR`): below the ladder's floor, or refused too often in a row.
    private func nextLength(after length: Int, exact: Int?, refusals: Int, _ file: LDSFile, offset: Int, total: Int?,
                            atEnd: Bool = false) throws(MRTDError) -> Int {
        guard refusals <= ChipLimits.maxLengthRefusals, let next = limits.stepDown(from: length, exact: exact, atEndOfFile: atEnd) else {
            throw MRTDError(.unexpectedStatus, "the chip refused every READ BINARY length for \(file) at offset \(offset) (\(refusals) refusals, down to \(length) bytes)",
                            statusWord: .wrongLength)
        }
        return next
    }

    /// The length to ask for after the chip dropped the session on a read of `length`.
    private func lengthAfterDrop(_ error: MRTDError, length: Int, _ file: LDSFile) throws(MRTDError) -> Int {
        if length > 256 {
            // The chip does not take extended APDUs after all: short reads from here on.
            limits.dropExtendedLength()
            return min(length, shortReadLimit(.secure))
        }
        if let word = error.statusWord, case .wrongLength(let exact) = CardStatus(word) {
            guard let next = limits.stepDown(from: length, exact: exact) else {
                throw MRTDError(.unexpectedStatus, "the chip refused every READ BINARY length for \(file)", statusWord: word)
            }
            return next
        }
        return length
    }
}
