import CVCertificates
import LDS

/// Extended Access Control: Terminal Authentication before DG3 and DG4, when the caller gave
/// terminal credentials and the read wants an EAC-protected data group. Data groups it does not
/// open are marked protected. Restored on a chip that came back after tag loss, for DG3/DG4 not
/// read yet.
struct TerminalAuthenticationStep: SessionStep {
    struct Output {
        var outcome: VerificationOutcome
        /// The CVCAs EF.CVCA names (Terminal Authentication starts from them again after tag loss).
        var trustPoints: [String]?
        /// Chip Authentication run for Terminal Authentication on a chip PACE-CAM proved (TA
        /// version 1 signs CA's ephemeral key): repeated with TA after tag loss.
        var chipAuthentication: ChipAuthenticationResult?
        /// A PACE-CAM chip that offers no Chip Authentication: TA signs the terminal's PACE key.
        var signsPACEKey = false
    }

    var name: String { "terminal authentication" }
    var phase: ReadProgress.Phase? { nil }

    func isNeeded(_ scope: StepScope) -> Bool { scope.options.terminal != nil }

    func plannedBytes(_ scope: StepScope) -> Int { scope.protectedDataGroupsWanted.isEmpty ? 0 : 128 }

    func run(_ scope: StepScope) async throws(MRTDError) -> Output {
        let wanted = scope.protectedDataGroupsWanted
        guard let credentials = scope.options.terminal, !wanted.isEmpty else {
            return Output(outcome: VerificationOutcome(status: .notSupported, detail: "no DG3 or DG4 to read (the chip lists none, or none was asked for)"))
        }
        var work = Output(outcome: VerificationOutcome(status: .notChecked, detail: "not done"))
        guard let reason = Self.keyUnavailable(scope) else {
            // EF.CVCA before the Chip Authentication TA may run for itself: a card that leaves
            // during the file finds the session as access control and the steps before left it.
            switch try await scope.read(.cvca, reportAbsence: false) {
            case .content(let bytes):
                work.trustPoints = TerminalAuthenticationProtocol.trustPoints(inCVCA: bytes)
            case .absent(let why):
                work.outcome = VerificationOutcome(status: .invalid, detail: "the chip's EF.CVCA cannot be read (\(why)): it names no CVCA to start the chain from")
                deny(wanted, scope)
                return work
            }
            guard try await prepareKey(scope, &work) else {
                deny(wanted, scope)
                return work
            }
            try await authenticate(credentials, wanted: wanted, scope, &work)
            return work
        }
        work.outcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication needs Chip Authentication first, and \(reason)")
        deny(wanted, scope)
        return work
    }

    /// Terminal Authentication again on the chip that came back after tag loss (new access
    /// control, new Chip Authentication, so a new ID_PICC and ephemeral key): what TA opened
    /// before stays open. A refusal now closes DG3/DG4 not read yet.
    func restore(_ done: Output, after loss: SessionLoss, _ scope: StepScope) async throws(MRTDError) -> Output {
        guard loss == .cardReturned, done.outcome.status == .valid, let credentials = scope.options.terminal, done.trustPoints != nil else {
            return done
        }
        var again = done
        if let own = done.chipAuthentication {
            again.chipAuthentication = try await ChipAuthenticationStep.repeatAuthentication(own, scope)
        }
        let wanted = scope.protectedDataGroupsWanted.filter { scope.files[.dataGroup($0)] == nil }
        guard !wanted.isEmpty else { return again }
        try await authenticate(credentials, wanted: wanted, scope, &again)
        return again
    }

    /// Why no key for TA v1 to sign can come from this session, or `nil` when one can: Chip
    /// Authentication succeeded, or PACE-CAM proved the chip (CA then runs for TA, or TA signs the
    /// PACE key).
    private static func keyUnavailable(_ scope: StepScope) -> String? {
        let chip = scope.results[ChipAuthenticationStep.self]
        if chip?.outcome?.status == .valid { return nil }
        return chip?.outcome.map { "it did not succeed: \($0.detail)" } ?? "it was not done (the chip offers no Chip Authentication)"
    }

