import SmartCardCore

/// EF.DIR on the MF, read in plain before any application is selected (ICAO 9303-10 §3.11.2; ISO
/// 7816-4 reads the directory before selecting an application, as gmrtd does): the applications
/// an LDS2 chip holds. LDS2 needs PACE, so only a chip with EF.CardAccess is asked (a BAC-only
/// chip costs nothing); most have no EF.DIR, and their 6A82 is the step's one APDU. A directory
/// the chip will not give, or gives broken, is noted and the read goes on: it opens nothing.
struct DirectoryStep: ReadStep {
    struct Output {
        /// The applications it names; `nil` when there is no EF.DIR (or it could not be read).
        var directory: ApplicationDirectory?
        /// Why an EF.DIR that is there gave nothing, when that happened.
        var note: String?
    }

    var name: String { "directory" }
    var phase: ReadProgress.Phase? { .authenticating }

    func isNeeded(_ scope: StepScope) -> Bool { scope.files[.cardAccess] != nil }

    func plannedBytes(_ scope: StepScope) -> Int { LDSFile.directory.typicalSize }

    func run(_ scope: StepScope) async throws(MRTDError) -> Output {
        scope.session.traceContext.step = nil
        let request = CardSession.FileRequest(.directory, .plain, notFoundIsFinal: true)
        let outcome: FileOutcome
        do {
            outcome = try await scope.files.read(request, on: scope.session, recovery: nil, meter: scope.meter, reportAbsence: false)
        } catch where error.code == .unexpectedStatus || error.code == .malformedData {
            return Output(note: "EF.DIR could not be read (\(error.statusWord?.meaning ?? error.reason))")
        }
        switch outcome {
        case .absent(.notPresent):
            return Output()
        case .absent(let why):
            return Output(note: "EF.DIR is on the chip but could not be read (\(why))")
        case .content(let bytes):
            guard let directory = scope.files.parsed(.directory, { bytes throws(MRTDError) in try ApplicationDirectory(bytes: bytes) }) else {
                return Output(note: "EF.DIR could not be parsed (\(bytes.count) bytes)")
            }
            return Output(directory: directory)
        }
    }
}
