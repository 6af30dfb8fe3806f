/// How large each file of the LDS may be before a reader refuses it unread: a chip is untrusted
/// input, and a header may claim anything (0x7FFFFFFF bytes, or an indefinite length) while the
/// chip answers every offset. The ceilings come from ICAO 9303-10's structures and what real
/// documents carry, with room (Docs/hostile-input.md, "File ceilings"):
///
/// | file | ceiling | what real documents hold |
/// |---|---|---|
/// | EF.COM, DG1, EF.ATR/INFO, EF.CVCA, EF.DIR | 1 KiB | a tag list, the MRZ (≤ 93 bytes), 2 CARs, 4 application templates (44 bytes) |
/// | EF.CardAccess | 16 KiB | SecurityInfos, explicit domain parameters at most |
/// | EF.SOD, EF.CardSecurity | 64 KiB | a CMS signature with one or two certificates (2–6 KiB) |
/// | DG2 (face) | 4 MiB | one or two JPEG / JPEG 2000 faces (15–100 KiB) |
/// | DG3 (fingers), DG4 (irises) | 4 MiB | up to 10 WSQ fingers or raw irises |
/// | DG5–DG7 (displayed portrait, reserved, signature) | 1 MiB | one image each |
/// | DG8–DG10 (features) | 64 KiB | rarely present |
/// | DG11, DG13, DG16 (text) | 64 KiB | names, addresses, persons to notify; an optional image |
/// | DG12 (document details) | 256 KiB | text, optionally the document's front and back images |
/// | DG14, DG15 (keys) | 64 KiB | SecurityInfos and one public key (≤ 2 KiB) |
extension LDSFile {
    package static let kibibyte = 1_024
    package static let mebibyte = 1_048_576

    /// The most bytes this file may have, header included.
    package var sizeCeiling: Int {
        switch self {
        case .com, .atrInfo, .cvca, .directory: return Self.kibibyte
        case .cardAccess: return 16 * Self.kibibyte
        case .sod, .cardSecurity: return 64 * Self.kibibyte
        case .dataGroup(let number):
            switch number {
            case 1: return Self.kibibyte
            case 2, 3, 4: return 4 * Self.mebibyte
            case 5, 6, 7: return Self.mebibyte
            case 12: return 256 * Self.kibibyte
            default: return 64 * Self.kibibyte
            }
        }
    }
}
