import SmartCardCore

/// DG3 (fingerprints) or DG4 (irises): ICAO 9303-10 biometric information templates (7F61 with
/// 7F60 templates: a header A1 and a biometric data block 5F2E), each block an ISO/IEC 19794-4
/// finger image record (`FIR`) or 19794-6 iris image record (`IIR`), or an ISO/IEC 39794-4/-6
/// data block in its tagged binary encoding (`ISO39794Record`). Other records are kept as they
/// are and named in `unparsed`.
public struct BiometricDataGroup: Sendable, Hashable {
    public var images: [BiometricImage]
    /// Biometric data blocks this parser cannot read, with the reason; and, once, what was left
    /// unread past the bounds.
    public var unparsed: [String]

    /// What one data group may make the reader build: real documents carry at most ten fingers
    /// (DG3) and two irises (DG4), each in a template of its own. Past these the rest is left
    /// unread — counted, not parsed — and said once in `unparsed`: a 3.6 MB DG4 of 327,675 empty
    /// iris records took 485 MB and printed 114 MB of JSON (issue 42).
    public static let maxTemplates = 16
    public static let maxImages = 16

    /// Parses DG3 (tag 63) or DG4 (tag 76).
    public init(bytes: [UInt8]) throws(BiometricError) {
        let outer: TLV
        do {
            outer = try BERTLV.parseSingle(bytes)
        } catch {
            throw BiometricError(field: "data group", "not one BER-TLV object: \(error.reason)")
        }
        guard outer.tag == 0x63 || outer.tag == 0x76 else {
            throw BiometricError(field: "data group", "tag \(BERTLV.tagString(outer.tag)) is neither DG3 (63) nor DG4 (76)")
        }
        let group = try Self.children(outer).first { $0.tag == 0x7F61 }
        guard let group else { throw BiometricError(field: "biometric information group", "no 7F61 template") }
        images = []
        unparsed = []
        var budget = ImageBudget(remaining: Self.maxImages)
        var templates = 0, templatesUnread = 0
        // The templates one at a time: past the bound only their headers are looked at.
        var offset = 0
        let value = group.value
        while offset < value.count {
            if templates >= Self.maxTemplates {
                guard let header = try? BERTLV.header(value[offset...]), let total = header.totalLength, total > 0,
                      total <= value.count - offset else { break }
                offset += total
                templatesUnread += 1
                continue
            }
            let template: TLV
            do {
                let (tlv, consumed) = try BERTLV.parseOne(value[offset...])
                template = tlv
                offset += consumed
            } catch {
                throw BiometricError(field: "biometric template 7F61", "not a list of data objects: \(error.reason)")
            }
            guard template.tag == 0x7F60 else { continue }
            templates += 1
            let parts = try Self.children(template)
            guard let block = parts.first(where: { $0.tag == 0x5F2E || $0.tag == 0x7F2E }) else {
                unparsed.append("a biometric information template without a data block")
                continue
            }
            do {
                switch Array(block.value.prefix(4)) {
                case Array("FIR".utf8) + [0]: images += try FingerImageRecord.images(block.value, budget: &budget)
                case Array("IIR".utf8) + [0]: images += try IrisImageRecord.images(block.value, budget: &budget)
                default:
                    guard ISO39794Record.isRecord(block.value) else {
                        unparsed.append("a \(block.value.count)-byte record that is neither ISO/IEC 19794-4/-6 nor 39794-4/-6")
                        continue
                    }
                    images += try ISO39794Record.images(block.value, budget: &budget)
                }
            } catch {
                unparsed.append(error.description)
            }
        }
        if templatesUnread > 0 {
            unparsed.append("\(templates + templatesUnread) biometric templates: the first \(Self.maxTemplates) are read "
                            + "(a document carries at most 10 fingers and 2 irises)")
        }
        if budget.unread > 0 {
            unparsed.append("\(Self.maxImages + budget.unread) biometric images announced: the first \(Self.maxImages) are read "
                            + "(a document carries at most 10 fingers and 2 irises)")
        }
        // Bounded too: at most a few reasons of any kind, then their count.
        if unparsed.count > 4 { unparsed = Array(unparsed.prefix(3)) + ["and \(unparsed.count - 3) more"] }
    }

    static func children(_ tlv: TLV) throws(BiometricError) -> [TLV] {
        do {
            return try tlv.children()
        } catch {
            throw BiometricError(field: "biometric template \(BERTLV.tagString(tlv.tag))", "not a list of data objects: \(error.reason)")
        }
    }
}

/// Why a biometric data group or record could not be read; `field` names the part.
public struct BiometricError: Error, Sendable, Hashable, CustomStringConvertible {
    public let field: String
    public let reason: String

    public init(field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { "\(field): \(reason)" }
}

/// How many more images a data group may yield; what was announced past it is counted only.
struct ImageBudget {
    var remaining: Int
    var unread = 0

    /// Whether one more image may be built (counting it as unread when not).
    mutating func take() -> Bool {
        guard remaining > 0 else { unread += 1; return false }
        remaining -= 1
        return true
    }
}

/// Big-endian fields of a record, bounds-checked.
struct RecordReader {
    let bytes: [UInt8]
    var offset = 0
    let record: String

