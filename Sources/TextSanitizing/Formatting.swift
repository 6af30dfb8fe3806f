/// The few fixed formats the read path prints, without Foundation's `String(format:)` (the modules
/// a chip read runs through import FoundationEssentials only, which has none).
public enum Formatting {
    private static let digits = Array("0123456789ABCDEF".utf8)

    /// Upper-case hex, two digits a byte: `[0x6A, 0x82]` → `"6A82"`.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` in upper-case hex, zero-padded to at least `width` digits (`%0*X`).
    public static func hex(_ value: some BinaryInteger, width: Int) -> String {
        padded(String(value, radix: 16, uppercase: true), to: width, with: "0")
    }

    /// `value` in decimal, zero-padded to at least `width` digits after the sign (`%0*d`).
    public static func decimal(_ value: some BinaryInteger, width: Int) -> String {
        let magnitude = String(value.magnitude)
        return (value < 0 ? "-" : "") + padded(magnitude, to: width, with: "0")
    }

    /// `value` rounded half away from zero to `places` decimals (`%.*f`); NaN and infinities as
    /// `nan`, `inf` and `-inf`, as printf writes them.
    public static func fixed(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        let places = max(0, min(places, 15))
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e18 else { return String(value) }
        let whole = UInt64(scaled)
        let unit = UInt64(scale)
        var text = String(whole / unit)
        if places > 0 { text += "." + padded(String(whole % unit), to: places, with: "0") }
        return (value < 0 && whole > 0 ? "-" : "") + text
    }

    /// `text` padded on the left (`leading`, as `%*s`) or the right (`%-*s`) to `width` characters.
    public static func padded(_ text: String, to width: Int, with pad: Character = " ", leading: Bool = true) -> String {
        let missing = width - text.count
        guard missing > 0 else { return text }
        let fill = String(repeating: pad, count: missing)
        return leading ? fill + text : text + fill
    }
}
