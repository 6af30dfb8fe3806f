/// How long an APDU exchange takes on a real contactless link: the bytes on air at an ISO/IEC
/// 14443 bit rate plus the chip's own time per command. An estimate for rigs and the bench —
/// a real chip's time varies with its crypto, the reader and the field — with every assumption
/// spelled out:
///
/// - One bit lasts 128/fc at 106 kbit/s (fc = 13.56 MHz), half that at 212, a quarter at 424, an
///   eighth at 848 (ISO/IEC 14443-2).
/// - A byte costs 9 bits on air (8 data bits plus a parity bit in type A; type B's start and stop
///   bits cost about the same), a frame 2 more (start and end of frame).
/// - An APDU travels in ISO/IEC 14443-4 I-blocks of at most `frameSize` bytes, each with a
///   one-byte prologue and a two-byte CRC; a longer APDU is chained, each chained block answered
///   by a 3-byte R(ACK).
/// - Every frame is followed by the frame delay time before the other side answers (1172/fc, the
///   minimum of ISO/IEC 14443-3), to which the chip adds `chipTime` per command.
public struct ContactlessTiming: Sendable, Hashable, CustomStringConvertible {
    /// The bit rate in kbit/s: 106, 212, 424 or 848.
    public var bitRate: Int
    /// The chip's processing time per command (a real chip needs a few ms for a READ BINARY and
    /// tens to hundreds of ms for a key agreement; one figure stands for all).
    public var chipTime: Duration
    /// The largest frame either side accepts (FSD/FSC), 16 to 4096 (ISO/IEC 14443-4 default 256).
    public var frameSize: Int

    public static let bitRates = [106, 212, 424, 848]
    static let carrierHz = 13_560_000.0

    public init(bitRate: Int = 106, chipTime: Duration = .zero, frameSize: Int = 256) {
        self.bitRate = bitRate
        self.chipTime = chipTime
        self.frameSize = frameSize
    }

    /// Checks the settings, with a message naming what is wrong.
    public func validate() throws(EmulatorError) {
        guard Self.bitRates.contains(bitRate) else {
            throw EmulatorError("the bit rate must be one of \(Self.bitRates.map(String.init).joined(separator: ", ")) kbit/s, not \(bitRate)")
        }
        guard chipTime >= .zero, chipTime <= .seconds(60) else { throw EmulatorError("the chip time per APDU must be between 0 and 60 s") }
        guard (16...4096).contains(frameSize) else { throw EmulatorError("the frame size must be between 16 and 4096 bytes") }
    }

    /// The time on air, in seconds, of one APDU of `bytes` bytes, its R(ACK)s and frame delays.
    func airTime(bytes: Int) -> Double {
        let bit = 128.0 / Self.carrierHz * 106.0 / Double(bitRate)
        let frameDelay = 1172.0 / Self.carrierHz
        let payload = frameSize - 3
        let frames = max(1, (bytes + payload - 1) / payload)
        let blockBits = Double((bytes + 3 * frames) * 9 + 2 * frames)
        let acknowledgements = Double(frames - 1) * (Double(3 * 9 + 2) * bit + frameDelay)
        return blockBits * bit + Double(frames) * frameDelay + acknowledgements
    }

    /// The modelled time of one exchange: command and response on air plus the chip's time.
    public func exchangeTime(commandBytes: Int, responseBytes: Int) -> Duration {
        let seconds = airTime(bytes: commandBytes) + airTime(bytes: responseBytes)
        return .nanoseconds(Int64((seconds * 1e9).rounded())) + chipTime
    }

    public var description: String {
        "ISO 14443 at \(bitRate) kbit/s, frames of \(frameSize) bytes, \(chipTime.milliseconds) ms per APDU in the chip"
    }
}

extension Duration {
    /// The duration in milliseconds (fractional).
    public var milliseconds: Double {
        Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15
    }
}
