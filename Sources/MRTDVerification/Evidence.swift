#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MRTDCrypto

/// What a kiosk hands its backend so the backend can check the chip itself (zero trust in the
/// kiosk): every file as the chip returned it, the host's own checks, and the raw Active
/// Authentication exchange. Shaped to drop into a document object such as
/// `{ "mrz": …, "chip": { "lds": [ {name, data} ], "auth": [ {type, result, detail} ] } }`.
///
/// What a backend can verify from it: passive authentication (every file's hash against EF.SOD,
/// EF.SOD's signature and chain) and Active Authentication against a challenge the backend chose
/// (a replayed or forged answer fails). What it cannot: Chip Authentication and PACE-CAM happen
/// inside the secure channel, so `auth` carries only the host's statement of them.
public struct ChipEvidence: Codable, Sendable, Hashable {
    /// The MRZ as DG1 holds it (lines joined by `\n`), when DG1 was read.
    public var mrz: String?
    public var chip: Chip

    public struct Chip: Codable, Sendable, Hashable {
        /// Every file read, byte for byte as the chip returned it (after secure messaging).
        public var lds: [File]
        /// One entry per check the host ran.
        public var auth: [Auth]
        /// The INTERNAL AUTHENTICATE exchange, when Active Authentication ran.
        public var activeAuthentication: ActiveAuthenticationExchange?

        public init(lds: [File], auth: [Auth], activeAuthentication: ActiveAuthenticationExchange? = nil) {
            self.lds = lds
            self.auth = auth
            self.activeAuthentication = activeAuthentication
        }
    }

    /// A file: `EF.COM`, `EF.SOD`, `EF.CardAccess`, `EF.CardSecurity`, `DG1` … `DG16`; `data` is base64.
    public struct File: Codable, Sendable, Hashable {
        public var name: String
        public var data: String

        public init(name: String, data: String) {
            self.name = name
            self.data = data
        }
    }

    /// A check the host ran: `ACCESS_CONTROL`, `PASSIVE_AUTHENTICATION`, `CHIP_AUTHENTICATION`,
    /// `ACTIVE_AUTHENTICATION`; result `PASSED`, `FAILED`, `NOT_SUPPORTED`, `NOT_CHECKED` or
    /// `UNTRUSTED` (signature and hashes right, chain not anchored in the host's trust store).
    public struct Auth: Codable, Sendable, Hashable {
        public var type: String
        public var result: String
        public var detail: String

        public init(type: String, result: String, detail: String) {
            self.type = type
            self.result = result
            self.detail = detail
        }
    }

    /// The challenge sent to the chip and its raw signature, both base64.
    public struct ActiveAuthenticationExchange: Codable, Sendable, Hashable {
        public var challenge: String
        public var signature: String

        public init(challenge: String, signature: String) {
            self.challenge = challenge
            self.signature = signature
        }
    }

    public init(mrz: String?, chip: Chip) {
        self.mrz = mrz
        self.chip = chip
    }

    package static let accessControl = "ACCESS_CONTROL"
    package static let passiveAuthentication = "PASSIVE_AUTHENTICATION"
    package static let chipAuthentication = "CHIP_AUTHENTICATION"
    package static let activeAuthentication = "ACTIVE_AUTHENTICATION"
    /// Terminal Authentication (EAC), recorded when it was tried.
    package static let terminalAuthentication = "TERMINAL_AUTHENTICATION"

    /// The evidence of a read: its files, the host's verdicts, the AA exchange.
    public init(_ result: PassportReadResult) {
        // The MRZ as a convenience only when DG1 is the signed one (its files carry everything).
        mrz = result.withheld[.dataGroup(1)] == nil ? result.dg1?.mrz.text : nil
        let order: [LDSFile] = [.com, .sod, .cardAccess, .cardSecurity] + (1...16).map { .dataGroup($0) }
        let files = order.compactMap { file in
            result.files[file].map { File(name: file.name, data: Data($0).base64EncodedString()) }
        }
        var auth = [Auth(type: Self.accessControl, result: "PASSED",
                         detail: result.accessControl == "PACE" ? (result.paceProtocol ?? "PACE") : result.accessControl)]
        auth.append(Auth(type: Self.passiveAuthentication, result: Self.result(result.passiveOutcome.status), detail: result.passiveOutcome.detail))
        auth.append(Auth(type: Self.chipAuthentication, result: Self.result(result.chip.status),
                         detail: result.chip.detail + (result.chipKeySource.map { " (key from \($0))" } ?? "")))
        var activeDetail = result.active.detail
        if let exchange = result.activeAuthenticationExchange {
            activeDetail += exchange.challengeFromCaller ? "; challenge: the backend's" : "; challenge: random, chosen by the host"
        }
        auth.append(Auth(type: Self.activeAuthentication, result: Self.result(result.active.status), detail: activeDetail))
        if result.terminal.status != .notChecked {
            auth.append(Auth(type: Self.terminalAuthentication, result: Self.result(result.terminal.status), detail: result.terminal.detail))
        }
        chip = Chip(lds: files, auth: auth, activeAuthentication: result.activeAuthenticationExchange.map {
            ActiveAuthenticationExchange(challenge: Data($0.challenge).base64EncodedString(), signature: Data($0.signature).base64EncodedString())
        })
    }

    /// `PASSED`, `FAILED`, `NOT_SUPPORTED`, `NOT_CHECKED` or `UNTRUSTED`.
    package static func result(_ status: VerificationStatus) -> String {
        switch status {
        case .valid: return "PASSED"
        case .invalid: return "FAILED"
        case .untrusted: return "UNTRUSTED"
        case .notSupported: return "NOT_SUPPORTED"
        case .notChecked: return "NOT_CHECKED"
        }
    }

