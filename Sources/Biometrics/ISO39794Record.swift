import SmartCardCore

/// ISO/IEC 39794-4 finger image and 39794-6 iris image data blocks in their tagged binary (DER)
/// encoding, as documents of ICAO 9303's 8th edition put them in DG3/DG4 instead of the 19794
/// records:
///
///     FingerImageDataBlock ::= [APPLICATION 4] SEQUENCE { versionBlock [0], representationBlocks [1] SEQUENCE OF
///         SEQUENCE { position [0], impression [1], imageDataFormat [2], imageData [3] OCTET STRING, … } }
///     IrisImageDataBlock ::= [APPLICATION 6] SEQUENCE { versionBlock [0], representationBlocks [1] SEQUENCE OF
///         SEQUENCE { eyeLabel [0] INTEGER, imageKind [1], bitDepth [2], imageDataFormat [3], …, irisImageData [9] OCTET STRING, … } }
///
/// Codes are written either as the INTEGER itself or as a choice whose `[0]` is the code (the
/// other branch an extension block); both are read. The image sizes are not in these records:
/// they are taken from the image's own header (PNG, JPEG 2000, WSQ, PGM).
enum ISO39794Record {
    /// The APPLICATION tags of the two data blocks (constructed): 64 finger, 66 iris.
    static let fingerTag: UInt32 = 0x64
    static let irisTag: UInt32 = 0x66

    static func isRecord(_ bytes: [UInt8]) -> Bool { bytes.first.map { UInt32($0) == fingerTag || UInt32($0) == irisTag } ?? false }

    static func images(_ bytes: [UInt8], budget: inout ImageBudget) throws(BiometricError) -> [BiometricImage] {
        let outer: TLV
        do {
            outer = try BERTLV.parseSingle(bytes)
        } catch {
            throw BiometricError(field: "ISO/IEC 39794 record", "not one DER object: \(error.reason)")
        }
        let finger = outer.tag == fingerTag
        let record = finger ? "ISO/IEC 39794-4 record" : "ISO/IEC 39794-6 record"
        guard finger || outer.tag == irisTag else {
            throw BiometricError(field: "ISO/IEC 39794 record", "tag \(BERTLV.tagString(outer.tag)) is neither a finger (64) nor an iris (66) data block")
        }
        let fields = try fieldsByNumber(outer, record)
        guard let blocks = fields[1] else { throw BiometricError(field: "\(record) representation blocks", "missing ([1])") }
        // A SEQUENCE OF representation blocks, or one block's fields directly.
        let children = try BiometricDataGroup.children(blocks)
        let representations = children.allSatisfy({ $0.tag == 0x30 }) && !children.isEmpty ? children : [blocks]
        var images: [BiometricImage] = []
        for (index, representation) in representations.enumerated() {
            guard budget.take() else { continue }
            let name = "\(record) representation \(index + 1)"
            let block = try fieldsByNumber(representation, name)
            images.append(finger ? try fingerImage(block, name) : try irisImage(block, name))
        }
        return images
    }

    private static func fingerImage(_ block: [UInt32: TLV], _ name: String) throws(BiometricError) -> BiometricImage {
        let position = try code(block[0], "\(name) position")
        let formatCode = try code(block[2], "\(name) image data format")
        guard let data = block[3]?.value, !data.isEmpty else { throw BiometricError(field: "\(name) image data", "missing ([3])") }
        let format: (name: String, mime: String?)
        switch formatCode {
        case 0: format = ("PGM", nil)
        case 1: format = ("WSQ", nil)
        case 2, 3: format = ("JPEG 2000", "image/jp2")
        case 4: format = ("PNG", "image/png")
        default: format = ("unknown", nil)
        }
        let (width, height) = ImageHeader.size(data)
        return .finger(position: position, format: format, width: width, height: height, quality: nil, data: data)
    }

    private static func irisImage(_ block: [UInt32: TLV], _ name: String) throws(BiometricError) -> BiometricImage {
        let eye = try code(block[0], "\(name) eye label")
        let formatCode = try code(block[3], "\(name) image data format")
        guard let data = block[9]?.value, !data.isEmpty else { throw BiometricError(field: "\(name) iris image data", "missing ([9])") }
        let format: (name: String, mime: String?)
        switch formatCode {
        case 0: format = ("PGM", nil)
        case 1: format = ("PPM", nil)
        case 2: format = ("PNG", "image/png")
        case 3, 4: format = ("JPEG 2000", "image/jp2")
        default: format = ("unknown", nil)
        }
        let (width, height) = ImageHeader.size(data)
        return .iris(eye: eye, format: format, width: width, height: height, quality: nil, data: data)
    }

