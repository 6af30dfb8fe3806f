import Foundation
import MRTD
import MRTDEmulator

/// One field behaviour (`../shared/field-profiles.md`) as emulator switches: the catalogue the
/// quirk tests and the bench share.
public struct Quirk: CustomStringConvertible, Sendable {
    public let name: String
    /// Data groups to ask for (some quirks only show on a file that is not there).
    public var dataGroups: [Int]? = nil
    public var maxReadLength: Int? = nil
    public var extendedLength: Bool? = nil
    /// Whether PACE is expected to open a chip that offers it.
    public var paceWorks = true
    public let apply: @Sendable (inout ChipQuirks) -> Void

    public var description: String { name }

    public init(name: String, dataGroups: [Int]? = nil, maxReadLength: Int? = nil, extendedLength: Bool? = nil, paceWorks: Bool = true,
                apply: @escaping @Sendable (inout ChipQuirks) -> Void) {
        self.name = name
        self.dataGroups = dataGroups
        self.maxReadLength = maxReadLength
        self.extendedLength = extendedLength
        self.paceWorks = paceWorks
        self.apply = apply
    }

    /// DG5 is listed in no fixture: asking for it makes the chip answer "not found" between reads.
    public static let withAbsentFile = [1, 2, 5, 11, 12]

    public static let all: [Quirk] = [
        Quirk(name: "no SFI (6A82)") { $0.noShortFileIdentifier = "6A82" },
        Quirk(name: "no SFI (6986)") { $0.noShortFileIdentifier = "6986" },
        Quirk(name: "no SFI (6A86)") { $0.noShortFileIdentifier = "6A86" },
        Quirk(name: "no SFI (6D00)") { $0.noShortFileIdentifier = "6D00" },
        Quirk(name: "no SFI (6E00)") { $0.noShortFileIdentifier = "6E00" },
        Quirk(name: "plain errors, counted in the SSC", dataGroups: withAbsentFile) { $0.plainErrors = true },
        Quirk(name: "plain errors, not counted in the SSC", dataGroups: withAbsentFile) {
            $0.plainErrors = true
            $0.plainErrorsCountInSSC = false
        },
        Quirk(name: "plain errors ending secure messaging", dataGroups: withAbsentFile) {
            $0.plainErrors = true
            $0.plainErrorsEndSession = true
        },
        Quirk(name: "Le = 00 refused", extendedLength: false) { $0.refuseLe00 = true },
        Quirk(name: "READ BINARY limit A0 (6700)", maxReadLength: 0xA0, extendedLength: false) { $0.wrongLengthAboveLimit = true },
        Quirk(name: "READ BINARY limit A0 (6CA0)", maxReadLength: 0xA0, extendedLength: false) { $0.exactLengthHint = true },
        Quirk(name: "SELECT refuses Le") { $0.selectLe = "refused" },
        Quirk(name: "SELECT requires Le") { $0.selectLe = "required" },
        Quirk(name: "SELECT requires Le, no SFI") {
            $0.selectLe = "required"
            $0.noShortFileIdentifier = "6A86"
        },
        Quirk(name: "MSE:Set AT requires the parameter id") { $0.paceParameterIdInMSE = "required" },
        Quirk(name: "MSE:Set AT refuses the parameter id") { $0.paceParameterIdInMSE = "refused" },
        Quirk(name: "SELECT MF answered 6A82") { $0.selectMasterFile = "6A82" },
        Quirk(name: "SELECT MF answered 6D00") { $0.selectMasterFile = "6D00" },
        Quirk(name: "EF.CardAccess unreadable", paceWorks: false) { $0.cardAccessUnreadable = true },
        Quirk(name: "all but SELECT MF", dataGroups: withAbsentFile, maxReadLength: 0xA0, extendedLength: false, apply: allButSelectMF),
        Quirk(name: "everything at once", dataGroups: withAbsentFile, maxReadLength: 0xA0, extendedLength: false) {
            allButSelectMF(&$0)
            $0.selectMasterFile = "6A86"
        },
    ]

    /// Every quirk that can be combined with the others (SELECT of the MF refused aside).
    public static let allButSelectMF: @Sendable (inout ChipQuirks) -> Void = {
        $0.noShortFileIdentifier = "6A82"
        $0.plainErrors = true
        $0.plainErrorsCountInSSC = false
        $0.refuseLe00 = true
        $0.exactLengthHint = true
        $0.selectLe = "required"
        $0.paceParameterIdInMSE = "required"
    }

    /// The fixture's key: its CAN where PACE is expected to work, else its MRZ (BAC is the way out).
    public func accessKey(_ name: String) throws -> AccessKey {
        paceWorks ? try TestFixtures.accessKey(name) : try AccessKey.mrz(try TestFixtures.description(name).mrz.lines.joined(separator: "\n"))
    }

    /// The description of fixture `name` with this quirk's switches (and a tag loss, when given).
    public func description(_ name: String, tagLoss: (afterAPDUs: Int, returnAfterMilliseconds: Int)? = nil) throws -> PassportDescription {
        var description = try TestFixtures.description(name)
        if maxReadLength != nil || extendedLength != nil {
            var settings = description.chip ?? .init()
            if let maxReadLength { settings.maxReadLength = maxReadLength }
            if let extendedLength { settings.extendedLength = extendedLength }
            description.chip = settings
        }
        var quirks = ChipQuirks()
        apply(&quirks)
        if let tagLoss {
            quirks.tagLossAfterAPDUs = tagLoss.afterAPDUs
            quirks.tagLossReturnAfterMilliseconds = tagLoss.returnAfterMilliseconds
        }
        description.quirks = quirks
        return description
    }

    /// A chip of fixture `name` with this quirk's switches (and a tag loss, when given).
    public func chip(_ name: String, tagLoss: (afterAPDUs: Int, returnAfterMilliseconds: Int)? = nil) throws -> VirtualPassportChip {
        let passport = try EmulatedPassport(description: try description(name, tagLoss: tagLoss), baseDirectory: TestFixtures.url("passports"),
                                            signer: try TestFixtures.documentSigner())
        return VirtualPassportChip(passport: passport)
    }

    /// No quirk at all.
    public static let none = Quirk(name: "no quirk") { _ in }
}
