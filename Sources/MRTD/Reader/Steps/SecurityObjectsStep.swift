import SmartCardCore

/// EF.COM and EF.SOD: what the chip says it holds, and what its issuer signed.
struct SecurityObjectsStep: ReadStep {
    struct Output {
        var com: EFCOM?
        var sod: SecurityObject?

        /// The data groups EF.COM or EF.SOD list.
        var listedDataGroups: Set<Int> { Set(com?.dataGroups ?? []).union(sod?.dataGroupHashes.keys ?? [:].keys) }
    }

    var name: String { "security objects" }
    var phase: ReadProgress.Phase? { .reading }

    func plannedBytes(_ scope: StepScope) -> Int { LDSFile.com.typicalSize + LDSFile.sod.typicalSize }

    func run(_ scope: StepScope) async throws(MRTDError) -> Output {
        _ = try await scope.read(.com)
        _ = try await scope.read(.sod)
        return Output(com: scope.files.parsed(.com) { bytes throws(MRTDError) in try EFCOM(bytes: bytes) },
                      sod: scope.files.parsed(.sod) { bytes throws(MRTDError) in try SecurityObject(bytes: bytes) })
    }
}

extension StepResults {
    /// The data groups EF.COM or EF.SOD list (none before they are read).
    var listedDataGroups: Set<Int> { self[SecurityObjectsStep.self]?.listedDataGroups ?? [] }
}
