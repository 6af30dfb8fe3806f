import CVCertificates
import LDS

/// Extended Access Control: Terminal Authentication before DG3 and DG4, when the caller gave
/// terminal credentials and the read wants an EAC-protected data group.
extension ReadContext {
    /// The EAC-protected data groups this read wants (DG3 fingerprints, DG4 iris).
    var protectedDataGroupsWanted: [Int] { dataGroupsToRead.filter { $0 == 3 || $0 == 4 } }

    func authenticateTerminal() async throws(MRTDError) {
        guard let credentials = options.terminal, terminalOutcome == nil else { return }
        let wanted = protectedDataGroupsWanted
        guard !wanted.isEmpty else {
            terminalOutcome = VerificationOutcome(status: .notSupported, detail: "no DG3 or DG4 to read (the chip lists none, or none was asked for)")
            return
        }
        guard try await prepareTerminalAuthenticationKey() else {
            deny(wanted)
            return
        }
        let trustPoints: [String]
        // EF.CVCA is read once: a TA the card left during starts again from what it named.
        let cvca: FileOutcome
        if let known = files[.cvca] {
            cvca = .content(known)
        } else {
            cvca = try await readFile(.cvca, index: 2, of: dataGroupsToRead.count + 2)
        }
        switch cvca {
        case .content(let bytes):
            files[.cvca] = bytes
            trustPoints = TerminalAuthenticationProtocol.trustPoints(inCVCA: bytes)
        case .absent(let why):
            terminalOutcome = VerificationOutcome(status: .invalid, detail: "the chip's EF.CVCA cannot be read (\(why)): it names no CVCA to start the chain from")
            deny(wanted)
            return
        }
        cvcaTrustPoints = trustPoints
        try await runTerminalAuthentication(credentials, trustPoints: trustPoints, wanted: wanted)
    }

    /// Terminal Authentication again on the chip that came back after tag loss (new access
    /// control, new Chip Authentication, so a new ID_PICC and ephemeral key): what TA opened
    /// before stays open. A refusal now closes DG3/DG4 not read yet.
    func repeatTerminalAuthentication() async throws(MRTDError) {
        guard let credentials = options.terminal, terminalOutcome?.status == .valid, let trustPoints = cvcaTrustPoints else { return }
        let wanted = protectedDataGroupsWanted.filter { files[.dataGroup($0)] == nil }
        guard !wanted.isEmpty else { return }
        guard try await prepareTerminalAuthenticationKey() else {
            deny(wanted)
            return
        }
        try await runTerminalAuthentication(credentials, trustPoints: trustPoints, wanted: wanted)
    }

    /// Makes sure there is an ephemeral key for TA v1 to sign (`terminalAuthenticationKey`): after
    /// PACE-CAM, Chip Authentication is run now when the chip offers it. `false` (with the outcome
    /// set) when there is none.
    private func prepareTerminalAuthenticationKey() async throws(MRTDError) -> Bool {
        if terminalAuthenticationKey != nil { return true }
        if mappingOutcome?.status == .valid, chipOutcome?.status == .valid {
            switch try await chipAuthenticationForTerminal() {
            case .done:
                return true
            case .failed(let detail):
                terminalOutcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication after PACE-CAM needs the Chip Authentication the chip offers, and it failed: \(detail)")
                return false
            case .notOffered:
                signsPACEKeyForTerminal = true
                if terminalAuthenticationKey != nil { return true }
            }
        }
        let why = chipOutcome.map { "it did not succeed: \($0.detail)" } ?? "it was not done (the chip offers no Chip Authentication)"
        terminalOutcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication needs Chip Authentication first, and \(why)")
        return false
    }

    /// Comp(PK_PCD), the ephemeral key TA v1 signs, of the session as it is now (a chip that came
    /// back after tag loss has new keys): Chip Authentication's; after PACE-CAM on a chip that
    /// offers no CA, the terminal's PACE key.
    private var terminalAuthenticationKey: [UInt8]? {
        if let chipAuthentication, chipOutcome?.status == .valid {
            return PACE.compressed(chipAuthentication.ephemeralPublicKey, domain: chipAuthentication.chipPublicKey.domain)
        }
        if signsPACEKeyForTerminal, mappingOutcome?.status == .valid, chipOutcome?.status == .valid, let key = pace?.terminalKey, !key.isEmpty {
            return key
        }
        return nil
    }

    private func runTerminalAuthentication(_ credentials: TerminalCredentials, trustPoints: [String], wanted: [Int]) async throws(MRTDError) {
        guard let ephemeralKey = terminalAuthenticationKey else {
            terminalOutcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication: no Chip Authentication key on the chip that came back")
            deny(wanted)
            return
        }
        let chipIdentifier: [UInt8]
        if let pace {
            chipIdentifier = pace.chipIdentifier
        } else if case .mrz(let number, _, _) = key {
            // BAC: the document number as in the MRZ (at least 9 characters, < filled) and its check digit.
            let field = number.count < 9 ? number + String(repeating: "<", count: 9 - number.count) : number
            chipIdentifier = Array((field + String(MRZ.checkDigit(field))).utf8)
        } else {
            chipIdentifier = []
        }
        let (outcome, rights) = try await TerminalAuthenticationProtocol(credentials: credentials, chipIdentifier: chipIdentifier,
                                                                         ephemeralKey: ephemeralKey).run(on: session, trustPoints: trustPoints)
        terminalOutcome = outcome
        guard let rights else {
            deny(wanted)
            return
        }
        deny(wanted.filter { ($0 == 3 && !rights.readsDG3) || ($0 == 4 && !rights.readsDG4) })
    }

    /// Data groups TA did not open: protected, not asked for again.
    private func deny(_ groups: [Int]) {
        for number in groups where files[.dataGroup(number)] == nil { absent[.dataGroup(number)] = .protected }
    }
}
