import CVCertificates
import Foundation
import LDS
import MRTDCrypto
import SmartCardCore
import Synchronization

/// Extended Access Control on the emulated chip: EF.CVCA, the chip's trust points and current
/// date, and Terminal Authentication version 1 enforced as BSI TR-03110 describes it — DG3 and
/// DG4 stay closed (6982) until a terminal proved a chain from a trust point with the rights.
public struct EACConfiguration: Sendable {
    /// The CVCA certificates the chip trusts (their public keys and CHRs; at most two are named in EF.CVCA).
    public var trustPoints: [CVCertificate]
    /// The chip's current date (its last known date; moved on by CVCA link and domestic DV certificates).
    public var date: CVDate

    public init(trustPoints: [CVCertificate], date: CVDate) {
        self.trustPoints = trustPoints
        self.date = date
    }

    /// EF.CVCA: the CARs (tag 42) of the trust points, zero-padded to 36 bytes.
    public var cvcaFile: [UInt8] {
        let references = trustPoints.prefix(2).flatMap { BERTLV.encode(tag: 0x42, value: CVCertificate.referenceBytes($0.holderReference)) }
        return references + [UInt8](repeating: 0, count: max(0, 36 - references.count))
    }
}

/// What a chip remembers of Terminal Authentication: per session (the keys imported from
/// certificates, the terminal chosen, what was granted) and for good (its date, new trust points).
enum ChipTerminalAuthentication {
    /// id-TA (BSI TR-03110-3 A.1.1.3), the OID of TerminalAuthenticationInfo in DG14.
    static let protocolOID = "0.4.0.127.0.7.2.2.2"

    struct Key {
        let key: CVPublicKey
        let role: CertificateHolderAuthorization.Role
        let rights: CertificateHolderAuthorization
    }

    struct State {
        /// ID_PICC for BAC-opened sessions is the document number; after PACE, Comp(the chip's PACE key).
        var chipIdentifier: [UInt8]?
        /// Comp(PK_PCD): Chip Authentication's ephemeral key (TA is possible only after CA).
        var ephemeralKey: [UInt8]?
        var verifyingWith: String?
        var imported: [String: Key] = [:]
        var terminal: String?
        var granted: CertificateHolderAuthorization?
    }

    /// The chip's lasting EAC memory: its date and the trust points link certificates added.
    struct Memory {
        var date: CVDate
        var trustPoints: [String: Key]
    }
}

extension VirtualPassportChip {
    func eacMemory() -> ChipTerminalAuthentication.Memory? {
        guard let eac = passport.eac else { return nil }
        return eacState.withLock { memory in
            if memory == nil {
                var points: [String: ChipTerminalAuthentication.Key] = [:]
                for certificate in eac.trustPoints {
                    points[certificate.holderReference] = .init(key: certificate.publicKey, role: .cvca, rights: certificate.authorization)
                }
                memory = ChipTerminalAuthentication.Memory(date: eac.date, trustPoints: points)
            }
            return memory
        }
    }

    /// Whether `fid` (in the eMRTD application) is open: DG3 and DG4 of an EAC chip only after TA granted them.
    func eacAllows(fid: UInt16, _ state: State) -> Bool {
        guard fid == 0x0103 || fid == 0x0104, passport.eac != nil || passport.biometricsBehindEAC else { return true }
        guard let granted = state.terminal.granted else { return false }
        return fid == 0x0103 ? granted.readsDG3 : granted.readsDG4
    }

