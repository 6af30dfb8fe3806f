import SmartCardCore

/// The files: EF.COM and EF.SOD (which say what the chip holds), Chip Authentication on the key
/// the chip publishes, then the data groups asked for.
extension ReadContext {
    /// EF.COM and EF.SOD; after each, a BAC-opened chip without SFI support is looked at again for PACE.
    func readSecurityObjects() async throws(MRTDError) {
        for (index, file) in [LDSFile.com, .sod].enumerated() where files[file] == nil && absent[file] == nil {
            switch try await readFile(file, index: index, of: 4) {
            case .content(let bytes): files[file] = bytes
            case .absent(let why): absent[file] = why
            }
            try await lookAgainForPACE()
        }
        if com == nil, let bytes = files[.com] {
            do { com = try EFCOM(bytes: bytes) } catch { parseErrors[.com] = error.reason }
        }
        if sod == nil, let bytes = files[.sod] {
            do { sod = try SecurityObject(bytes: bytes) } catch { parseErrors[.sod] = error.reason }
        }
    }

    /// The data groups EF.COM or EF.SOD list.
    var listedDataGroups: Set<Int> { Set(com?.dataGroups ?? []).union(sod?.dataGroupHashes.keys ?? [:].keys) }

    /// The data groups this read reads, in order: those asked for (or all listed), DG14 and DG15
    /// when verification needs them, DG14 first (Chip Authentication changes the keys before the
    /// rest is read).
    var dataGroupsToRead: [Int] {
        var wanted = options.dataGroups.map { Set($0) } ?? listedDataGroups
        if options.dataGroups == nil, wanted.isEmpty { wanted = [1, 2] }
        if options.verifyChip, listedDataGroups.contains(14) { wanted.insert(14) }
        if options.verifyActive, listedDataGroups.contains(15) { wanted.insert(15) }
        var order = wanted.sorted()
        if options.verifyChip, let position = order.firstIndex(of: 14) {
            order.remove(at: position)
            order.insert(14, at: 0)
        }
        return order
    }

    /// Chip Authentication (ICAO 9303-11 §6.2) with the key the chip publishes: PACE-CAM already
    /// proved it; an ID card's key is in EF.CardSecurity (read when the chip was opened); a
    /// passport's in DG14 (read now). A failed CA leaves no usable session: the chip is opened again.
    func authenticateChip() async throws(MRTDError) {
        guard options.verifyChip, chipOutcome == nil else { return }
        if let mappingOutcome {
            chipOutcome = mappingOutcome
            chipKeySource = .cardSecurity
            return
        }
        switch try await chipKeyLookup() {
        case .offer(let offer, let source):
            try await runChipAuthentication(offer, source: source)
        case .unusable(let outcome, let source):
            chipOutcome = outcome
            chipKeySource = source
        case .none:
            return
        }
    }

    /// Where the chip's key for Chip Authentication is, or why it cannot be used.
    enum ChipKeyLookup {
        case offer(ChipAuthentication.Offer, ChipKeySource)
        /// The file that should publish it is broken or offers nothing usable: the outcome to report.
        case unusable(VerificationOutcome, ChipKeySource)
        /// The chip offers no Chip Authentication.
        case none
    }

    /// The chip's Chip Authentication key: an ID card's in EF.CardSecurity (read when the chip was
    /// opened), a passport's in DG14 (read now, once; not again after the card came back).
    func chipKeyLookup() async throws(MRTDError) -> ChipKeyLookup {
        if cardAccessOffersChipAuthentication, let security = cardSecurity {
            guard let infos = ChipAuthentication.cardSecurityInfos(security) else {
                return .unusable(VerificationOutcome(status: .invalid, detail: "EF.CardSecurity is not a signed security object"), .cardSecurity)
            }
            let (offer, refusals) = ChipAuthentication.examine(infos)
            if let offer { return .offer(offer, .cardSecurity) }
            if !refusals.isEmpty {
                return .unusable(VerificationOutcome(status: .invalid, detail: "EF.CardSecurity's chip key is refused: \(refusals.joined(separator: "; "))"), .cardSecurity)
            }
        }
        guard listedDataGroups.contains(14), let bytes = try await dg14() else { return .none }
        guard let infos = try? SecurityInfos(bytes: bytes) else {
            return .unusable(VerificationOutcome(status: .invalid, detail: "DG14 cannot be parsed"), .dg14)
        }
        let (offer, refusals) = ChipAuthentication.examine(infos)
        guard let offer else {
            if !refusals.isEmpty {
                return .unusable(VerificationOutcome(status: .invalid, detail: "DG14's chip key is refused: \(refusals.joined(separator: "; "))"), .dg14)
            }
            return .unusable(VerificationOutcome(status: .notSupported, detail: "DG14 offers no Chip Authentication with a key this reader can use"), .dg14)
        }
        return .offer(offer, .dg14)
    }

    /// DG14, read once (a read that failed is not tried again).
    private func dg14() async throws(MRTDError) -> [UInt8]? {
        if files[.dataGroup(14)] == nil, absent[.dataGroup(14)] == nil {
            switch try await readFile(.dataGroup(14), index: 2, of: dataGroupsToRead.count + 2) {
            case .content(let bytes): files[.dataGroup(14)] = bytes
            case .absent(let why): absent[.dataGroup(14)] = why
            }
        }
        return files[.dataGroup(14)]
    }

    /// What Chip Authentication run for Terminal Authentication gave.
    enum ChipAuthenticationForTerminal {
        case done(ChipAuthenticationResult)
        case notOffered
        case failed(String)
    }

    /// Chip Authentication run for Terminal Authentication on a chip PACE-CAM already proved:
    /// TA version 1 signs CA's ephemeral key, so a chip that also offers CA (EF.CardSecurity or
    /// DG14, as DE passports do) gets it now, as JMRTD does. When it fails the chip is opened again
    /// (PACE-CAM's outcome stands).
    func chipAuthenticationForTerminal() async throws(MRTDError) -> ChipAuthenticationForTerminal {
        guard case .offer(let offer, let source) = try await chipKeyLookup() else { return .notOffered }
        let result = try await ChipAuthenticationProtocol(offer: offer, source: source).run(on: session)
        guard result.outcome.status == .valid else {
            try await reauthenticate()
            return .failed(result.outcome.detail)
        }
        chipAuthentication = result
        return .done(result)
    }

    private func runChipAuthentication(_ offer: ChipAuthentication.Offer, source: ChipKeySource) async throws(MRTDError) {
        let result = try await ChipAuthenticationProtocol(offer: offer, source: source).run(on: session)
        chipOutcome = result.outcome
        chipKeySource = source
        if result.outcome.status == .valid {
            chipAuthentication = result
        } else {
            try await reauthenticate()
        }
    }

    /// The data groups not read yet, in `dataGroupsToRead` order.
    func readDataGroups() async throws(MRTDError) {
        let order = dataGroupsToRead
        for (index, number) in order.enumerated() {
            let file = LDSFile.dataGroup(number)
            guard files[file] == nil, absent[file] == nil else { continue }
            switch try await readFile(file, index: index + 2, of: order.count + 2) {
            case .content(let bytes): files[file] = bytes
            case .absent(let why): absent[file] = why
            }
        }
    }
}
