import Mdoc
import SmartCardCore

/// The NFC Forum Type 4 Tag an mdoc presents for engagement (ISO 18013-5 §8.2.2.1): the NDEF
/// application, its capability container and the NDEF file, read in chunks of at most MLe and
/// written in chunks of at most MLc; the NDEF length checked against the file's and our limits.
struct TypeFourTag {
    static let ndefApplication: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]
    static let capabilityContainer: [UInt8] = [0xE1, 0x03]

    let channel: HolderChannel
    let limits: NDEFLimits
    let mappingVersion: UInt8
    let maximumRead: Int
    let maximumWrite: Int
    let fileID: [UInt8]
    let maximumSize: Int
    let writable: Bool

    /// Selects the NDEF application and reads the capability container.
    static func open(_ channel: HolderChannel, limits: NDEFLimits) async throws(MdocError) -> TypeFourTag {
        let select = try await channel.send(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: ndefApplication, ne: 256), "SELECT NDEF application")
        guard select.statusWord.isSuccess else {
            throw MdocError(.noDocument, "no NFC Forum Type 4 Tag answered (SELECT of the NDEF application: \(select.statusWord)): no mdoc is presented")
        }
        _ = try await channel.expectSuccess(CommandAPDU(ins: 0xA4, p1: 0x00, p2: 0x0C, data: capabilityContainer), "SELECT capability container")
        let cc = try await channel.expectSuccess(CommandAPDU(ins: 0xB0, p1: 0, p2: 0, ne: 15), "READ BINARY capability container")
        guard cc.count >= 15 else { throw MdocError(.engagement, "a capability container of \(cc.count) bytes") }
        let version = cc[2]
        let maximumRead = Int(cc[3]) << 8 | Int(cc[4])
        let maximumWrite = Int(cc[5]) << 8 | Int(cc[6])
        guard maximumRead >= 0x0F, maximumWrite >= 0x01 else { throw MdocError(.engagement, "capability container limits MLe \(maximumRead), MLc \(maximumWrite)") }
        let fileID: [UInt8]
        let size: Int
        let writeAccess: UInt8
        switch (cc[7], cc[8]) {
        case (0x04, 0x06):
            fileID = Array(cc[9...10])
            size = Int(cc[11]) << 8 | Int(cc[12])
            writeAccess = cc[14]
        case (0x06, 0x08) where cc.count >= 17:
            fileID = Array(cc[9...10])
            size = cc[11...14].reduce(0) { $0 << 8 | Int($1) }
            writeAccess = cc[16]
        default:
            throw MdocError(.engagement, "the capability container has no NDEF File Control TLV")
        }
        guard size >= 3 else { throw MdocError(.engagement, "an NDEF file of \(size) bytes") }
        return TypeFourTag(channel: channel, limits: limits, mappingVersion: version, maximumRead: maximumRead, maximumWrite: maximumWrite,
                           fileID: fileID, maximumSize: size, writable: writeAccess == 0x00)
    }

    var lengthFieldSize: Int { mappingVersion >= 0x30 && maximumSize > 0xFFFE ? 4 : 2 }

    func selectFile() async throws(MdocError) {
        _ = try await channel.expectSuccess(CommandAPDU(ins: 0xA4, p1: 0x00, p2: 0x0C, data: fileID), "SELECT NDEF file")
    }

    func readBinary(offset: Int, count: Int) async throws(MdocError) -> [UInt8] {
        guard offset <= 0x7FFF else { throw MdocError(.limitExceeded, "an NDEF file read beyond offset 32767") }
        let response = try await channel.send(CommandAPDU(ins: 0xB0, p1: UInt8(offset >> 8), p2: UInt8(offset & 0xFF), ne: count), "READ BINARY NDEF")
        if response.statusWord == StatusWord(sw1: 0x6B, sw2: 0x00) || response.statusWord == StatusWord(sw1: 0x62, sw2: 0x82) {
            throw MdocError(.engagement, "the NDEF file ends at offset \(offset), before the length its length field announced: the length lies")
        }
        guard response.statusWord.isSuccess else { throw MdocError(.transport, "READ BINARY NDEF: the holder answered \(response.statusWord)") }
        let data = response.data
        guard !data.isEmpty, data.count <= count else { throw MdocError(.engagement, "READ BINARY of \(count) bytes answered \(data.count)") }
        return data
    }

    /// The NDEF message's length field.
    func messageLength() async throws(MdocError) -> Int {
        let field = try await readBinary(offset: 0, count: lengthFieldSize)
        guard field.count == lengthFieldSize else { throw MdocError(.engagement, "the NDEF length field is \(field.count) bytes") }
        return field.reduce(0) { $0 << 8 | Int($1) }
    }

    /// The NDEF message (the file already selected).
    func readMessage(length known: Int? = nil) async throws(MdocError) -> [UInt8] {
        let length: Int
        if let known { length = known } else { length = try await messageLength() }
        guard length > 0 else { throw MdocError(.engagement, "the NDEF file is empty") }
        guard length + lengthFieldSize <= maximumSize else {
            throw MdocError(.engagement, "the NDEF length \(length) is beyond the file's size \(maximumSize): the length lies")
        }
        guard length <= limits.maximumBytes else { throw MdocError(.limitExceeded, "an NDEF message of \(length) bytes, more than \(limits.maximumBytes)") }
        let chunk = min(maximumRead, channel.extendedLength ? 0xFFFF : 0xFF)
        var message: [UInt8] = []
        while message.count < length {
            message += try await readBinary(offset: lengthFieldSize + message.count, count: min(chunk, length - message.count))
        }
        return Array(message.prefix(length))
    }

    /// Writes an NDEF message: the length zeroed, the body in chunks, then the length.
    func writeMessage(_ message: [UInt8]) async throws(MdocError) {
        guard writable else { throw MdocError(.engagement, "the NDEF file is read-only: the holder does not offer negotiated handover") }
        guard message.count + lengthFieldSize <= maximumSize, message.count <= 0x7FFF - 2 else {
            throw MdocError(.engagement, "a \(message.count)-byte message does not fit the holder's \(maximumSize)-byte NDEF file")
        }
        let zero = [UInt8](repeating: 0, count: lengthFieldSize)
        _ = try await channel.expectSuccess(CommandAPDU(ins: 0xD6, p1: 0, p2: 0, data: zero), "UPDATE BINARY NDEF length 0")
        let chunk = min(maximumWrite, channel.extendedLength ? 0xFFFF : 0xFF)
        var offset = 0
        while offset < message.count {
            let part = Array(message[offset..<min(message.count, offset + chunk)])
            let at = lengthFieldSize + offset
            _ = try await channel.expectSuccess(CommandAPDU(ins: 0xD6, p1: UInt8(at >> 8), p2: UInt8(at & 0xFF), data: part), "UPDATE BINARY NDEF")
            offset += part.count
        }
        let length = (0..<lengthFieldSize).reversed().map { UInt8(message.count >> (8 * $0) & 0xFF) }
        _ = try await channel.expectSuccess(CommandAPDU(ins: 0xD6, p1: 0, p2: 0, data: length), "UPDATE BINARY NDEF length")
    }
}

