import SmartCardCore

/// EF.DIR on the MF, read in plain before any application is selected (ICAO 9303-10 §3.11.2; ISO
/// 7816-4 reads the directory before selecting an application, as gmrtd does): the applications
/// an LDS2 chip holds. LDS2 needs PACE, so only a chip with EF.CardAccess is asked (a BAC-only
/// chip costs nothing); most have no EF.DIR, and their 6A82 is the step's one APDU. The file goes
/// to the shelf and is parsed with the others (`ReadVerification.parse`: `result.directory`, or a
/// parse error); a chip that will not give it is passed over: EF.DIR is unsigned and opens nothing.
struct DirectoryStep: ReadStep {
    /// Whether the chip gave an EF.DIR.
    typealias Output = Bool

    var name: String { "directory" }
    var phase: ReadProgress.Phase? { .authenticating }

    func isNeeded(_ scope: StepScope) -> Bool { scope.files[.cardAccess] != nil }

    func plannedBytes(_ scope: StepScope) -> Int { LDSFile.directory.typicalSize }

    func run(_ scope: StepScope) async throws(MRTDError) -> Bool {
        if case .content = try await scope.readPublicFile(CardSession.FileRequest(.directory, .plain, notFoundIsFinal: true)) { return true }
        return false
    }
}
