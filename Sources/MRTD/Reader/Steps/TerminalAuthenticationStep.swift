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
        guard let chipAuthentication, chipOutcome?.status == .valid else {
            let why = chipOutcome.map { "it did not succeed: \($0.detail)" } ?? "it was not done (PACE-CAM or no chip key)"
            terminalOutcome = VerificationOutcome(status: .invalid, detail: "Terminal Authentication needs Chip Authentication first, and \(why)")
            deny(wanted)
            return
        }
        let trustPoints: [String]
        switch try await readFile(.cvca, index: 2, of: dataGroupsToRead.count + 2) {
        case .content(let bytes):
            files[.cvca] = bytes
            trustPoints = TerminalAuthenticationProtocol.trustPoints(inCVCA: bytes)
        case .absent(let why):
            terminalOutcome = VerificationOutcome(status: .invalid, detail: "the chip's EF.CVCA cannot be read (\(why)): it names no CVCA to start the chain from")
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
        let ephemeral = PACE.compressed(chipAuthentication.ephemeralPublicKey, domain: chipAuthentication.chipPublicKey.domain)
        let (outcome, rights) = try await TerminalAuthenticationProtocol(credentials: credentials, chipIdentifier: chipIdentifier,
                                                                         ephemeralKey: ephemeral).run(on: session, trustPoints: trustPoints)
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
