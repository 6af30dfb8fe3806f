/// An ISO 7816-4 command APDU: header, optional command data (Nc bytes) and optional expected
/// response length (Ne), in short or extended form.
public struct CommandAPDU: Sendable, Hashable, CustomStringConvertible {
    public var cla: UInt8
    public var ins: UInt8
    public var p1: UInt8
    public var p2: UInt8
    public var data: [UInt8]
    /// Expected response length Ne: `nil` for none, 1...256 fits a short Le (256 = `00`),
    /// up to 65536 needs extended length (65536 = `0000`).
    public var ne: Int?
    /// Encode in extended form even when short form would do.
    public var forceExtended: Bool

    public static let maxShortNe = 256
    public static let maxExtendedNe = 65_536

    public init(cla: UInt8 = 0x00, ins: UInt8, p1: UInt8, p2: UInt8, data: [UInt8] = [], ne: Int? = nil,
                forceExtended: Bool = false) {
        self.cla = cla
        self.ins = ins
        self.p1 = p1
        self.p2 = p2
        self.data = data
        self.ne = ne
        self.forceExtended = forceExtended
    }

    /// Whether the encoding uses extended length fields.
    public var isExtended: Bool {
        forceExtended || data.count > 255 || (ne ?? 0) > CommandAPDU.maxShortNe
    }

    /// The ISO 7816-4 case: 1 (header only), 2 (Le), 3 (Lc + data), 4 (Lc + data + Le).
    public var isoCase: Int {
        switch (data.isEmpty, ne == nil) {
        case (true, true): return 1
        case (true, false): return 2
        case (false, true): return 3
        case (false, false): return 4
        }
    }

    /// The bytes sent to the card.
    public func encoded() throws(SmartCardError) -> [UInt8] {
        guard data.count <= 65_535 else {
            throw SmartCardError(.invalidAPDU, "command data of \(data.count) bytes exceeds 65535")
        }
        if let ne, !(1...CommandAPDU.maxExtendedNe).contains(ne) {
            throw SmartCardError(.invalidAPDU, "expected length \(ne) is outside 1...65536")
        }
        var bytes: [UInt8] = [cla, ins, p1, p2]
        bytes.reserveCapacity(4 + data.count + 5)
        if !isExtended {
            if !data.isEmpty {
                bytes.append(UInt8(data.count))
                bytes += data
            }
            if let ne { bytes.append(UInt8(truncatingIfNeeded: ne == 256 ? 0 : ne)) }
        } else {
            if !data.isEmpty {
                bytes += [0x00, UInt8(data.count >> 8), UInt8(data.count & 0xFF)]
                bytes += data
            }
            if let ne {
                let value = ne == 65_536 ? 0 : ne
                // Case 2E carries a leading 00; in case 4E the Lc field already started with it.
                if data.isEmpty { bytes.append(0x00) }
                bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
        }
        return bytes
    }

    /// Parses a command as a card receives it, in any of the cases 1, 2S, 3S, 4S, 2E, 3E, 4E.
    public init(bytes: [UInt8]) throws(SmartCardError) {
        guard bytes.count >= 4 else {
            throw SmartCardError(.invalidAPDU, "a command APDU needs at least 4 bytes, got \(bytes.count)")
        }
        cla = bytes[0]; ins = bytes[1]; p1 = bytes[2]; p2 = bytes[3]
        data = []
        ne = nil
        forceExtended = false
        let body = Array(bytes[4...])
        switch body.count {
        case 0:
            return  // case 1
        case 1:
            ne = body[0] == 0 ? 256 : Int(body[0])  // case 2S
            return
        default:
            break
        }
        if body[0] != 0 {
            // Short form: Lc (1..255) + data [+ Le].
            let lc = Int(body[0])
            if body.count == 1 + lc {
                data = Array(body[1...])  // case 3S
            } else if body.count == 2 + lc {
                data = Array(body[1...lc])  // case 4S
                ne = body[lc + 1] == 0 ? 256 : Int(body[lc + 1])
            } else {
                throw SmartCardError(.invalidAPDU, "Lc \(lc) does not match a body of \(body.count) bytes")
            }
            return
        }
        // Extended form: first body byte is 00.
        forceExtended = true
        if body.count == 3 {
            let le = Int(body[1]) << 8 | Int(body[2])
            ne = le == 0 ? 65_536 : le  // case 2E
            return
        }
        guard body.count >= 3 else {
            throw SmartCardError(.invalidAPDU, "truncated extended length field")
        }
        let lc = Int(body[1]) << 8 | Int(body[2])
        guard lc > 0 else { throw SmartCardError(.invalidAPDU, "extended Lc of 0") }
        if body.count == 3 + lc {
            data = Array(body[3...])  // case 3E
        } else if body.count == 5 + lc {
            data = Array(body[3..<(3 + lc)])  // case 4E
            let le = Int(body[3 + lc]) << 8 | Int(body[4 + lc])
            ne = le == 0 ? 65_536 : le
        } else {
            throw SmartCardError(.invalidAPDU, "extended Lc \(lc) does not match a body of \(body.count) bytes")
        }
    }

    public var description: String {
        var text = "C-APDU \(hex([cla, ins, p1, p2]))"
        if !data.isEmpty { text += " Lc=\(data.count)" }
        if let ne { text += " Ne=\(ne)" }
        return text + (isExtended ? " (extended)" : "")
    }

    /// SELECT by DF name (application identifier), P2 = 0C (no response data) by default.
    public static func selectApplication(_ aid: [UInt8], p2: UInt8 = 0x0C) -> CommandAPDU {
        CommandAPDU(ins: 0xA4, p1: 0x04, p2: p2, data: aid, ne: p2 == 0x0C ? nil : 256)
    }

    /// SELECT an elementary file by file identifier under the current DF.
    public static func selectFile(_ fid: UInt16, p1: UInt8 = 0x02, p2: UInt8 = 0x0C) -> CommandAPDU {
        CommandAPDU(ins: 0xA4, p1: p1, p2: p2, data: [UInt8(fid >> 8), UInt8(fid & 0xFF)],
                    ne: p2 == 0x0C ? nil : 256)
    }

    /// READ BINARY of `length` bytes at `offset` (INS B0 up to offset 32767; INS B1 with an
    /// offset data object beyond that).
    public static func readBinary(offset: Int, length: Int) -> CommandAPDU {
        if offset <= 0x7FFF {
            return CommandAPDU(ins: 0xB0, p1: UInt8(offset >> 8), p2: UInt8(offset & 0xFF), ne: length)
        }
        return CommandAPDU(ins: 0xB1, p1: 0x00, p2: 0x00, data: BERTLV.encode(tag: 0x54, value: offsetBytes(offset)),
                           ne: length)
    }

    /// READ BINARY with a short EF identifier (selects the file and reads from `offset` ≤ 255).
    public static func readBinary(sfi: UInt8, offset: UInt8, length: Int) -> CommandAPDU {
        CommandAPDU(ins: 0xB0, p1: 0x80 | (sfi & 0x1F), p2: offset, ne: length)
    }

    /// GET CHALLENGE for `length` random bytes.
    public static func getChallenge(length: Int = 8) -> CommandAPDU {
        CommandAPDU(ins: 0x84, p1: 0, p2: 0, ne: length)
    }

    static func offsetBytes(_ offset: Int) -> [UInt8] { minimalBigEndian(UInt64(offset)) }
}

/// A response APDU: the data the card returned and its status word.
public struct ResponseAPDU: Sendable, Hashable, CustomStringConvertible {
    public var data: [UInt8]
    public var statusWord: StatusWord

