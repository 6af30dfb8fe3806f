/// The format and pixel size of an encoded image, read from its headers without decoding it.
public struct ImageInfo: Sendable, Hashable {
    public enum Format: String, Sendable, Hashable, Codable {
        case jpeg
        /// A JP2 file (boxes) or a raw JPEG 2000 codestream.
        case jpeg2000
        case png
        /// WSQ fingerprint images and anything else.
        case other

        public var mimeType: String {
            switch self {
            case .jpeg: return "image/jpeg"
            case .jpeg2000: return "image/jp2"
            case .png: return "image/png"
            case .other: return "application/octet-stream"
            }
        }
    }

    public var format: Format
    public var width: Int
    public var height: Int

    /// Inspects `bytes`; `nil` when the format is unknown or the header is damaged.
    public static func inspect(_ bytes: [UInt8]) -> ImageInfo? {
        if bytes.starts(with: [0xFF, 0xD8]) { return jpeg(bytes) }
        if bytes.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]) { return jp2(bytes) }
        if bytes.starts(with: [0xFF, 0x4F, 0xFF, 0x51]) { return codestream(bytes, at: 0) }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), bytes.count >= 24 {
            return ImageInfo(format: .png, width: be32(bytes, 16), height: be32(bytes, 20))
        }
        return nil
    }

    static func be16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    static func be32(_ b: [UInt8], _ i: Int) -> Int {
        Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3])
    }

    static func jpeg(_ b: [UInt8]) -> ImageInfo? {
        var i = 2
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { return nil }
            let marker = b[i + 1]
            if marker == 0xFF { i += 1; continue }  // fill bytes
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }
            let length = be16(b, i + 2)
            guard length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard i + 9 <= b.count else { return nil }
                let height = be16(b, i + 5), width = be16(b, i + 7)
                guard width > 0, height > 0 else { return nil }
                return ImageInfo(format: .jpeg, width: width, height: height)
            }
            if marker == 0xDA { return nil }  // scan before frame header
            i += 2 + length
        }
        return nil
    }

    static func jp2(_ b: [UInt8]) -> ImageInfo? {
        // Walk the top-level boxes to jp2h, then its ihdr.
        func boxes(_ start: Int, _ end: Int, _ visit: (String, Int, Int) -> ImageInfo?) -> ImageInfo? {
            var i = start
            while i + 8 <= end {
                var length = be32(b, i)
                let type = String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self)
                var header = 8
                if length == 1 {
                    guard i + 16 <= end else { return nil }
                    length = be32(b, i + 12)  // 64-bit length; upper half ignored for sane images
                    header = 16
                } else if length == 0 {
                    length = end - i
                }
                guard length >= header, i + length <= end else { return nil }
                if let found = visit(type, i + header, i + length) { return found }
                i += length
            }
            return nil
        }
        return boxes(0, b.count) { type, start, end in
            if type == "jp2h" {
                return boxes(start, end) { inner, s, e in
                    guard inner == "ihdr", e - s >= 8 else { return nil }
                    return ImageInfo(format: .jpeg2000, width: be32(b, s + 4), height: be32(b, s))
                }
            }
            if type == "jp2c" { return codestream(b, at: start) }
            return nil
        }
    }

    static func codestream(_ b: [UInt8], at i: Int) -> ImageInfo? {
        // SOC FF4F, SIZ FF51: Lsiz(2) Rsiz(2) Xsiz(4) Ysiz(4) XOsiz(4) YOsiz(4)
        guard i + 4 + 2 + 2 + 16 <= b.count, b[i] == 0xFF, b[i + 1] == 0x4F, b[i + 2] == 0xFF, b[i + 3] == 0x51 else {
            return nil
        }
        let x = be32(b, i + 8), y = be32(b, i + 12), xo = be32(b, i + 16), yo = be32(b, i + 20)
        guard x > xo, y > yo else { return nil }
        return ImageInfo(format: .jpeg2000, width: x - xo, height: y - yo)
    }
}
