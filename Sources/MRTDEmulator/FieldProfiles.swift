/// The chip configurations of real documents (`../shared/field-profiles.md`), one passport
/// description each in `Fixtures/passports/field/NAME.json`: access control, curves, ciphers,
/// CA / PACE-CAM / AA, extended length and LDS version as reported from the field, with test
/// data signed by the test PKI. `gbgbridge emulate --profile NAME` serves one.
public enum FieldProfiles {
    /// Profile names (file stems) and the document each models.
    public static let all: [(name: String, document: String)] = [
        ("at-passport-2023", "AT passport 2023"),
        ("au-passport-2016", "AU passport 2016"),
        ("ca-passport-2023", "CA passport 2023"),
        ("cn-passport-2018", "CN passport 2018"),
        ("de-passport-2023", "DE passport 2023"),
        ("fi-idcard-2023", "FI ID card 2023"),
        ("fi-passport-2024", "FI passport 2024"),
        ("fr-idcard-2024", "FR ID card 2024"),
        ("fr-passport-2017", "FR passport 2017"),
        ("hk-passport-2025", "HK passport 2025"),
        ("id-passport-2025", "ID passport 2025"),
        ("my-passport-2023", "MY passport 2023"),
        ("nl-passport-2025", "NL passport 2025"),
        ("nz-passport-2017", "NZ passport 2017"),
        ("ph-passport-2020", "PH passport 2020"),
        ("pt-passport-2026", "PT passport 2026"),
        ("ru-passport-2020", "RU passport 2020"),
        ("sg-passport-2023", "SG passport 2023"),
        ("sg-passport-2025", "SG passport 2025"),
        ("tw-passport-2024", "TW passport 2024"),
        ("uk-passport-2021", "UK passport 2021"),
        ("us-passport-2021", "US passport 2021"),
    ]

    /// Where the descriptions live, relative to `Fixtures/`.
    public static let directory = "passports/field"

    public static var names: [String] { all.map(\.name) }
}
