import Mdoc

/// An NDEF record (NFC Forum NDEF 1.0): type name format, type, identifier, payload.
public struct NDEFRecord: Sendable, Hashable {
    public enum TypeNameFormat: UInt8, Sendable {
        case empty = 0, wellKnown = 1, media = 2, absoluteURI = 3, external = 4, unknown = 5, unchanged = 6
    }

    public var format: TypeNameFormat
    public var type: [UInt8]
    public var identifier: [UInt8]
    public var payload: [UInt8]

    public init(format: TypeNameFormat, type: String, identifier: String = "", payload: [UInt8]) {
        self.format = format
        self.type = Array(type.utf8)
        self.identifier = Array(identifier.utf8)
        self.payload = payload
    }

    init(format: TypeNameFormat, typeBytes: [UInt8], identifierBytes: [UInt8], payload: [UInt8]) {
        self.format = format
        type = typeBytes
        identifier = identifierBytes
        self.payload = payload
    }

    public var typeName: String { String(decoding: type, as: UTF8.self) }
    public var identifierName: String { String(decoding: identifier, as: UTF8.self) }

    public func isType(_ format: TypeNameFormat, _ name: String) -> Bool { self.format == format && type == Array(name.utf8) }
}

/// What reading one NDEF message may cost.
public struct NDEFLimits: Sendable, Hashable {
    public var maximumBytes: Int
    public var maximumRecords: Int
    /// How deep Handover messages may embed messages (Hs/Hr payloads hold one).
    public var maximumNesting: Int

    public init(maximumBytes: Int = 16 << 10, maximumRecords: Int = 32, maximumNesting: Int = 2) {
        self.maximumBytes = maximumBytes
        self.maximumRecords = maximumRecords
        self.maximumNesting = maximumNesting
    }
}

/// An NDEF message: records, the first with MB, the last with ME; chunked records are refused
/// (ISO 18013-5 engagement never chunks).
public struct NDEFMessage: Sendable, Hashable {
    public var records: [NDEFRecord]

    public init(records: [NDEFRecord]) { self.records = records }

    public init(bytes: [UInt8], limits: NDEFLimits = NDEFLimits()) throws(MdocError) {
        guard !bytes.isEmpty else { throw MdocError(.engagement, "an empty NDEF message") }
        guard bytes.count <= limits.maximumBytes else { throw MdocError(.limitExceeded, "an NDEF message of \(bytes.count) bytes, more than \(limits.maximumBytes)") }
        var records: [NDEFRecord] = []
        var index = 0
        func take(_ count: Int, _ what: String) throws(MdocError) -> ArraySlice<UInt8> {
            guard count <= bytes.count - index else { throw MdocError(.engagement, "the NDEF message ends inside a record's \(what)") }
            defer { index += count }
            return bytes[index..<(index + count)]
        }
        while index < bytes.count {
            guard records.count < limits.maximumRecords else { throw MdocError(.limitExceeded, "more than \(limits.maximumRecords) NDEF records") }
            let header = try take(1, "header")[index - 1]
            let begin = header & 0x80 != 0, end = header & 0x40 != 0, chunked = header & 0x20 != 0
            let short = header & 0x10 != 0, hasIdentifier = header & 0x08 != 0
            guard let format = NDEFRecord.TypeNameFormat(rawValue: header & 0x07) else { throw MdocError(.engagement, "reserved NDEF type name format 7") }
            guard begin == records.isEmpty else { throw MdocError(.engagement, "NDEF record \(records.count + 1) has the message-begin flag \(begin ? "set" : "clear")") }
            guard !chunked, format != .unchanged else { throw MdocError(.engagement, "a chunked NDEF record (not used by ISO 18013-5)") }
            let typeLength = Int(try take(1, "type length")[index - 1])
            let payloadLength = short ? Int(try take(1, "payload length")[index - 1])
                : try take(4, "payload length").reduce(0) { $0 << 8 | Int($1) }
            let identifierLength = hasIdentifier ? Int(try take(1, "identifier length")[index - 1]) : 0
            let type = Array(try take(typeLength, "type"))
            let identifier = Array(try take(identifierLength, "identifier"))
            guard payloadLength <= bytes.count - index else {
                throw MdocError(.engagement, "an NDEF record announces \(payloadLength) payload bytes, \(bytes.count - index) are left")
            }
            let payload = Array(try take(payloadLength, "payload"))
            if format == .empty, !(type.isEmpty && identifier.isEmpty && payload.isEmpty) { throw MdocError(.engagement, "an empty NDEF record with content") }
            records.append(NDEFRecord(format: format, typeBytes: type, identifierBytes: identifier, payload: payload))
            if end {
                guard index == bytes.count else { throw MdocError(.engagement, "\(bytes.count - index) bytes after the NDEF message's last record") }
                break
            }
            guard index < bytes.count else { throw MdocError(.engagement, "the NDEF message ends without a message-end flag") }
        }
        self.records = records
    }

    public var encoded: [UInt8] {
        var out: [UInt8] = []
        for (index, record) in records.enumerated() {
            var header = record.format.rawValue
            if index == 0 { header |= 0x80 }
            if index == records.count - 1 { header |= 0x40 }
            let short = record.payload.count < 256
            if short { header |= 0x10 }
            if !record.identifier.isEmpty { header |= 0x08 }
            out.append(header)
            out.append(UInt8(record.type.count))
            if short {
                out.append(UInt8(record.payload.count))
            } else {
                let length = UInt32(record.payload.count)
                out += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            }
            if !record.identifier.isEmpty { out.append(UInt8(record.identifier.count)) }
            out += record.type + record.identifier + record.payload
        }
        return out
    }

    public func first(_ format: NDEFRecord.TypeNameFormat, _ type: String) -> NDEFRecord? { records.first { $0.isType(format, type) } }
}
