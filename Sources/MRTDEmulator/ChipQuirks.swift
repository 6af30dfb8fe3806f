import SmartCardCore

/// How a chip departs from the textbook, as readers report from real documents
/// (`../shared/field-profiles.md`): each switch reproduces one field behaviour, so a rig can put
/// a field problem in front of a reader. All off by default. In a passport description they are
/// the `quirks` object; `gbgbridge emulate` has a flag for each.
public struct ChipQuirks: Codable, Sendable, Hashable {
    /// READ BINARY with a short EF identifier is not supported (older chips): such a read is
    /// answered with this status word (`6A82`, `6986`, `6A86`, `6D00` or `6E00`). SELECT by file
    /// identifier works.
    public var noShortFileIdentifier: String?
    /// Error status words are answered without secure messaging while it is on (file not found,
    /// end of file, security status not satisfied, wrong length …).
    public var plainErrors: Bool?
    /// With `plainErrors`: whether the chip's send sequence counter counts the unprotected answer
    /// as a response (`true`, default: the next command carries SSC + 2) or not (`false`: SSC + 1).
    public var plainErrorsCountInSSC: Bool?
    /// With `plainErrors`: the chip ends secure messaging after an unprotected answer.
    public var plainErrorsEndSession: Bool?
    /// READ BINARY with Le = 00 (Ne = 256) is answered 6700.
    public var refuseLe00: Bool?
    /// A READ BINARY above the chip's limit (`chip.maxReadLength`) is answered 6Cxx with the limit
    /// instead of the bytes up to the limit.
    public var exactLengthHint: Bool?
    /// A READ BINARY whose Ne the chip cannot answer in full is refused with 6700 (wrong length)
    /// instead of answered with what fits: Ne above `chip.maxReadLength`, or an explicit short Le
    /// whose secure-messaging answer would not fit 256 bytes (E0–FF under AES). ISO 7816-4 makes
    /// Ne a maximum, and most chips answer what fits; some do not.
    public var wrongLengthAboveLimit: Bool?
    /// SELECT with an Le: `refused` (answered 6700 when Le is present) or `required` (6700 when
    /// it is absent).
    public var selectLe: String?
    /// MSE:Set AT for PACE: `required` (6A87 unless the PACE parameter id, tag 84, is sent) or
    /// `refused` (6A80 when it is sent).
    public var paceParameterIdInMSE: String?
    /// SELECT of the master file is answered with this status word (`6A82`, `6A86` or `6D00`).
    public var selectMasterFile: String?
    /// EF.CardAccess exists, but READ BINARY of it is answered 6982.
    public var cardAccessUnreadable: Bool?
    /// DG14 does not repeat EF.CardAccess's PACE SecurityInfos (as some early PACE chips): a
    /// reader cannot check the unsigned EF.CardAccess against signed data.
    public var dg14WithoutCardAccessInfos: Bool?
    /// The card leaves the field after this many APDUs (counted from power-on) …
    public var tagLossAfterAPDUs: Int?
    /// … and comes back after this many milliseconds (default 500; rigs that move the card
    /// themselves ignore it).
    public var tagLossReturnAfterMilliseconds: Int?
    /// With `tagLossAfterAPDUs`: the card leaves right after answering that APDU (its link closes
    /// before the next command), not when the next command arrives.
    public var tagLossAfterAnswer: Bool?
    /// The answer to this APDU (counted from power-on) is broken on the wire (one byte arrives):
    /// a transport failure while the card stays in the field, its state moved on.
    public var brokenAnswerAtAPDU: Int?
    /// Files (identifiers such as `0103`) that SELECT finds but READ BINARY refuses with 6982,
    /// by identifier and by short EF identifier alike: data groups behind Extended Access Control
    /// on a chip opened without Terminal Authentication.
    public var protectedFiles: [String]?
    /// Secure-messaging answers without DO'99': the MAC covers DO'87' only and the status travels
    /// in the plain trailer; error answers come without secure messaging and without a count in
    /// the send sequence counter. As vsmartcard's ePass.
    public var noStatusObject: Bool?
    /// Every answer with data comes as 61xx, its bytes fetched with GET RESPONSE (as T=0 cards
    /// and some readers hand them over), below secure messaging.
    public var getResponseAnswers: Bool?
    /// A READ BINARY that reaches the end of its file is answered 6282 (with the data), whatever
    /// the Le asked for.
    public var endOfFileWarning: Bool?
    /// After a wrong access key (a failed BAC EXTERNAL AUTHENTICATE or PACE token), the next
    /// attempt's first command (GET CHALLENGE, MSE:Set AT) is answered this many milliseconds late,
    /// doubling with each further wrong key up to eight times, until a key opens the chip — across
    /// resets, as passports that slow down brute force do (issue 50: the photo's key candidates
    /// meet it in the field).
    public var slowAfterWrongKey: Int?

