import Mdoc
import SmartCardCore

/// Data retrieval over NFC (ISO 18013-5 §8.3.3.1.2): messages wrapped in a BER-TLV data object
/// '53', sent with ENVELOPE (INS C3) — command chaining (CLA 10) for all but the last chunk — and
/// the answer collected through 61XX / GET RESPONSE. Every loop is bounded: by the bytes this
/// reader takes, by APDUs that must each bring data, and by the read's deadline.
public struct EnvelopeTransport {
    static let application: [UInt8] = [0xA0, 0x00, 0x00, 0x02, 0x48, 0x04, 0x00]

    let channel: HolderChannel
    /// The largest command data field: the holder's and the reader's.
    let commandLength: Int
    /// The largest response data field asked for in Le.
    let responseLength: Int
    /// The largest message accepted from the holder.
    let maximumMessage: Int

    /// The response data asked for when the reader does not say what it takes: below 64 KiB, so
    /// the answer, its status word and a driver's framing fit the buffers PC/SC drivers have.
    static let defaultExtendedResponse = 0xFF00

    init(channel: HolderChannel, holderCommandLength: Int, holderResponseLength: Int, maximumMessage: Int, readerDataLimit: Int? = nil) {
        self.channel = channel
        let readerLimit = readerDataLimit.map { max(256, $0) }
        commandLength = min(holderCommandLength, channel.extendedLength ? min(65_535, readerLimit ?? 65_535) : 255)
        responseLength = min(holderResponseLength, channel.extendedLength ? min(65_536, readerLimit ?? Self.defaultExtendedResponse) : 256)
        self.maximumMessage = maximumMessage
    }

    func selectApplication() async throws(MdocError) {
        let response = try await channel.send(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x0C, data: Self.application), "SELECT mdoc data transfer")
        guard response.statusWord.isSuccess else {
            throw MdocError(.noDocument, "the holder has no mdoc NFC data transfer application (SELECT A0000002480400: \(response.statusWord))")
        }
    }

    /// Sends one message and returns the holder's answer (empty when it answers with no data).
    func exchange(_ message: [UInt8]) async throws(MdocError) -> [UInt8] {
        let wrapped = Self.wrap(message)
        var offset = 0
        var response: ResponseAPDU?
        while offset < wrapped.count {
            let part = Array(wrapped[offset..<min(wrapped.count, offset + commandLength)])
            offset += part.count
            let last = offset == wrapped.count
            let command = CommandAPDU(cla: last ? 0x00 : 0x10, ins: 0xC3, p1: 0, p2: 0, data: part, ne: last ? responseLength : nil)
            let answer = try await channel.send(command, "ENVELOPE")
            if !last {
                guard answer.statusWord.isSuccess, answer.data.isEmpty else {
                    throw MdocError(.transport, "the holder answered a chained ENVELOPE with \(answer.statusWord)")
                }
            }
            response = answer
        }
        guard var answer = response else { throw MdocError(.transport, "nothing was sent") }
        var collected = answer.data
        var asked = responseLength
        while answer.statusWord.sw1 == 0x61 {
            // ISO 18013-5: while more remains, the holder fills Le. Fewer bytes is a holder that
            // would drip its answer out one APDU at a time.
            guard answer.data.count >= asked else {
                throw MdocError(.transport, "the holder sent \(answer.data.count) of the \(asked) bytes asked for and announces more (61XX)")
            }
            guard collected.count <= maximumMessage + 8 else {
                throw MdocError(.limitExceeded, "the holder's answer passes \(maximumMessage) bytes and it still has more (61XX)")
            }
            asked = answer.statusWord.sw2 == 0 ? responseLength : Int(answer.statusWord.sw2)
            answer = try await channel.send(CommandAPDU(ins: 0xC0, p1: 0, p2: 0, ne: asked), "GET RESPONSE")
            guard answer.data.count <= asked else { throw MdocError(.transport, "GET RESPONSE brought \(answer.data.count) bytes, \(asked) were asked for") }
            collected += answer.data
        }
        guard answer.statusWord.isSuccess else { throw MdocError(.transport, "the holder answered ENVELOPE/GET RESPONSE with \(answer.statusWord)") }
        guard collected.count <= maximumMessage + 8 else { throw MdocError(.limitExceeded, "the holder's answer is \(collected.count) bytes, more than \(maximumMessage)") }
        if collected.isEmpty { return [] }
        return try Self.unwrap(collected)
    }

    /// `53 ‖ BER length ‖ message`.
    public static func wrap(_ message: [UInt8]) -> [UInt8] {
        let length = message.count
        let lengthBytes: [UInt8]
        switch length {
        case 0..<0x80: lengthBytes = [UInt8(length)]
        case 0x80...0xFF: lengthBytes = [0x81, UInt8(length)]
        case 0x100...0xFFFF: lengthBytes = [0x82, UInt8(length >> 8), UInt8(length & 0xFF)]
        case 0x1_0000...0xFF_FFFF: lengthBytes = [0x83, UInt8(length >> 16), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        default: lengthBytes = [0x84, UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        }
        return [0x53] + lengthBytes + message
    }

    /// The content of a '53' data object filling `bytes` exactly.
    public static func unwrap(_ bytes: [UInt8]) throws(MdocError) -> [UInt8] {
        guard bytes.count >= 2, bytes[0] == 0x53 else { throw MdocError(.transport, "the holder's answer is not a '53' data object") }
        var index = 1
        var length = Int(bytes[1])
        index = 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...4).contains(count), bytes.count >= 2 + count else { throw MdocError(.transport, "a malformed length in the '53' data object") }
            length = bytes[2..<(2 + count)].reduce(0) { $0 << 8 | Int($1) }
            index = 2 + count
        }
        guard length == bytes.count - index else {
            throw MdocError(.transport, "the '53' data object announces \(length) bytes and carries \(bytes.count - index)")
        }
        return Array(bytes[index...])
    }
}