    /// The context-specific fields of a SEQUENCE by tag number ([0] … [30]).
    private static func fieldsByNumber(_ tlv: TLV, _ name: String) throws(BiometricError) -> [UInt32: TLV] {
        var fields: [UInt32: TLV] = [:]
        for child in try BiometricDataGroup.children(tlv) where child.tag & 0xC0 == 0x80 && child.tag <= 0xBE {
            let number = child.tag & 0x1F
            guard fields[number] == nil else { throw BiometricError(field: name, "field [\(number)] twice") }
            fields[number] = child
        }
        return fields
    }

    /// A code: `[n] INTEGER`, or `[n] { [0] INTEGER }` (the choice of a code or an extension block).
    private static func code(_ tlv: TLV?, _ field: String) throws(BiometricError) -> Int {
        guard let tlv else { throw BiometricError(field: field, "missing") }
        var value = tlv.value
        if tlv.tag & 0x20 != 0 {
            guard let first = try BiometricDataGroup.children(tlv).first else { throw BiometricError(field: field, "an empty choice") }
            guard first.tag == 0x80 || first.tag == 0x02 else {
                throw BiometricError(field: field, "an extension block (\(BERTLV.tagString(first.tag))), not a code this reader knows")
            }
            value = first.value
        }
        guard (1...4).contains(value.count) else { throw BiometricError(field: field, "an INTEGER of \(value.count) bytes") }
        return value.reduce(0) { $0 << 8 | Int($1) }
    }
}

/// The width and height an image's own header states (0 × 0 when it cannot be told): PNG's IHDR,
/// JPEG 2000's image header box or codestream SIZ marker, WSQ's frame header, PGM's text header.
enum ImageHeader {
    static func size(_ data: [UInt8]) -> (width: Int, height: Int) {
        func number(_ at: Int, _ count: Int) -> Int? {
            guard at >= 0, at + count <= data.count else { return nil }
            return data[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) }
        }
        func find(_ pattern: [UInt8]) -> Int? {
            guard data.count >= pattern.count else { return nil }
            for index in 0...(data.count - pattern.count) where data[index] == pattern[0] && Array(data[index..<(index + pattern.count)]) == pattern {
                return index
            }
            return nil
        }
        // PNG: signature, then IHDR with width and height.
        if data.starts(with: [0x89, 0x50, 0x4E, 0x47]), let width = number(16, 4), let height = number(20, 4) { return (width, height) }
        // JPEG 2000 file: the ihdr box (height, width); a bare codestream: SIZ (Xsiz − XOsiz, Ysiz − YOsiz).
        if let box = find(Array("ihdr".utf8)), let height = number(box + 4, 4), let width = number(box + 8, 4) { return (width, height) }
        if data.starts(with: [0xFF, 0x4F]), let siz = find([0xFF, 0x51]), let x = number(siz + 6, 4), let y = number(siz + 10, 4),
           let x0 = number(siz + 14, 4), let y0 = number(siz + 18, 4), x >= x0, y >= y0 {
            return (x - x0, y - y0)
        }
        // WSQ: SOI FFA0, then the frame header FFA2: length, black, white, height, width.
        if data.starts(with: [0xFF, 0xA0]), let frame = find([0xFF, 0xA2]), let height = number(frame + 6, 2), let width = number(frame + 8, 2) {
            return (width, height)
        }
        // PGM / PPM (binary): "P5" or "P6", whitespace, width, height.
        if data.count > 3, data[0] == UInt8(ascii: "P"), data[1] == UInt8(ascii: "5") || data[1] == UInt8(ascii: "6") {
            let header = String(decoding: data.prefix(64), as: UTF8.self)
            let words = header.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }).prefix(3)
            if words.count == 3, let width = Int(words[1]), let height = Int(words[2]) { return (width, height) }
        }
        return (0, 0)
    }
}
