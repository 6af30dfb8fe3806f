/// An MRZ read from an image, with the two verdicts of issue 32:
///
/// - `accessKeyValid`: the document number, date of birth and date of expiry pass their check
///   digits (and the composite, where the format has one), and each of their characters was read
///   with a margin over every character a check digit could not tell it from — enough to open the
///   chip;
/// - `valid`: beyond that, every character no check digit covers (names, states, sex, fillers,
///   optional data) was read with confidence, and the fields are well formed.
///
/// A `<` read as `K`, or a `6` read as `G`, passes every check digit (their values differ by a
/// multiple of 10): check digits alone cannot earn either verdict.
public struct MRZReading: Sendable, Hashable, Codable {
    public var format: MRZFormat
    public var lines: [String]
    public var valid: Bool
    public var accessKeyValid: Bool
    public var documentCode: String
    public var issuingState: String
    public var documentNumber: String
    /// YYMMDD, as printed.
    public var dateOfBirth: String
    public var dateOfExpiry: String
    public var nationality: String
    public var surname: String
    public var givenNames: String
    public var sex: String
    public var optionalData: String
    /// Each check digit: whether it holds (`documentNumber`, `dateOfBirth`, `dateOfExpiry`,
    /// `optionalData` for TD3, `composite` where the format has one).
    public var checkDigits: [String: Bool]
    /// The lowest probability the classifier gave a character it chose (0…1).
    public var confidence: Double
    /// Characters replaced by their runner-up because a check digit said so (within the budget).
    public var corrections: Int

    /// The MRZ text, lines separated by line feeds (what `nfc.read`'s `{mrz}` takes).
    public var text: String { lines.joined(separator: "\n") }
}

extension MRZReading {
    /// The access key's fields (number, birth, expiry), as `MRZKeyCandidate.key` holds them.
    package var key: [String] { [documentNumber, dateOfBirth, dateOfExpiry] }
}
