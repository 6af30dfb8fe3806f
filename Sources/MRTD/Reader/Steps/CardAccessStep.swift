import SmartCardCore

/// EF.CardAccess on the MF, read in plain before access control: the PACE offers (ICAO 9303-11
/// §4.2: PACE first when the chip offers it). The first read of the read doubles as the
/// extended-length probe; 6A82 by short EF identifier (the normal answer of a BAC-only chip)
/// costs nothing more — `notFound` lets access control look again by file identifier when the
/// chip turns out to need PACE. Not read when the caller asked for BAC only.
struct CardAccessStep: ReadStep {
    struct Output {
        /// The PACE offers, best first as the chip listed them; empty when there are none.
        var offers: [PACEInfo] = []
        /// EF.CardAccess answered 6A82 to the read by short EF identifier.
        var notFound = false
        /// Why an EF.CardAccess that is there gave no offers (reported with the opening).
        var note: String?
    }

    var name: String { "card access" }
    var phase: ReadProgress.Phase? { .authenticating }

    func plannedBytes(_ scope: StepScope) -> Int { scope.options.accessControl == .bacOnly ? 0 : LDSFile.cardAccess.typicalSize }

    func run(_ scope: StepScope) async throws(MRTDError) -> Output {
        guard scope.options.accessControl != .bacOnly else { return Output() }
        return try await Self.read(bySelect: false, scope)
    }

    /// Reads EF.CardAccess (plain, on the MF; by short EF identifier unless `bySelect`) and
    /// returns its PACE offers. A file read before is not read again.
    static func read(bySelect: Bool, _ scope: StepScope) async throws(MRTDError) -> Output {
        let request = CardSession.FileRequest(.cardAccess, .plain, bySelect: bySelect, notFoundIsFinal: true, isFirstContact: !bySelect)
        switch try await scope.readPublicFile(request) {
        case .missing:
            return Output(notFound: true)
        case .unreadable(let why):
            return Output(note: why)
        case .content(let bytes):
            guard !bytes.isEmpty else { return Output() }
            guard let infos = try? SecurityInfos(bytes: bytes) else { return Output(note: "EF.CardAccess could not be parsed") }
            return Output(offers: PACEInfo.all(in: infos))
        }
    }
}