    public init(data: [UInt8] = [], statusWord: StatusWord) {
        self.data = data
        self.statusWord = statusWord
    }

    /// Splits the bytes a card returned into data and status word.
    public init(bytes: [UInt8]) throws(SmartCardError) {
        guard bytes.count >= 2 else {
            throw SmartCardError(.invalidResponse, "a response needs a 2-byte status word, got \(bytes.count) bytes")
        }
        data = Array(bytes[..<(bytes.count - 2)])
        statusWord = StatusWord(sw1: bytes[bytes.count - 2], sw2: bytes[bytes.count - 1])
    }

    public var bytes: [UInt8] { data + [statusWord.sw1, statusWord.sw2] }
    public var isSuccess: Bool { statusWord.isSuccess }

    public var description: String { "R-APDU \(data.count) bytes, \(statusWord)" }
}

/// Lower-case hex of `bytes`, for diagnostics.
public func hex<C: Collection>(_ bytes: C, separator: String = "") -> String where C.Element == UInt8 {
    let digits = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * (2 + separator.utf8.count))
    var first = true
    for byte in bytes {
        if !first { out += separator.utf8 }
        first = false
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Bytes from a hex string (spaces, colons and line breaks are ignored); `nil` when invalid.
public func bytes(hex text: String) -> [UInt8]? {
    func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
    let digits = text.utf8.filter { ![UInt8(ascii: " "), UInt8(ascii: ":"), 0x0A, 0x0D, 0x09].contains($0) }
    guard digits.count.isMultiple(of: 2) else { return nil }
    var result: [UInt8] = []
    result.reserveCapacity(digits.count / 2)
    var index = 0
    while index < digits.count {
        guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
        result.append(high << 4 | low)
        index += 2
    }
    return result
}
