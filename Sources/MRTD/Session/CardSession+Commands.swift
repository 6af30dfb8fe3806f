import SmartCardCore

/// The commands an eMRTD reader sends, each built here once (ISO 7816-4, ICAO 9303-11,
/// BSI TR-03110-3): SELECT, MANAGE SECURITY ENVIRONMENT, GENERAL AUTHENTICATE, GET CHALLENGE,
/// EXTERNAL and INTERNAL AUTHENTICATE, PERFORM SECURITY OPERATION. READ BINARY is in
/// `CardSession+Files.swift`.
extension CardSession {
    /// What a SELECT selects.
    package enum SelectTarget: Sendable, CustomStringConvertible {
        case masterFile
        case application([UInt8])
        case file(UInt16)

        var command: CommandAPDU {
            switch self {
            case .masterFile: return CommandAPDU(ins: 0xA4, p1: 0x00, p2: 0x0C, data: [0x3F, 0x00])
            case .application(let aid): return .selectApplication(aid)
            case .file(let fid): return .selectFile(fid)
            }
        }

        package var description: String {
            switch self {
            case .masterFile: return "the MF"
            case .application: return "the eMRTD application"
            case .file(let fid): return "file \(APDUTrace.hex([UInt8(fid >> 8), UInt8(fid & 0xFF)]))"
            }
        }
    }

    /// The eMRTD application (ICAO 9303-10 §3.10).
    package static let eMRTDApplication: [UInt8] = [0xA0, 0x00, 0x00, 0x02, 0x47, 0x10, 0x01]

    /// SELECT, with or without an Le as the chip wants it: some chips refuse an Le on SELECT
    /// (6700), others require one. Learnt once (`ChipLimits.selectWithLe`).
    package func select(_ target: SelectTarget, _ protection: Protection = .current) async throws(MRTDError) -> CardAnswer {
        let command = target.command
        func send(_ withLe: Bool) async throws(MRTDError) -> CardAnswer {
            var command = command
            command.ne = withLe ? 256 : nil
            return try await self.send(command, protection)
        }
        let first = limits.selectWithLe ?? (command.ne != nil)
        let answer = try await send(first)
        if answer.status == .wrongLength(exact: nil), limits.selectWithLe == nil {
            let other = try await send(!first)
            if other.status != .wrongLength(exact: nil) { limits.selectWithLe = !first }
            return other
        }
        if answer.status == .ok, limits.selectWithLe == nil { limits.selectWithLe = first }
        return answer
    }

    /// SELECT that must succeed; a refusal is `notSupported` (no such application) or
    /// `unexpectedStatus`.
    package func selectOrFail(_ target: SelectTarget, _ protection: Protection = .current) async throws(MRTDError) {
        let answer = try await select(target, protection)
        guard answer.status != .ok else { return }
        if case .application = target {
            throw MRTDError(.notSupported, "the card has no eMRTD application: \(answer.statusWord.meaning)", statusWord: answer.statusWord)
        }
        throw MRTDError(.unexpectedStatus, "selecting \(target) failed: \(answer.statusWord.meaning)", statusWord: answer.statusWord)
    }

    /// MANAGE SECURITY ENVIRONMENT: which template, for which protocol.
    package enum SecurityEnvironment: Sendable {
        /// Set AT for PACE (P1 C1): the PACE protocol, the password reference, the parameter id.
        case pace
        /// Set AT for Chip Authentication version 2 (P1 41): the protocol and the key id.
        case chipAuthentication
        /// Set KAT for Chip Authentication version 1 (P1 41, P2 A6): the ephemeral key and key id.
        case chipAuthenticationKeyAgreement
        /// Set AT for Terminal Authentication (P1 81): protocol, the terminal's CHR, data.
        case terminalAuthentication
        /// Set DST (P1 81, P2 B6): the CAR of the certificate verified next.
        case verification

        var p1p2: (UInt8, UInt8) {
            switch self {
            case .pace: return (0xC1, 0xA4)
            case .chipAuthentication: return (0x41, 0xA4)
            case .chipAuthenticationKeyAgreement: return (0x41, 0xA6)
            case .terminalAuthentication: return (0x81, 0xA4)
            case .verification: return (0x81, 0xB6)
            }
        }
    }

    /// The cryptographic mechanism reference (tag 80) of a protocol OID: the OID's content bytes.
    package static func mechanismReference(_ oid: String) -> [UInt8] {
        var object = DER.oid(oid)
        object[0] = 0x80
        return object
    }

    /// MANAGE SECURITY ENVIRONMENT with the given data objects (already TLV-encoded).
    package func manageSecurityEnvironment(_ template: SecurityEnvironment, _ objects: [UInt8],
                                           _ protection: Protection = .current) async throws(MRTDError) -> CardAnswer {
        let (p1, p2) = template.p1p2
        return try await send(CommandAPDU(ins: 0x22, p1: p1, p2: p2, data: objects), protection)
    }