    /// MSE:Set DST: the public key (by its CAR) the next certificate is verified with.
    func terminalSetDST(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard let memory = eacMemory() else { return ResponseAPDU(statusWord: .functionNotSupported) }
        guard state.authenticated, state.sm != nil, state.terminal.ephemeralKey != nil else {
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
        guard let objects = try? BERTLV.parseAll(command.data), let reference = objects.first(where: { $0.tag == 0x83 })?.value,
              let name = try? CVCertificate.reference(reference) else { return ResponseAPDU(statusWord: .wrongData) }
        guard memory.trustPoints[name] != nil || state.terminal.imported[name] != nil else {
            return ResponseAPDU(statusWord: .referencedDataNotFound)
        }
        state.terminal.verifyingWith = name
        return ResponseAPDU(statusWord: .success)
    }

    /// PSO:Verify Certificate: checks a certificate against the key Set DST chose and imports its key.
    func verifyCertificate(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard command.p1 == 0x00, command.p2 == 0xBE else { return ResponseAPDU(statusWord: .incorrectP1P2) }
        guard var memory = eacMemory() else { return ResponseAPDU(statusWord: .functionNotSupported) }
        guard state.authenticated, state.sm != nil, let issuerName = state.terminal.verifyingWith else {
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
        guard let issuer = state.terminal.imported[issuerName] ?? memory.trustPoints[issuerName] else {
            return ResponseAPDU(statusWord: .referencedDataNotFound)
        }
        guard let certificate = try? CVCertificate(bytes: BERTLV.encode(tag: 0x7F21, value: command.data)),
              certificate.authorityReference == issuerName,
              certificate.authorization.terminalType == CertificateHolderAuthorization.inspectionSystem else {
            return ResponseAPDU(statusWord: .wrongData)
        }
        guard (try? certificate.verifySignature(issuerKey: issuer.key)) != nil else { return ResponseAPDU(statusWord: .verificationFailed) }
        // The chain goes CVCA → (link CVCA →) DV → terminal.
        let role = certificate.authorization.role
        switch (issuer.role, role) {
        case (.cvca, .cvca), (.cvca, .dvDomestic), (.cvca, .dvForeign), (.dvDomestic, .terminal), (.dvForeign, .terminal): break
        default: return ResponseAPDU(statusWord: .wrongData)
        }
        // Expired for the chip's date: refused. A CVCA link and a domestic DV certificate move the date on.
        guard certificate.expirationDate >= memory.date else { return ResponseAPDU(statusWord: .wrongData) }
        if role == .cvca || role == .dvDomestic, certificate.effectiveDate > memory.date { memory.date = certificate.effectiveDate }
        let key = ChipTerminalAuthentication.Key(key: certificate.publicKey.inheriting(from: issuer.key), role: role,
                                                 rights: certificate.authorization.intersected(with: issuer.rights))
        if role == .cvca { memory.trustPoints[certificate.holderReference] = key }
        state.terminal.imported[certificate.holderReference] = key
        state.terminal.verifyingWith = nil
        let updated = memory
        eacState.withLock { $0 = updated }
        return ResponseAPDU(statusWord: .success)
    }

    /// MSE:Set AT for TA: the terminal (by its CHR) whose signature comes next.
    func terminalSetAT(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard eacMemory() != nil else { return ResponseAPDU(statusWord: .functionNotSupported) }
        guard state.authenticated, state.sm != nil else { return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied) }
        guard let objects = try? BERTLV.parseAll(command.data), let reference = objects.first(where: { $0.tag == 0x83 })?.value,
              let name = try? CVCertificate.reference(reference) else { return ResponseAPDU(statusWord: .wrongData) }
        guard let key = state.terminal.imported[name], key.role == .terminal else { return ResponseAPDU(statusWord: .referencedDataNotFound) }
        state.terminal.terminal = name
        return ResponseAPDU(statusWord: .success)
    }

    /// EXTERNAL AUTHENTICATE for TA: the terminal's signature over ID_PICC ‖ r_PICC ‖ Comp(PK_PCD).
    /// Comp() is an x coordinate at the field's length (TR-03111 FE2OS); terminals built on
    /// OpenPACE write it without leading zero bytes (once in 256 keys it is shorter), so the
    /// signature is also checked over that form — the same key's value, written another way.
    func terminalExternalAuthenticate(_ command: CommandAPDU, _ state: inout State) -> ResponseAPDU {
        guard let name = state.terminal.terminal, let key = state.terminal.imported[name], let challenge = state.challenge,
              let ephemeral = state.terminal.ephemeralKey else {
            return ResponseAPDU(statusWord: .conditionsOfUseNotSatisfied)
        }
        state.challenge = nil
        let identifier = state.terminal.chipIdentifier ?? documentNumberIdentifier
        let messages = Self.terminalAuthenticationMessages(identifier: identifier, challenge: challenge, compressedKey: ephemeral)
        guard let publicKey = try? key.key.publicKey(),
              messages.contains(where: { key.key.algorithm.verify(command.data, over: $0, with: publicKey) }) else {
            state.terminal.terminal = nil
            return ResponseAPDU(statusWord: .verificationFailed)
        }
        state.terminal.granted = key.rights
        return ResponseAPDU(statusWord: .success)
    }

    /// The messages a terminal's signature may cover: ID_PICC ‖ r_PICC ‖ Comp(PK_PCD) as the
    /// specifications write it, then with ID_PICC's and Comp's leading zero bytes dropped, as
    /// OpenPACE writes them (the specifications' form first; no form twice).
    package static func terminalAuthenticationMessages(identifier: [UInt8], challenge: [UInt8], compressedKey: [UInt8]) -> [[UInt8]] {
        func forms(_ value: [UInt8]) -> [[UInt8]] {
            let stripped = Array(value.drop { $0 == 0 })
            return stripped.count == value.count || stripped.isEmpty ? [value] : [value, stripped]
        }
        return forms(identifier).flatMap { id in forms(compressedKey).map { id + challenge + $0 } }
    }

    /// ID_PICC after BAC: the document number (at least 9 characters) and its check digit.
    var documentNumberIdentifier: [UInt8] { Array(passport.mrzKeyInformation.prefix(passport.mrzKeyInformation.count - 14).utf8) }
}
