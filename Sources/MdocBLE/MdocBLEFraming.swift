import Mdoc

/// ISO 18013-5 §8.3.3.1.1.6: a message (SessionEstablishment, SessionData) is cut into pieces
/// that each fit one ATT write or notification (the ATT MTU less 3 bytes of ATT header, and never
/// more than an attribute value's 512 bytes), each piece led by one byte: `0x01` more pieces
/// follow, `0x00` the last.
public enum MdocBLEFraming {
    /// The ATT MTU every LE link has before negotiation.
    public static let minimumMTU = 23
    /// The largest ATT MTU (Bluetooth Core 5.x: an attribute value is at most 512 bytes).
    public static let maximumMTU = 517
    /// Bluetooth Core Vol 3 Part F §3.2.9: an attribute value is at most 512 bytes. At an MTU of
    /// 516 or 517 a write or notification could carry more, but BlueZ cuts the value to 512 (on
    /// a real link the 2 bytes over vanish from every piece: found against bluetoothd in the VM).
    public static let maximumValue = 512

    /// What a GATT client writes at most in one piece. BlueZ 5.66 as GATT server hands its
    /// application write commands of at most 510 bytes: 511 and 512 reached bluetoothd's ATT
    /// server (its log says so) and never the application (measured in the BLE VM at an MTU of
    /// 517). A phone's BlueZ-free stack may take more; 510 costs nothing but a piece in 70.
    public static let maximumWrite = 510

    /// The bytes one piece (lead byte included) may have on a link whose ATT MTU is `mtu`:
    /// notifications up to an attribute value's 512, writes up to `maximumWrite`.
    public static func pieceSize(mtu: Int, write: Bool = false) -> Int {
        min(min(max(mtu, minimumMTU), maximumMTU) - 3, write ? maximumWrite : maximumValue)
    }

    /// `message` in pieces for a link whose ATT MTU is `mtu` (clamped to 23…517; a piece at most
    /// 512 bytes as a notification, 510 as a write).
    public static func fragments(_ message: [UInt8], mtu: Int, write: Bool = false) -> [[UInt8]] {
        let payload = pieceSize(mtu: mtu, write: write) - 1
        guard !message.isEmpty else { return [[0x00]] }
        var pieces: [[UInt8]] = []
        var start = 0
        while start < message.count {
            let end = min(start + payload, message.count)
            pieces.append([end == message.count ? 0x00 : 0x01] + message[start..<end])
            start = end
        }
        return pieces
    }
}

/// Puts a peer's pieces back together, bounded: a message larger than `maximumBytes`, more than
/// `maximumPieces` pieces, an empty piece or an unknown lead byte is refused — a peer that streams
/// forever is hostile, and its cost stops at the limit.
public struct MdocBLEAssembler: Sendable {
    public let maximumBytes: Int
    public let maximumPieces: Int
    private var buffer: [UInt8] = []
    private var pieces = 0

    public init(maximumBytes: Int, maximumPieces: Int? = nil) {
        self.maximumBytes = maximumBytes
        // Even at the smallest MTU (19 bytes a piece) a message within maximumBytes fits.
        self.maximumPieces = maximumPieces ?? (maximumBytes / (MdocBLEFraming.minimumMTU - 4) + 2)
    }

    /// Bytes held for a message not yet complete.
    public var pending: Int { buffer.count }

    /// Takes one piece; returns the message when it was the last.
    public mutating func take(_ piece: [UInt8]) throws(MdocError) -> [UInt8]? {
        guard let lead = piece.first else { throw MdocError(.bleTransport, "the BLE peer sent an empty piece (no 0x00/0x01 lead byte)") }
        guard lead == 0x00 || lead == 0x01 else {
            throw MdocError(.bleTransport, "the BLE peer sent a piece led by 0x\(String(lead, radix: 16)) (ISO 18013-5 allows 0x00 and 0x01)")
        }
        pieces += 1
        guard pieces <= maximumPieces else {
            throw MdocError(.limitExceeded, "the BLE peer's message runs past \(maximumPieces) pieces")
        }
        guard buffer.count + piece.count - 1 <= maximumBytes else {
            throw MdocError(.limitExceeded, "the BLE peer's message runs past \(maximumBytes) bytes")
        }
        buffer += piece.dropFirst()
        guard lead == 0x00 else { return nil }
        defer {
            buffer = []
            pieces = 0
        }
        guard !buffer.isEmpty else { throw MdocError(.bleTransport, "the BLE peer sent an empty message") }
        return buffer
    }
}