    /// Evidence from JSON: the evidence object itself, or `nfc.read`'s success data carrying it
    /// under `evidence` (what a backend receives from a journey).
    public init(json: Data) throws(MRTDError) {
        do {
            let envelope = try JSONDecoder().decode(EvidenceEnvelope.self, from: json)
            self = try envelope.evidence ?? JSONDecoder().decode(ChipEvidence.self, from: json)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw MRTDError(.invalidEvidence, "the evidence is not JSON")
            }
            if case .typeMismatch(_, let context) = error, context.codingPath.isEmpty {
                throw MRTDError(.invalidEvidence, "the evidence is not a JSON object")
            }
            throw MRTDError(.invalidEvidence, "the JSON is not chip evidence: \(Self.describe(error))")
        } catch {
            throw MRTDError(.invalidEvidence, "the JSON is not chip evidence")
        }
    }

    /// nfc.read's success data, which carries the evidence under `evidence`; any other object has
    /// none (it is the evidence itself, or not evidence at all).
    private struct EvidenceEnvelope: Decodable {
        enum Key: String, CodingKey { case evidence }
        let evidence: ChipEvidence?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            evidence = try container.decodeIfPresent(ChipEvidence.self, forKey: .evidence)
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context)).\(key.stringValue) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)) has the wrong type"
        @unknown default: return "unreadable"
        }
    }

    /// The files by name, decoded; a name that is not an LDS file or data that is not base64 is an error.
    public func files() throws(MRTDError) -> [LDSFile: [UInt8]] {
        var files: [LDSFile: [UInt8]] = [:]
        for file in chip.lds {
            guard let kind = LDSFile(name: file.name), kind != .atrInfo else {
                throw MRTDError(.invalidEvidence, "chip.lds has a file named '\(file.name.prefix(40))', which is not EF.COM, EF.SOD, EF.CardAccess, EF.CardSecurity or DG1 … DG16")
            }
            guard let bytes = Data(base64Encoded: file.data) else {
                throw MRTDError(.invalidEvidence, "chip.lds \(file.name): data is not base64")
            }
            guard files[kind] == nil else { throw MRTDError(.invalidEvidence, "chip.lds lists \(file.name) twice") }
            files[kind] = Array(bytes)
        }
        return files
    }
}

/// Checks `ChipEvidence` as a backend would, without the chip: passive authentication over the
/// files against a trust store of its own, and the Active Authentication signature against
/// the challenge the backend chose. Chip Authentication and PACE-CAM cannot be re-checked
/// offline: `chip` is `notChecked` and quotes the host's statement.
public struct EvidenceVerifier: Sendable {
    public var trustStore: TrustStore

    public init(trustStore: TrustStore) {
        self.trustStore = trustStore
    }

    /// The verification of `evidence`. With `challenge` (the backend's 8 bytes), Active
    /// Authentication passes only if the chip signed exactly that challenge; without it, only
    /// the evidence's own challenge is checked (which a forger can choose: say so).
    public func verify(_ evidence: ChipEvidence, challenge expected: [UInt8]? = nil) throws(MRTDError) -> PassportReadResult {
        let files = try evidence.files()
        guard files[.sod] != nil else { throw MRTDError(.invalidEvidence, "chip.lds has no EF.SOD: nothing to verify against") }
        var result = PassportReadResult.offline(files: files, trustStore: trustStore)
        let hostChip = evidence.chip.auth.first { $0.type == ChipEvidence.chipAuthentication }
        result.chip = VerificationOutcome(status: .notChecked,
                                          detail: "Chip Authentication cannot be re-checked from evidence; the host reported \(hostChip.map { "\($0.result): \($0.detail)" } ?? "nothing")")
        result.active = try Self.activeAuthentication(evidence, result: result, expected: expected)
        return result
    }

    static func activeAuthentication(_ evidence: ChipEvidence, result: PassportReadResult, expected: [UInt8]?) throws(MRTDError) -> VerificationOutcome {
        guard let exchange = evidence.chip.activeAuthentication else {
            if result.dg15 != nil || result.sod?.dataGroupHashes[15] != nil {
                return VerificationOutcome(status: .invalid, detail: "the document has Active Authentication (DG15), but the evidence holds no INTERNAL AUTHENTICATE exchange")
            }
            return VerificationOutcome(status: .notSupported, detail: "no DG15: the chip has no Active Authentication")
        }
        guard let challenge = ActiveAuthentication.challenge(base64: exchange.challenge) else {
            throw MRTDError(.invalidEvidence, "chip.activeAuthentication.challenge must be base64 of exactly 8 bytes")
        }
        guard let signature = Data(base64Encoded: exchange.signature).map(Array.init) else {
            throw MRTDError(.invalidEvidence, "chip.activeAuthentication.signature must be base64")
        }
        guard let dg15 = result.dg15 else {
            return VerificationOutcome(status: .invalid, detail: "the evidence has an Active Authentication exchange but no DG15 to check it with")
        }
        guard result.passive?.dataGroups["DG15"] == .matched else {
            return VerificationOutcome(status: .invalid, detail: "DG15 does not match its hash in EF.SOD: its key proves nothing")
        }
        if let expected, expected != challenge {
            return VerificationOutcome(status: .invalid, detail: "the chip signed another challenge than the backend's (a replayed or forged answer)")
        }
        var outcome = ActiveAuthentication.verify(publicKey: dg15.publicKey, challenge: challenge, signature: signature,
                                                  ecdsaDigest: ActiveAuthentication.ecdsaDigest(in: result.dg14))
        if expected == nil, outcome.status == .valid {
            outcome.detail += "; the challenge was not the backend's, so this does not rule out a replayed answer"
        }
        return outcome
    }
}