    public init() {}

    /// The status word of a `noShortFileIdentifier`, `selectMasterFile` value; throws for anything else.
    static func statusWord(_ text: String?, field: String, allowed: [String]) throws(EmulatorError) -> StatusWord? {
        guard let text else { return nil }
        let normalised = text.uppercased().replacingOccurrences(of: " ", with: "")
        guard allowed.contains(normalised), let bytes = bytes(hex: normalised), bytes.count == 2 else {
            throw EmulatorError("quirks.\(field) must be one of \(allowed.joined(separator: ", ")), not '\(text)'")
        }
        return StatusWord(sw1: bytes[0], sw2: bytes[1])
    }

    /// Checks every switch; throws an `EmulatorError` naming the first bad one.
    public func validate() throws(EmulatorError) {
        _ = try resolved()
    }

    /// The quirks checked and decoded for the chip.
    func resolved() throws(EmulatorError) -> Resolved {
        var resolved = Resolved()
        resolved.noShortFileIdentifier = try Self.statusWord(noShortFileIdentifier, field: "noShortFileIdentifier",
                                                            allowed: ["6A82", "6986", "6A86", "6B00", "6D00", "6E00"])
        resolved.selectMasterFile = try Self.statusWord(selectMasterFile, field: "selectMasterFile", allowed: ["6A82", "6A86", "6D00"])
        resolved.plainErrors = plainErrors ?? false
        resolved.plainErrorsCountInSSC = plainErrorsCountInSSC ?? true
        resolved.plainErrorsEndSession = plainErrorsEndSession ?? false
        resolved.refuseLe00 = refuseLe00 ?? false
        resolved.exactLengthHint = exactLengthHint ?? false
        resolved.wrongLengthAboveLimit = wrongLengthAboveLimit ?? false
        switch selectLe {
        case nil: break
        case "refused": resolved.selectLe = .refused
        case "required": resolved.selectLe = .required
        case let other?: throw EmulatorError("quirks.selectLe must be refused or required, not '\(other)'")
        }
        switch paceParameterIdInMSE {
        case nil: break
        case "required": resolved.paceParameterId = .required
        case "refused": resolved.paceParameterId = .refused
        case let other?: throw EmulatorError("quirks.paceParameterIdInMSE must be required or refused, not '\(other)'")
        }
        resolved.cardAccessUnreadable = cardAccessUnreadable ?? false
        if let after = tagLossAfterAPDUs {
            guard after > 0 else { throw EmulatorError("quirks.tagLossAfterAPDUs must be positive") }
            let back = tagLossReturnAfterMilliseconds ?? 500
            guard (0...600_000).contains(back) else { throw EmulatorError("quirks.tagLossReturnAfterMilliseconds must be 0…600000") }
            resolved.tagLoss = (after, back)
            resolved.tagLossAfterAnswer = tagLossAfterAnswer ?? false
        } else if tagLossAfterAnswer == true {
            throw EmulatorError("quirks.tagLossAfterAnswer goes with quirks.tagLossAfterAPDUs")
        }
        if let at = brokenAnswerAtAPDU {
            guard at > 0 else { throw EmulatorError("quirks.brokenAnswerAtAPDU must be positive") }
            resolved.brokenAnswerAt = at
        }
        for text in protectedFiles ?? [] {
            guard let bytes = bytes(hex: text), bytes.count == 2 else {
                throw EmulatorError("quirks.protectedFiles holds file identifiers such as 0103, not '\(text)'")
            }
            resolved.protectedFiles.insert(UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        }
        resolved.noStatusObject = noStatusObject ?? false
        resolved.getResponseAnswers = getResponseAnswers ?? false
        resolved.endOfFileWarning = endOfFileWarning ?? false
        if let slow = slowAfterWrongKey {
            guard (1...60_000).contains(slow) else { throw EmulatorError("quirks.slowAfterWrongKey must be 1…60000 milliseconds") }
            resolved.slowAfterWrongKey = .milliseconds(slow)
        }
        return resolved
    }

    /// The quirks as the chip applies them.
    struct Resolved: Sendable {
        enum Requirement: Sendable { case refused, required }
        var noShortFileIdentifier: StatusWord?
        var plainErrors = false
        var plainErrorsCountInSSC = true
        var plainErrorsEndSession = false
        var refuseLe00 = false
        var exactLengthHint = false
        var wrongLengthAboveLimit = false
        var selectLe: Requirement?
        var paceParameterId: Requirement?
        var selectMasterFile: StatusWord?
        var cardAccessUnreadable = false
        var tagLoss: (afterAPDUs: Int, returnAfterMilliseconds: Int)?
        var tagLossAfterAnswer = false
        var brokenAnswerAt: Int?
        var protectedFiles: Set<UInt16> = []
        var noStatusObject = false
        var getResponseAnswers = false
        var endOfFileWarning = false
        var slowAfterWrongKey: Duration?
    }

    /// The switches that are on, as `name=value` (for logs and `--help`).
    public var summary: [String] {
        var parts: [String] = []
        if let value = noShortFileIdentifier { parts.append("noShortFileIdentifier=\(value)") }
        if plainErrors == true {
            parts.append("plainErrors" + (plainErrorsCountInSSC == false ? " (not counted in the SSC)" : "")
                + (plainErrorsEndSession == true ? " (ending secure messaging)" : ""))
        }
        if refuseLe00 == true { parts.append("refuseLe00") }
        if exactLengthHint == true { parts.append("exactLengthHint") }
        if wrongLengthAboveLimit == true { parts.append("wrongLengthAboveLimit") }
        if let value = selectLe { parts.append("selectLe=\(value)") }
        if let value = paceParameterIdInMSE { parts.append("paceParameterIdInMSE=\(value)") }
        if let value = selectMasterFile { parts.append("selectMasterFile=\(value)") }
        if cardAccessUnreadable == true { parts.append("cardAccessUnreadable") }
        if dg14WithoutCardAccessInfos == true { parts.append("dg14WithoutCardAccessInfos") }
        if let value = tagLossAfterAPDUs { parts.append("tagLossAfterAPDUs=\(value)" + (tagLossAfterAnswer == true ? " (after answering)" : "")) }
        if let value = brokenAnswerAtAPDU { parts.append("brokenAnswerAtAPDU=\(value)") }
        if let files = protectedFiles, !files.isEmpty { parts.append("protectedFiles=\(files.joined(separator: ","))") }
        if noStatusObject == true { parts.append("noStatusObject") }
        if getResponseAnswers == true { parts.append("getResponseAnswers") }
        if endOfFileWarning == true { parts.append("endOfFileWarning") }
        if let value = slowAfterWrongKey { parts.append("slowAfterWrongKey=\(value) ms") }
        return parts
    }
}