    /// One GENERAL AUTHENTICATE exchange: `7C { objects }` out (command chaining unless `last`),
    /// the dynamic authentication data objects of the answer back, by tag. A status other than
    /// 9000 comes back as `.refused` with the answer, for the protocol to judge.
    package enum AuthenticationAnswer: Sendable {
        case objects([UInt32: [UInt8]])
        case refused(CardAnswer)
    }

    package func generalAuthenticate(_ objects: [UInt8], last: Bool, step: String,
                                     _ protection: Protection = .current) async throws(MRTDError) -> AuthenticationAnswer {
        traceContext.detail = step
        let command = CommandAPDU(cla: last ? 0x00 : 0x10, ins: 0x86, p1: 0, p2: 0, data: BERTLV.encode(tag: 0x7C, value: objects),
                                  ne: 256)
        let answer = try await send(command, protection)
        guard answer.status == .ok else { return .refused(answer) }
        guard let outer = try? BERTLV.parseSingle(answer.data), outer.tag == 0x7C, let children = try? outer.children() else {
            throw MRTDError(.malformedData, "GENERAL AUTHENTICATE (\(step)): the chip's answer is not dynamic authentication data")
        }
        var result: [UInt32: [UInt8]] = [:]
        for child in children { result[child.tag] = child.value }
        return .objects(result)
    }

    /// GET CHALLENGE for `length` bytes (8 for BAC and Terminal Authentication).
    package func getChallenge(length: Int = 8, forceExtended: Bool = false,
                              _ protection: Protection = .current) async throws(MRTDError) -> CardAnswer {
        try await send(CommandAPDU(ins: 0x84, p1: 0, p2: 0, ne: length, forceExtended: forceExtended), protection)
    }

    /// EXTERNAL AUTHENTICATE with `data` (BAC's E_IFD ‖ M_IFD with Le 40; a TA signature without,
    /// chained when an RSA signature is longer than a short APDU carries).
    package func externalAuthenticate(_ data: [UInt8], ne: Int? = nil, _ protection: Protection = .current) async throws(MRTDError) -> CardAnswer {
        guard ne == nil else { return try await send(CommandAPDU(ins: 0x82, p1: 0, p2: 0, data: data, ne: ne), protection) }
        return try await sendChained(CommandAPDU(ins: 0x82, p1: 0, p2: 0, data: data), protection)
    }

    /// INTERNAL AUTHENTICATE of Active Authentication with an 8-byte challenge.
    package func internalAuthenticate(_ challenge: [UInt8]) async throws(MRTDError) -> CardAnswer {
        let ne = limits.extendedLength == true ? 65_536 : 256
        return try await sendAdjustingLength(CommandAPDU(ins: 0x88, p1: 0, p2: 0, data: challenge, ne: ne))
    }

    /// PERFORM SECURITY OPERATION: VERIFY CERTIFICATE (P1 00, P2 BE) with a CV certificate's body
    /// and signature (Terminal Authentication), chained when it is long (see `sendChained`).
    package func verifyCertificate(_ bodyAndSignature: [UInt8]) async throws(MRTDError) -> CardAnswer {
        try await sendChained(CommandAPDU(ins: 0x2A, p1: 0x00, p2: 0xBE, data: bodyAndSignature))
    }

    /// Sends `command` (no Le) in one APDU when the chip takes extended length or the data fits;
    /// otherwise as a command chain (ISO/IEC 7816-4 §5.3.3, CLA b5; BSI TR-03110-3 allows either
    /// for Terminal Authentication): each link protected on its own, the chip answering 9000 to
    /// all but the last. What needs it: certificates with RSA keys, curves above 256 bits or a
    /// CVCA's domain parameters, and RSA signatures.
    private func sendChained(_ command: CommandAPDU, _ protection: Protection = .current) async throws(MRTDError) -> CardAnswer {
        var rest = command.data[...]
        if limits.extendedLength != true {
            while rest.count > Self.chainLink {
                var link = command
                link.cla |= 0x10
                link.data = Array(rest.prefix(Self.chainLink))
                let answer = try await send(link, protection)
                guard answer.status == .ok else { return answer }
                rest = rest.dropFirst(Self.chainLink)
            }
        }
        var last = command
        last.data = Array(rest)
        return try await send(last, protection)
    }

    /// The most data bytes in one link of a command chain: under secure messaging 223 plain bytes
    /// make a 224-byte cryptogram, and DO'87' with DO'8E' then fill 238 of a short APDU's 255.
    static let chainLink = 223
}
