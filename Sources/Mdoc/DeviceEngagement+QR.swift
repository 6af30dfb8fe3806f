extension DeviceEngagement {
    /// The most characters a QR engagement's text may have: a QR code holds 2,953 bytes.
    public static let maximumQRText = 2_953

    /// A holder's QR engagement (ISO 18013-5 §8.2.2.3): the URI `mdoc:` followed by the
    /// DeviceEngagement in base64url without padding — the text of the QR code, or what a hand
    /// scanner typed of it. The scheme is matched without regard to case (RFC 3986 §3.1), one
    /// trailing line end (a scanner's) is dropped and `=` padding is tolerated; anything else —
    /// another scheme, characters outside base64url, a DeviceEngagement that does not parse — is
    /// refused (`MDOC_ENGAGEMENT`, or the DeviceEngagement's own code), without echoing the text.
    public init(qrCode bytes: [UInt8]) throws(MdocError) {
        guard bytes.count <= Self.maximumQRText + 2 else {
            throw MdocError(.limitExceeded, "the QR code holds \(bytes.count) bytes; an engagement is at most \(Self.maximumQRText)")
        }
        var text = bytes[...]
        while let last = text.last, last == 0x0A || last == 0x0D { text = text.dropLast() }
        guard text.count > Self.qrScheme.count, Self.hasQRScheme(text) else {
            throw MdocError(.engagement, "the QR code is not an mdoc engagement (its text does not begin \"mdoc:\")")
        }
        var payload = Array(text.dropFirst(Self.qrScheme.count))
        while payload.last == UInt8(ascii: "=") { payload.removeLast() }
        guard let decoded = Self.base64URLDecoded(payload) else {
            throw MdocError(.engagement, "the QR code's engagement is not base64url (ISO 18013-5 §8.2.2.3)")
        }
        do {
            try self.init(bytes: decoded)
        } catch {
            throw MdocError(error.code, "the QR code's engagement: \(error.reason)")
        }
    }

    static let qrScheme = Array("mdoc:".utf8)

    /// Whether a QR code's text begins with the `mdoc:` scheme, in any case (RFC 3986 §3.1): a
    /// code that claims to be an engagement, whether or not the rest parses.
    public static func hasQRScheme(_ text: some Collection<UInt8>) -> Bool {
        text.count >= qrScheme.count && zip(text.prefix(qrScheme.count), qrScheme).allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 0x20 == $1 : $0 == $1
        }
    }

    /// The text of the QR code a holder shows for this engagement: `mdoc:` and its bytes in
    /// base64url without padding (§8.2.2.3).
    public var qrCode: String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out = Self.qrScheme
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for byte in chunk { value = value << 8 | UInt32(byte) }
            value <<= UInt32(8 * (3 - chunk.count))
            for position in 0...chunk.count { out.append(alphabet[Int(value >> UInt32(18 - 6 * position) & 0x3F)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Base64url (RFC 4648 §5) without padding; nil for any other character or an impossible length.
    static func base64URLDecoded(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        func value(_ character: UInt8) -> UInt32? {
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): return 62
            case UInt8(ascii: "_"): return 63
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            guard let sextet = value(character) else { return nil }
            accumulator = accumulator << 6 | sextet
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // The bits left over must be zero (a canonical encoding).
        guard accumulator == 0 else { return nil }
        return out
    }
}