    init(_ bytes: [UInt8], record: String) {
        self.bytes = bytes
        self.record = record
    }

    mutating func number(_ count: Int, _ field: String) throws(BiometricError) -> Int {
        guard offset + count <= bytes.count else { throw BiometricError(field: "\(record) \(field)", "the record ends early (byte \(offset))") }
        let value = bytes[offset..<(offset + count)].reduce(0) { $0 << 8 | Int($1) }
        offset += count
        return value
    }

    /// Moves past `count` bytes without copying them.
    mutating func skip(_ count: Int, _ field: String) throws(BiometricError) {
        guard count >= 0, offset + count <= bytes.count else {
            throw BiometricError(field: "\(record) \(field)", "\(count) bytes announced, \(bytes.count - offset) left")
        }
        offset += count
    }

    mutating func take(_ count: Int, _ field: String) throws(BiometricError) -> [UInt8] {
        guard count >= 0, offset + count <= bytes.count else {
            throw BiometricError(field: "\(record) \(field)", "\(count) bytes announced, \(bytes.count - offset) left")
        }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }
}

/// ISO/IEC 19794-4:2005 finger image record: a 32-byte general header, then finger views.
enum FingerImageRecord {
    static func images(_ bytes: [UInt8], budget: inout ImageBudget) throws(BiometricError) -> [BiometricImage] {
        var reader = RecordReader(bytes, record: "finger record")
        _ = try reader.take(8, "format and version")
        let length = try reader.number(6, "length")
        guard length <= bytes.count else { throw BiometricError(field: "finger record length", "\(length) bytes announced, \(bytes.count) there") }
        _ = try reader.number(2, "capture device")
        _ = try reader.number(2, "acquisition level")
        let count = try reader.number(1, "number of fingers")
        _ = try reader.number(1, "scale units")
        _ = try reader.take(8, "resolutions")
        _ = try reader.number(1, "pixel depth")
        let compression = try reader.number(1, "compression")
        _ = try reader.number(2, "reserved")
        let format = BiometricImage.fingerFormat(UInt8(truncatingIfNeeded: compression))
        var images: [BiometricImage] = []
        for _ in 0..<count where reader.offset < length {
            let blockLength = try reader.number(4, "finger data block length")
            guard blockLength >= 14 else { throw BiometricError(field: "finger data block length", "\(blockLength) is shorter than its header") }
            let position = try reader.number(1, "finger position")
            _ = try reader.number(1, "view count")
            _ = try reader.number(1, "view number")
            let quality = try reader.number(1, "quality")
            _ = try reader.number(1, "impression type")
            let width = try reader.number(2, "horizontal line length")
            let height = try reader.number(2, "vertical line length")
            _ = try reader.number(1, "reserved")
            guard budget.take() else {
                try reader.skip(blockLength - 14, "image data")
                continue
            }
            let image = try reader.take(blockLength - 14, "image data")
            images.append(.finger(position: position, format: format, width: width, height: height, quality: quality == 255 ? nil : quality,
                                  data: image))
        }
        return images
    }
}

/// ISO/IEC 19794-6:2005 iris image record: a 45-byte general header, then per eye (subtype) its images.
enum IrisImageRecord {
    static func images(_ bytes: [UInt8], budget: inout ImageBudget) throws(BiometricError) -> [BiometricImage] {
        var reader = RecordReader(bytes, record: "iris record")
        _ = try reader.take(8, "format and version")
        let length = try reader.number(4, "length")
        guard length <= bytes.count else { throw BiometricError(field: "iris record length", "\(length) bytes announced, \(bytes.count) there") }
        _ = try reader.number(2, "capture device")
        let subtypes = try reader.number(1, "number of subtypes")
        let headerLength = try reader.number(2, "header length")
        _ = try reader.number(2, "image properties")
        _ = try reader.number(2, "iris diameter")
        let imageFormat = try reader.number(2, "image format")
        let width = try reader.number(2, "width")
        let height = try reader.number(2, "height")
        reader.offset = max(reader.offset, headerLength)
        guard headerLength >= 29, headerLength <= length else {
            throw BiometricError(field: "iris record header length", "\(headerLength) is not a 19794-6 header length")
        }
        let format = BiometricImage.irisFormat(imageFormat)
        var images: [BiometricImage] = []
        for _ in 0..<subtypes where reader.offset < length {
            let subtype = try reader.number(1, "subtype")
            let count = try reader.number(2, "number of images")
            for _ in 0..<count {
                _ = try reader.number(2, "image number")
                let quality = try reader.number(1, "quality")
                _ = try reader.number(4, "rotation")
                let imageLength = try reader.number(4, "image length")
                guard budget.take() else {
                    try reader.skip(imageLength, "image data")
                    continue
                }
                let image = try reader.take(imageLength, "image data")
                images.append(.iris(eye: subtype, format: format, width: width, height: height,
                                    quality: quality == 255 || quality == 254 ? nil : quality, data: image))
            }
        }
        return images
    }
}
