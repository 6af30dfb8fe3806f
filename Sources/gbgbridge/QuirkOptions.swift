import ArgumentParser
import MRTDEmulator

/// `gbgbridge emulate`'s switches for field behaviours (`ChipQuirks`): each one reproduces what
/// readers report from real documents, so a rig can put a field problem in front of a reader.
/// They add to (and override) the `quirks` of a passport description.
struct QuirkOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Refuse READ BINARY with a short EF identifier, answering this status word (6A82, 6986, 6A86, 6B00, 6D00 or 6E00); SELECT by file identifier works.", valueName: "sw"))
    var noShortFileIdentifier: String?

    @Flag(name: .long, help: "Answer error status words (6A82, 6982, 6282, 6700 …) without secure messaging while it is on.")
    var plainErrors = false

    @Flag(name: .long, help: "With --plain-errors: the chip's send sequence counter does not count the unprotected answer.")
    var plainErrorsNotCountedInSsc = false

    @Flag(name: .long, help: "With --plain-errors: the chip ends secure messaging after an unprotected answer.")
    var plainErrorsEndSession = false

    @Flag(name: .customLong("refuse-le00"), help: "Answer READ BINARY with Le = 00 (256 bytes) with 6700.")
    var refuseLe00 = false

    @Flag(name: .long, help: "Answer a READ BINARY above --max-read-length with 6Cxx (the limit) instead of the bytes up to the limit.")
    var exactLengthHint = false

    @Flag(name: .long, help: "Refuse with 6700 a READ BINARY whose Ne cannot be answered in full (above --max-read-length, or a short Le whose secure-messaging answer exceeds 256 bytes) instead of answering what fits.")
    var wrongLengthAboveLimit = false

    @Option(name: .long, help: ArgumentHelp("SELECT with an Le: 'refused' (6700 when present) or 'required' (6700 when absent).", valueName: "refused|required"))
    var selectLe: String?

    @Option(name: .customLong("pace-parameter-id-in-mse"), help: ArgumentHelp("MSE:Set AT for PACE: 'required' (6A87 without the parameter id, tag 84) or 'refused' (6A80 with it).", valueName: "required|refused"))
    var paceParameterIdInMSE: String?

    @Option(name: .long, help: ArgumentHelp("Answer SELECT of the master file with this status word (6A82, 6A86 or 6D00).", valueName: "sw"))
    var selectMasterFile: String?

    @Flag(name: .long, help: "EF.CardAccess exists but READ BINARY of it is answered 6982.")
    var cardAccessUnreadable = false

    @Flag(name: .customLong("dg14-without-card-access-infos"), help: "DG14 does not repeat EF.CardAccess's PACE infos (as some early PACE chips).")
    var dg14WithoutCardAccessInfos = false

    @Option(name: .customLong("tag-loss-after-apdus"), help: ArgumentHelp("The card leaves the field after this many APDUs from power-on (once) …", valueName: "n"))
    var tagLossAfterAPDUs: Int?

    @Option(name: .customLong("tag-loss-return-after-ms"), help: ArgumentHelp("… and comes back after this many milliseconds (default 500).", valueName: "ms"))
    var tagLossReturnAfterMilliseconds: Int?

    @Flag(name: .customLong("tag-loss-after-answer"), help: "With --tag-loss-after-apdus: the card leaves right after answering that APDU (its link closes before the next command).")
    var tagLossAfterAnswer = false

    @Option(name: .customLong("broken-answer-at-apdu"), help: ArgumentHelp("The answer to this APDU (from power-on) arrives broken, one byte (once): a transport failure while the card stays in the field.", valueName: "n"))
    var brokenAnswerAtAPDU: Int?

    @Option(name: .customLong("protected-file"), help: ArgumentHelp("SELECT finds this file but READ BINARY answers 6982 (a data group behind Extended Access Control), e.g. 0103; repeatable.", valueName: "fid"))
    var protectedFiles: [String] = []

    @Flag(name: .long, help: "Secure-messaging answers without DO'99' (the MAC over DO'87' only, the status in the plain trailer; errors unprotected and not counted), as vsmartcard's ePass.")
    var noStatusObject = false

    @Flag(name: .long, help: "Every answer with data comes as 61xx, fetched with GET RESPONSE.")
    var getResponseAnswers = false

    @Flag(name: .long, help: "Answer a READ BINARY that reaches the end of its file with 6282 (and the data).")
    var endOfFileWarning = false

    @Option(name: .customLong("slow-after-wrong-key"), help: ArgumentHelp("After a wrong MRZ or CAN, answer the next attempt's first command this many milliseconds late (doubling with each wrong key, up to 8×), until a key opens the chip.", valueName: "ms"))
    var slowAfterWrongKey: Int?

    /// `base` with the switches given on the command line turned on.
    func applied(to base: ChipQuirks?) -> ChipQuirks {
        var quirks = base ?? ChipQuirks()
        if let noShortFileIdentifier { quirks.noShortFileIdentifier = noShortFileIdentifier }
        if plainErrors { quirks.plainErrors = true }
        if plainErrorsNotCountedInSsc { quirks.plainErrorsCountInSSC = false }
        if plainErrorsEndSession { quirks.plainErrorsEndSession = true }
        if refuseLe00 { quirks.refuseLe00 = true }
        if exactLengthHint { quirks.exactLengthHint = true }
        if wrongLengthAboveLimit { quirks.wrongLengthAboveLimit = true }
        if let selectLe { quirks.selectLe = selectLe }
        if let paceParameterIdInMSE { quirks.paceParameterIdInMSE = paceParameterIdInMSE }
        if let selectMasterFile { quirks.selectMasterFile = selectMasterFile }
        if cardAccessUnreadable { quirks.cardAccessUnreadable = true }
        if dg14WithoutCardAccessInfos { quirks.dg14WithoutCardAccessInfos = true }
        if let tagLossAfterAPDUs { quirks.tagLossAfterAPDUs = tagLossAfterAPDUs }
        if let tagLossReturnAfterMilliseconds { quirks.tagLossReturnAfterMilliseconds = tagLossReturnAfterMilliseconds }
        if tagLossAfterAnswer { quirks.tagLossAfterAnswer = true }
        if let brokenAnswerAtAPDU { quirks.brokenAnswerAtAPDU = brokenAnswerAtAPDU }
        if !protectedFiles.isEmpty { quirks.protectedFiles = (quirks.protectedFiles ?? []) + protectedFiles }
        if noStatusObject { quirks.noStatusObject = true }
        if getResponseAnswers { quirks.getResponseAnswers = true }
        if endOfFileWarning { quirks.endOfFileWarning = true }
        if let slowAfterWrongKey { quirks.slowAfterWrongKey = slowAfterWrongKey }
        return quirks
    }

    func validate() throws {
        if (plainErrorsNotCountedInSsc || plainErrorsEndSession) && !plainErrors {
            throw ValidationError("--plain-errors-not-counted-in-ssc and --plain-errors-end-session go with --plain-errors")
        }
        if tagLossReturnAfterMilliseconds != nil && tagLossAfterAPDUs == nil {
            throw ValidationError("--tag-loss-return-after-ms goes with --tag-loss-after-apdus")
        }
        do {
            try applied(to: nil).validate()
        } catch {
            // The emulator's message names the description field; say the flag instead.
            throw ValidationError(Self.flagNames(error.reason))
        }
    }

    static func flagNames(_ message: String) -> String {
        let names = ["quirks.noShortFileIdentifier": "--no-short-file-identifier", "quirks.selectMasterFile": "--select-master-file",
                     "quirks.selectLe": "--select-le", "quirks.paceParameterIdInMSE": "--pace-parameter-id-in-mse",
                     "quirks.tagLossAfterAPDUs": "--tag-loss-after-apdus",
                     "quirks.tagLossReturnAfterMilliseconds": "--tag-loss-return-after-ms",
                     "quirks.tagLossAfterAnswer": "--tag-loss-after-answer", "quirks.brokenAnswerAtAPDU": "--broken-answer-at-apdu",
                     "quirks.protectedFiles": "--protected-file"]
        return names.reduce(message) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
    }
}
