import SmartCardCore

/// The files of one read: the one place they are read from the chip (through
/// `CardSession.readFile`, with its fallbacks) and kept, with why others are absent and which
/// could not be parsed. Steps ask the shelf for a file; one read or found absent before is not
/// asked for again.
final class FileShelf {
    private(set) var contents: [LDSFile: [UInt8]] = [:]
    /// Files a step wanted that the chip did not give, and why (reported).
    private(set) var absent: [LDSFile: FileAbsence] = [:]
    private(set) var parseErrors: [LDSFile: String] = [:]
    /// File bytes read from the chip, for the statistics.
    private(set) var bytesRead = 0

    subscript(_ file: LDSFile) -> [UInt8]? { contents[file] }

    /// Whether `file` was read or found absent.
    func isSettled(_ file: LDSFile) -> Bool { contents[file] != nil || absent[file] != nil }

    /// Reads `request.file` unless it was read or found absent before; progress goes to `meter`.
    /// `recovery` (nil for the files read before the chip is open) survives tag loss inside the
    /// file. An absence is recorded unless `reportAbsence` is false (EF.CardAccess and EF.DIR,
    /// which most chips do not have and no one asked for).
    func read(_ request: CardSession.FileRequest, on session: CardSession, recovery: SessionRecovery?, meter: ProgressMeter,
              reportAbsence: Bool = true) async throws(MRTDError) -> FileOutcome {
        let file = request.file
        if let bytes = contents[file] { return .content(bytes) }
        if let why = absent[file] { return .absent(why) }
        meter.fileStarted(file)
        let outcome = try await session.readFile(request, recovery: recovery) { read, total in
            meter.fileProgress(file, read: read, total: total)
        }
        switch outcome {
        case .content(let bytes):
            contents[file] = bytes
            bytesRead += bytes.count
        case .absent(let why):
            if reportAbsence { absent[file] = why }
        }
        return outcome
    }

    /// Records that `file` is not read, and why (a data group Terminal Authentication did not open).
    func markAbsent(_ file: LDSFile, _ why: FileAbsence) {
        guard contents[file] == nil else { return }
        absent[file] = why
    }

    /// Parses `file` when it was read; a parse failure is recorded (reported) and gives `nil`.
    func parsed<T>(_ file: LDSFile, _ parse: ([UInt8]) throws(MRTDError) -> T) -> T? {
        guard let bytes = contents[file] else { return nil }
        do {
            return try parse(bytes)
        } catch {
            parseErrors[file] = error.reason
            return nil
        }
    }
}
