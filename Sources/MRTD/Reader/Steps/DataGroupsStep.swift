import SmartCardCore

/// The data groups asked for (or all EF.COM and EF.SOD list) that no step before read, with as
/// few APDUs as the chip allows.
struct DataGroupsStep: ReadStep {
    var name: String { "data groups" }
    var phase: ReadProgress.Phase? { .reading }

    func plannedBytes(_ scope: StepScope) -> Int {
        scope.dataGroupsToRead.map(LDSFile.dataGroup).filter { !scope.files.isSettled($0) }.reduce(0) { $0 + $1.typicalSize }
    }

    func run(_ scope: StepScope) async throws(MRTDError) {
        for number in scope.dataGroupsToRead {
            _ = try await scope.read(.dataGroup(number))
        }
    }
}

extension StepScope {
    /// The data groups this read reads, in order: those asked for (or all listed), DG14 and DG15
    /// when verification needs them, DG14 first (Chip Authentication changes the keys before the
    /// rest is read).
    var dataGroupsToRead: [Int] {
        let listed = results.listedDataGroups
        var wanted = options.dataGroups.map { Set($0) } ?? listed
        if options.dataGroups == nil, wanted.isEmpty { wanted = [1, 2] }
        if options.verifyChip, listed.contains(14) { wanted.insert(14) }
        if options.verifyActive, listed.contains(15) { wanted.insert(15) }
        var order = wanted.sorted()
        if options.verifyChip, let position = order.firstIndex(of: 14) {
            order.remove(at: position)
            order.insert(14, at: 0)
        }
        return order
    }
}