    /// Makes sure there is an ephemeral key for TA v1 to sign (`terminalKey`): after PACE-CAM,
    /// Chip Authentication is run now when the chip offers it (as JMRTD does). `false` (with the
    /// outcome set) when there is none.
    private func prepareKey(_ scope: StepScope, _ work: inout Output) async throws(MRTDError) -> Bool {
        if terminalKey(scope, work) != nil { return true }
        let chip = scope.results[ChipAuthenticationStep.self]
        if scope.results[AccessControlStep.self]?.mapping?.status == .valid, chip?.outcome?.status == .valid {
            if case .offer(let offer, let source) = try await scope.chipKeyLookup() {
                let result = try await ChipAuthenticationProtocol(offer: offer, source: source).run(on: scope.session)
                guard result.outcome.status == .valid else {
                    // A failed CA leaves no usable session: the chip is opened again (PACE-CAM's outcome stands).
                    try await scope.reestablishSecureMessaging()
                    work.outcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication after PACE-CAM needs the Chip Authentication the chip offers, and it failed: \(result.outcome.detail)")
                    return false
                }
                work.chipAuthentication = result
                return true
            }
            work.signsPACEKey = true
            if terminalKey(scope, work) != nil { return true }
        }
        let why = chip?.outcome.map { "it did not succeed: \($0.detail)" } ?? "it was not done (the chip offers no Chip Authentication)"
        work.outcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication needs Chip Authentication first, and \(why)")
        return false
    }

    /// Comp(PK_PCD), the ephemeral key TA v1 signs, of the session as it is now (a chip that came
    /// back after tag loss has new keys): Chip Authentication's; after PACE-CAM on a chip that
    /// offers no CA, the terminal's PACE key.
    private func terminalKey(_ scope: StepScope, _ work: Output) -> [UInt8]? {
        let chip = scope.results[ChipAuthenticationStep.self]
        guard chip?.outcome?.status == .valid else { return nil }
        if let established = work.chipAuthentication ?? chip?.established {
            return PACE.compressed(established.ephemeralPublicKey, domain: established.chipPublicKey.domain)
        }
        let access = scope.results[AccessControlStep.self]
        if work.signsPACEKey, access?.mapping?.status == .valid, let key = access?.pace?.terminalKey, !key.isEmpty {
            return key
        }
        return nil
    }

    private func authenticate(_ credentials: TerminalCredentials, wanted: [Int], _ scope: StepScope, _ work: inout Output) async throws(MRTDError) {
        guard let ephemeralKey = terminalKey(scope, work), let trustPoints = work.trustPoints else {
            work.outcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication: no Chip Authentication key on the chip that came back")
            deny(wanted, scope)
            return
        }
        let chipIdentifier: [UInt8]
        if let pace = scope.results[AccessControlStep.self]?.pace {
            chipIdentifier = pace.chipIdentifier
        } else if case .mrz(let number, _, _) = scope.key {
            // BAC: the document number as in the MRZ (at least 9 characters, < filled) and its check digit.
            let field = number.count < 9 ? number + String(repeating: "<", count: 9 - number.count) : number
            chipIdentifier = Array((field + String(MRZ.checkDigit(field))).utf8)
        } else {
            chipIdentifier = []
        }
        let (outcome, rights) = try await TerminalAuthenticationProtocol(credentials: credentials, chipIdentifier: chipIdentifier,
                                                                         ephemeralKey: ephemeralKey).run(on: scope.session, trustPoints: trustPoints)
        work.outcome = outcome
        guard let rights else {
            deny(wanted, scope)
            return
        }
        deny(wanted.filter { ($0 == 3 && !rights.readsDG3) || ($0 == 4 && !rights.readsDG4) }, scope)
    }

    /// Data groups TA did not open: protected, not asked for again.
    private func deny(_ groups: [Int], _ scope: StepScope) {
        for number in groups { scope.files.markAbsent(.dataGroup(number), .protected) }
    }
}

extension StepScope {
    /// The EAC-protected data groups this read wants (DG3 fingerprints, DG4 iris).
    var protectedDataGroupsWanted: [Int] { dataGroupsToRead.filter { $0 == 3 || $0 == 4 } }
}
