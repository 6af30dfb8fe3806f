/// Base64 text (line breaks and spaces skipped) to bytes, and to little-endian Float32 values: how
/// `GlyphModel.swift` keeps the classifier's weights and `OCRBGlyphs.swift` its glyphs (a literal
/// of tens of thousands of numbers would take the compiler minutes).
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

    static func decode(_ text: String) -> [Float] {
        let bytes = bytes(text)
        var floats: [Float] = []
        floats.reserveCapacity(bytes.count / 4)
        var index = 0
        while index + 3 < bytes.count {
            let b0 = UInt32(bytes[index]), b1 = UInt32(bytes[index + 1]) << 8
            let b2 = UInt32(bytes[index + 2]) << 16, b3 = UInt32(bytes[index + 3]) << 24
            floats.append(Float(bitPattern: b0 | b1 | b2 | b3))
            index += 4
        }
        return floats
    }
}
