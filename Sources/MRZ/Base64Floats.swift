/// Base64 text (line breaks and spaces skipped) to bytes: how `OCRBGlyphs.swift` keeps its glyphs
/// (a literal of tens of thousands of numbers would take the compiler minutes).
enum Base64Floats {
    static func bytes(_ text: String) -> [UInt8] {
        var table = [Int8](repeating: -1, count: 256)
        for (value, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = Int8(value)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3 / 4)
        var buffer: UInt32 = 0, bits = 0
        for character in text.utf8 {
            let value = table[Int(character)]
            guard value >= 0 else { continue }  // '=', line breaks, spaces
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((buffer >> UInt32(bits)) & 0xFF))
            }
        }
        return bytes
    }
}