/// TNEP (NFC Forum Tag NDEF Exchange Protocol 1.0) single-response exchanges for negotiated handover.
struct TNEPService {
    static let handoverService = "urn:nfc:sn:handover"

    /// Minimum waiting time (ms) and how many extensions the holder may take.
    let waitTime: Duration
    let maximumExtensions: Int
    let maximumMessageSize: Int

    /// The handover service's parameters from the initial NDEF message's Tp records; nil when it has none.
    init?(initialMessage: NDEFMessage) throws(MdocError) {
        for record in initialMessage.records where record.isType(.wellKnown, "Tp") {
            let payload = record.payload
            guard payload.count >= 2, payload[0] == 0x10, payload.count == 2 + Int(payload[1]) + 5 else {
                throw MdocError(.engagement, "a malformed TNEP Service Parameter record")
            }
            let name = String(decoding: payload[2..<(2 + Int(payload[1]))], as: UTF8.self)
            guard name == Self.handoverService else { continue }
            let tail = 2 + Int(payload[1])
            guard payload[tail] == 0x00 else { throw MdocError(.unsupported, "TNEP communication mode \(payload[tail]); only single response is defined") }
            let exponent = Int(min(payload[tail + 1], 63))
            // T_wait = 2^(WT/4 - 1) ms.
            let microseconds = Int((pow2(Double(exponent) / 4 - 1) * 1000).rounded(.up))
            waitTime = .microseconds(max(microseconds, 1))
            maximumExtensions = Int(payload[tail + 2] & 0x0F)
            maximumMessageSize = Int(payload[tail + 3]) << 8 | Int(payload[tail + 4])
            return
        }
        return nil
    }

    /// Writes `message`, then polls the NDEF length until the holder's answer is there: at most
    /// one wait plus its extensions, never past the deadline; our own message read back means "not yet".
    func exchange(_ tag: TypeFourTag, _ message: [UInt8]) async throws(MdocError) -> [UInt8] {
        try await tag.writeMessage(message)
        for attempt in 0...(maximumExtensions + 1) {
            try await tag.channel.pause(waitTime)
            let length = try await tag.messageLength()
            guard length > 0 else { continue }
            let answer = try await tag.readMessage(length: length)
            if answer == message, attempt <= maximumExtensions { continue }
            return answer
        }
        throw MdocError(.engagement, "the holder did not answer the TNEP exchange within its waiting time and \(maximumExtensions) extensions")
    }

    static func serviceSelect() -> [UInt8] {
        NDEFMessage(records: [NDEFRecord(format: .wellKnown, type: "Ts", payload: [UInt8(handoverService.utf8.count)] + Array(handoverService.utf8))]).encoded
    }
}

/// 2^x for the TNEP waiting time (x from −1 to 14.75).
func pow2(_ x: Double) -> Double {
    var result = 1.0
    var whole = Int(x.rounded(.down))
    let fraction = x - Double(whole)
    while whole > 0 { result *= 2; whole -= 1 }
    while whole < 0 { result /= 2; whole += 1 }
    // 2^f for f in [0, 1): the four quarter steps TNEP uses, exactly; others by a short series.
    let quarters: [Double: Double] = [0: 1, 0.25: 1.189207115002721, 0.5: 1.4142135623730951, 0.75: 1.681792830507429]
    if let factor = quarters[fraction] { return result * factor }
    var term = 1.0, sum = 1.0
    for n in 1...12 {
        term *= fraction * 0.6931471805599453 / Double(n)
        sum += term
    }
    return result * sum
}
